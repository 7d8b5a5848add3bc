import type { Keys } from '../keys.ts';
import type { PipelineRedis } from '../redis.ts';
import { withTimings, type NetworkRecord } from './network-record.ts';

// The session's network records in Redis: one hash field per record (its
// number → JSON), rewritten when the connection ends with its bytes. A
// command opening connection after connection must not grow the ledger
// without end: past MAX_KEPT the oldest records are dropped (their count is
// still in the numbering). Records are our own writes: read back without zod.

/** Network records kept per session; older ones are dropped. */
export const MAX_KEPT = 1000;

export class NetworkLog {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;

  constructor(redis: PipelineRedis, keys: Keys) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /** Stores a new record; returns it with its id (`net-<n>`). */
  async open(sid: string, record: Omit<NetworkRecord, 'id'>): Promise<NetworkRecord> {
    const n = await this.#redis.incr(this.#keys.networkCounter(sid));
    const full: NetworkRecord = { ...record, id: `net-${n}` };
    const multi = this.#redis.multi().hset(this.#keys.networkLog(sid), String(n), JSON.stringify(full));
    if (n > MAX_KEPT) multi.hdel(this.#keys.networkLog(sid), String(n - MAX_KEPT));
    await multi.exec();
    return full;
  }

  /** Rewrites a record (its final state). */
  async save(sid: string, record: NetworkRecord): Promise<void> {
    await this.#redis.hset(this.#keys.networkLog(sid), record.id.slice('net-'.length), JSON.stringify(record));
  }

  /** Every kept record, oldest first. */
  async list(sid: string): Promise<NetworkRecord[]> {
    const h = await this.#redis.hgetall(this.#keys.networkLog(sid));
    return Object.entries(h).sort((a, b) => Number(a[0]) - Number(b[0])).map(([, json]) => withTimings(JSON.parse(json) as NetworkRecord));
  }
}
