import { withIds } from '../log/index.ts';
import type { Keys } from './keys.ts';
import type { SessionQueues } from './queues.ts';
import type { PipelineRedis } from './redis.ts';

// A deleted session's keys expire after THINKFLOW_RETENTION_S: its ledger and
// events stay readable that long, then Redis frees them without a sweeper.
// The keys are enumerated from the session's counters (keys.ts) and its queue
// (BullMQ's own names), never by a SCAN of the keyspace. A key written after
// this (a command that was running finishes) takes the same TTL in the script
// that writes it (scripts/lib/followTtl.lua).

const CHUNK = 1000;

export class SessionRetention {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  readonly #queues: SessionQueues;
  readonly #ttlS: number;

  constructor(redis: PipelineRedis, keys: Keys, queues: SessionQueues, retentionS: number) {
    this.#redis = redis;
    this.#keys = keys;
    this.#queues = queues;
    this.#ttlS = retentionS;
  }

  get retentionS(): number { return this.#ttlS; }

  /** Gives every key of the session the retention TTL; returns how many keys exist. `tokens`: its approvals. */
  async expire(sid: string, tokens: string[]): Promise<number> {
    const k = this.#keys;
    // A new session's queue setting, sent beside its creation, lands before the TTLs: its key would outlive them.
    await this.#queues.settled(sid);
    const [records, turns] = (await this.#redis.mget(k.ledgerCounter(sid), k.turnCounter(sid))).map((v) => Number(v ?? 0));
    const keys = [
      ...k.sessionKeys(sid, { records: records!, turns: turns!, tokens }),
      ...this.#queues.keysOf(sid, records!),
      ...tokens.map((t) => k.approvalIndex(t)),
    ];
    // The global list of sessions would keep a deleted one for good: it leaves it now, and its approvals leave the history
    // (approval-history.ts; their records keep the answers for the retention).
    await this.#redis.zrem(k.sessions(), sid);
    if (tokens.length > 0) await this.#redis.zrem(k.approvalsDecided(), ...tokens);
    let expired = 0;
    // One EXPIRE each, a chunk at a time (one socket write): the approvals' index
    // entries are global keys, in other slots of a Cluster than the session's.
    for (let i = 0; i < keys.length; i += CHUNK) {
      const done = await Promise.all(keys.slice(i, i + CHUNK).map((key) => this.#redis.expire(key, this.#ttlS)));
      expired += done.reduce((a, b) => a + b, 0);
    }
    withIds({ session_id: sid }).info({ keys: expired, retention_s: this.#ttlS }, 'session keys expire after the retention');
    return expired;
  }
}
