import { Queue } from 'bullmq';
import { log, withIds } from '../log/index.ts';
import type { Keys } from './keys.ts';
import type { PipelineRedis } from './redis.ts';

// One BullMQ queue per session. Queue objects share the process's ioredis
// connection (BullMQ does not close a shared connection), so hundreds of
// sessions cost hundreds of small objects, not connections.

/** `turn` lets the worker read record, turn state and grants in one round trip. */
export type CommandJobData = { sid: string; index: number; turn: number };

/** One attempt, no retry: a retry would reorder the session and could repeat a side effect. */
export const JOB_OPTIONS = { attempts: 1, removeOnComplete: true, removeOnFail: true } as const;

export class SessionQueues {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  readonly #queues = new Map<string, Queue<CommandJobData>>();
  readonly #configured = new Set<string>();
  #closing: Promise<void> | null = null;

  constructor(redis: PipelineRedis, keys: Keys) {
    this.#redis = redis;
    this.#keys = keys;
  }

  queue(sid: string): Queue<CommandJobData> {
    let q = this.#queues.get(sid);
    if (!q) {
      q = new Queue<CommandJobData>(this.#keys.queueName(sid), {
        connection: this.#redis, prefix: this.#keys.bullPrefix, defaultJobOptions: JOB_OPTIONS,
      });
      // Connection errors also surface on the calls that need them; here they are only logged.
      q.on('error', (err) => withIds({ session_id: sid }).warn({ err }, 'session queue connection error'));
      this.#queues.set(sid, q);
      this.#evict();
    }
    return q;
  }

  /**
   * Global concurrency 1: BullMQ itself then lets at most one job of this
   * queue be active across every worker process, which is what keeps a
   * session strictly ordered. Idempotent (an HSET on the queue's meta key).
   */
  async configure(sid: string): Promise<void> {
    if (this.#configured.has(sid)) return;
    await this.queue(sid).setGlobalConcurrency(1);
    this.#configured.add(sid);
  }

  async add(sid: string, index: number, turn: number): Promise<void> {
    await this.configure(sid);
    // Custom job ids may not look like integers (BullMQ rule), hence the `c`.
    await this.queue(sid).add('command', { sid, index, turn }, { ...JOB_OPTIONS, jobId: `c${index}` });
  }

  /**
   * The queue's BullMQ keys, plus those of the jobs of ledger indexes 1..records
   * (job ids are `c<index>`): what a deleted session's retention expires.
   */
  keysOf(sid: string, records: number): string[] {
    const q = this.queue(sid);
    const own = Object.values(q.keys).filter((key) => !key.endsWith(':'));
    const jobs = Array.from({ length: records }, (_, i) => q.toKey(`c${i + 1}`)).flatMap((j) => [j, `${j}:lock`, `${j}:logs`]);
    return [...own, ...jobs];
  }

  /** Removes the queue's BullMQ keys (waiting jobs included); the ledger is elsewhere. */
  async obliterate(sid: string): Promise<void> {
    await this.queue(sid).obliterate({ force: true });
    await this.#drop(sid);
  }

  async #drop(sid: string): Promise<void> {
    const q = this.#queues.get(sid);
    this.#queues.delete(sid);
    this.#configured.delete(sid);
    await q?.close().catch((err: unknown) => withIds({ session_id: sid }).warn({ err }, 'closing a session queue failed; dropped anyway'));
  }

  #evict(): void {
    // Bounded cache: Queue objects are cheap to recreate, a map that only grows is not.
    if (this.#queues.size <= 2000) return;
    const oldest = this.#queues.keys().next().value;
    if (oldest !== undefined) void this.#drop(oldest);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const q of this.#queues.values()) await q.close().catch((err: unknown) => log().warn({ err }, 'closing a session queue failed'));
      this.#queues.clear();
    })();
    return this.#closing;
  }
}
