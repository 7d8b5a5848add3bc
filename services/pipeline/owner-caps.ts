import { randomBytes } from 'node:crypto';
import { PipelineError } from './errors.ts';
import type { Keys } from './keys.ts';
import type { PipelineRedis } from './redis.ts';

// Per-key caps of API.md (THINKFLOW_MAX_SESSIONS_PER_KEY, _RUNNING_PER_KEY):
// one key cannot hold unbounded sessions (each a workspace volume up to the
// quota) or keep unbounded sandboxes busy. Counted in Redis so every API
// process sees the same figures; each claim is add-then-count, undone when
// over, so concurrent requests can never both take the last slot.

export type OwnerCapLimits = {
  /** open (not deleted) sessions per key */
  maxSessions: number;
  /** pieces of work in progress (running jobs and /commands turns) per key */
  maxRunning: number;
};

/** A claim's longest life when its holder dies without releasing it (a crashed process). */
const DEFAULT_LEASE_MS = 2 * 60 * 60 * 1000;

export class OwnerCaps {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  readonly limits: OwnerCapLimits;

  constructor(redis: PipelineRedis, keys: Keys, limits: OwnerCapLimits) {
    this.#redis = redis;
    this.#keys = keys;
    this.limits = limits;
  }

  /** Takes a session slot before the session exists; `commit(sid)` turns it into the session's, `cancel()` gives it back. */
  async reserveSession(owner: string | null): Promise<{ commit: (sid: string) => Promise<void>; cancel: () => Promise<void> }> {
    if (owner === null) return { commit: async () => {}, cancel: async () => {} };
    const key = this.#keys.ownerSessions(owner);
    const placeholder = `pending:${randomBytes(8).toString('hex')}`;
    const [, count] = await this.#exec(this.#redis.multi().sadd(key, placeholder).scard(key));
    if (Number(count) > this.limits.maxSessions) {
      await this.#redis.srem(key, placeholder);
      throw tooMany('THINKFLOW_MAX_SESSIONS_PER_KEY', this.limits.maxSessions, 'open sessions; delete finished ones with DELETE /v1/sessions/:id');
    }
    return {
      commit: async (sid) => void (await this.#exec(this.#redis.multi().srem(key, placeholder).sadd(key, sid))),
      cancel: async () => void (await this.#redis.srem(key, placeholder)),
    };
  }

  async releaseSession(owner: string | null, sid: string): Promise<void> {
    if (owner !== null) await this.#redis.srem(this.#keys.ownerSessions(owner), sid);
  }

  /**
   * Marks one piece of work (a job, a /commands turn) on the session busy
   * until `release()` or the lease's end; 429 when the key has too many.
   * Each claim is its own member, so one turn ending never frees another's slot.
   */
  async claimRunning(owner: string | null, sid: string, leaseMs = DEFAULT_LEASE_MS): Promise<{ release: () => Promise<void> }> {
    if (owner === null) return { release: async () => {} };
    const key = this.#keys.ownerRunning(owner);
    const member = `${sid}:${randomBytes(6).toString('hex')}`;
    const now = Date.now();
    const [, , count] = await this.#exec(
      this.#redis.multi().zremrangebyscore(key, '-inf', now).zadd(key, now + leaseMs, member).zcard(key),
    );
    if (Number(count) > this.limits.maxRunning) {
      await this.#redis.zrem(key, member);
      throw tooMany('THINKFLOW_MAX_RUNNING_PER_KEY', this.limits.maxRunning, 'pieces of work in progress (jobs and /commands turns); wait for one to finish');
    }
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        await this.#redis.zrem(key, member);
      },
    };
  }

  async #exec(multi: { exec(): Promise<[Error | null, unknown][] | null> }): Promise<unknown[]> {
    const out = (await multi.exec()) ?? [];
    for (const [err] of out) if (err) throw err;
    return out.map(([, v]) => v);
  }
}

function tooMany(setting: string, cap: number, what: string): PipelineError {
  return new PipelineError('too_many', `this API key is at its cap of ${cap} ${what} (${setting})`, { cap: setting, limit: cap });
}
