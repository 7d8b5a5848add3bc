import { PipelineError } from './errors.ts';
import type { Keys } from './keys.ts';
import { mgetAcross, type PipelineRedis } from './redis.ts';

// THINKFLOW_STORE_BYTES_PER_KEY: the Redis bytes one API key may hold, so one
// tenant cannot fill Redis (maxmemory → 503 storage_full for everyone).
// Charged where the bytes are written: the scripts that store a record or an
// event add its size to the session's own counter (`keys.sessionBytes`, same
// hash tag, same atomic step). A key's usage = its open sessions' counters +
// its deleted sessions' totals, which keep counting until their keys expire
// (THINKFLOW_RETENTION_S after DELETE) and are credited back lazily at the
// next check (scripts retireBytes, retiredBytes); a kept Idempotency-Key
// answer is charged the same way until it expires (idempotency.ts, entry
// `idem:<hash>`, script idemAnswer). Checked before anything new
// of the key starts (a session, a turn: REST or a job's model call), so a key
// overshoots by at most the turns it already has running.

/** A session's meta, queue and index entries, charged once at creation so an empty create/delete loop is bounded too. */
export const SESSION_OVERHEAD_BYTES = 4096;
/** Expired sessions credited per check (the rest at the next one). */
const CREDIT_BATCH = 1000;

export type StorageUsage = { used: number; limit: number };

export class StorageBudget {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  /** bytes per key; Infinity = no budget */
  readonly limit: number;

  constructor(redis: PipelineRedis, keys: Keys, limit: number) {
    this.#redis = redis;
    this.#keys = keys;
    this.limit = limit;
  }

  /** The key's bytes in Redis now: open sessions plus deleted ones not yet expired. */
  async usage(owner: string): Promise<StorageUsage> {
    const k = this.#keys;
    // Both at once: one round trip, not two.
    const [retired, members] = await Promise.all([
      this.#redis.retiredBytes(k.ownerRetired(owner), k.ownerRetiredBytes(owner), Date.now(), CREDIT_BATCH), this.#redis.smembers(k.ownerSessions(owner)),
    ]);
    // Reservations (`pending:…`) have no session yet.
    const open = members.filter((m) => !m.startsWith('pending:'));
    let used = Number(retired);
    for (let i = 0; i < open.length; i += 500) {
      const counts = await mgetAcross(this.#redis, open.slice(i, i + 500).map((sid) => k.sessionBytes(sid)));
      for (const c of counts) used += Number(c ?? 0);
    }
    return { used, limit: this.limit };
  }

  /** Refuses (429 storage_quota_exceeded) when the key is at or over its budget. Dev mode (no key) has none. */
  async assert(owner: string | null): Promise<void> {
    if (owner === null || this.limit === Infinity) return;
    const { used, limit } = await this.usage(owner);
    if (used < limit) return;
    throw new PipelineError('storage_quota_exceeded',
      `this API key holds ${used} bytes in storage, at its budget of ${limit} (THINKFLOW_STORE_BYTES_PER_KEY); ` +
      'deleted sessions free theirs when their retention (THINKFLOW_RETENTION_S) ends',
      { limit, used, setting: 'THINKFLOW_STORE_BYTES_PER_KEY' });
  }

  /** A new session's fixed cost. */
  async chargeSession(sid: string): Promise<void> {
    await this.#redis.incrby(this.#keys.sessionBytes(sid), SESSION_OVERHEAD_BYTES);
  }

  /** The session is deleted: its bytes keep counting for the key until `expiresAtMs`, when its keys are gone. */
  async retire(owner: string | null, sid: string, expiresAtMs: number): Promise<void> {
    if (owner === null) return;
    const k = this.#keys;
    // The session's counter is in its own slot, the key's totals in the key's: read, then moved.
    const bytes = Number((await this.#redis.get(k.sessionBytes(sid))) ?? 0);
    await this.#redis.retireBytes(k.ownerRetired(owner), k.ownerRetiredBytes(owner), sid, expiresAtMs, Date.now(), bytes);
  }
}
