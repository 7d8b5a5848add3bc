import { randomBytes } from 'node:crypto';
import { PipelineError } from './errors.ts';
import type { Keys } from './keys.ts';
import { execMulti, type PipelineRedis } from './redis.ts';

// Per-key caps of API.md (THINKFLOW_MAX_SESSIONS_PER_KEY, _RUNNING_PER_KEY):
// one key cannot hold unbounded sessions (each a workspace volume up to the
// quota) or keep unbounded sandboxes busy. Counted in Redis so every API
// process sees the same figures; each claim is add-then-count, undone when
// over, so concurrent requests can never both take the last slot.

export type OwnerCapLimits = {
  /** open (not deleted) sessions per key */
  maxSessions: number;
  /** sessions with a live container per key */
  maxRunning: number;
  /** how long after its last use a container may still be running (idle stop + one reaper period) */
  liveWindowMs: number;
};

export class OwnerCaps {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  readonly limits: OwnerCapLimits;
  /** when this process last wrote a session's live entry (touchLive) */
  readonly #touched = new Map<string, number>();

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
    const [, count] = await execMulti(this.#redis.multi().sadd(key, placeholder).scard(key));
    if (Number(count) > this.limits.maxSessions) {
      await this.#redis.srem(key, placeholder);
      throw tooMany('THINKFLOW_MAX_SESSIONS_PER_KEY', this.limits.maxSessions, 'open sessions; delete finished ones with DELETE /v1/sessions/:id');
    }
    return {
      commit: async (sid) => void (await execMulti(this.#redis.multi().srem(key, placeholder).sadd(key, sid))),
      cancel: async () => void (await this.#redis.srem(key, placeholder)),
    };
  }

  async releaseSession(owner: string | null, sid: string): Promise<void> {
    if (owner !== null) await this.#redis.srem(this.#keys.ownerSessions(owner), sid);
  }

  /**
   * The session is about to use its sandbox: it counts as a live container
   * of the key until its container is stopped for idleness (it is not used
   * for `liveWindowMs`) or the session is deleted. 429 when the key already
   * has `maxRunning` other live ones; a session already live is never refused.
   * @returns whether this claim added the session (it was not live before)
   */
  async claimLive(owner: string | null, sid: string): Promise<boolean> {
    if (owner === null) return false;
    const key = this.#keys.ownerLive(owner);
    const now = Date.now();
    // GT: a new member is added (and counted in `added`), a present one only moves forward: one round trip either way.
    const [, added, count] = await execMulti(
      this.#redis.multi().zremrangebyscore(key, '-inf', now - this.limits.liveWindowMs).zadd(key, 'GT', now, sid).zcard(key),
    );
    if (Number(added) === 1 && Number(count) > this.limits.maxRunning) {
      await this.#redis.zrem(key, sid);
      throw tooMany('THINKFLOW_MAX_RUNNING_PER_KEY', this.limits.maxRunning, 'sessions with a live container; idle ones are stopped after THINKFLOW_SANDBOX_IDLE_STOP_S, or delete one');
    }
    return Number(added) === 1;
  }

  /**
   * A command ran in the session's sandbox (the worker): its container stays live from now. Written at most
   * every tenth of the live window (5 s at most) per session and process: the window is minutes long, and a
   * ZADD per command was a tenth of the command path's Redis work.
   */
  async touchLive(owner: string | null, sid: string): Promise<void> {
    if (owner === null) return;
    const now = Date.now();
    if (now - (this.#touched.get(sid) ?? -Infinity) < Math.min(5000, this.limits.liveWindowMs / 10)) return;
    if (this.#touched.size >= 10_000) this.#touched.clear(); // bounded: forgetting only costs one ZADD
    this.#touched.set(sid, now);
    await this.#redis.zadd(this.#keys.ownerLive(owner), now, sid);
  }

  async releaseLive(owner: string | null, sid: string): Promise<void> {
    this.#touched.delete(sid);
    if (owner !== null) await this.#redis.zrem(this.#keys.ownerLive(owner), sid);
  }

}

function tooMany(setting: string, cap: number, what: string): PipelineError {
  return new PipelineError('too_many', `this API key is at its cap of ${cap} ${what} (${setting})`, { cap: setting, limit: cap });
}
