import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { log, withIds } from '../log/index.ts';
import type { Keys } from './keys.ts';
import type { PipelineRedis } from './redis.ts';
import { ScriptCode } from './script-codes.ts';
import { executionLoad, hashOf, type ExecutionLoad } from './execution-load.ts';

// One BullMQ queue per session. Queue objects share one ioredis connection
// (BullMQ does not close a shared connection), so hundreds of sessions cost
// hundreds of small objects, not connections. That connection is BullMQ's
// alone when the process gives one (`connection`: its Workers use it too),
// apart from the one the pipeline's scripts run on (redis.ts createQueueRedis).
//
// A job is a *run*: it works through the session's run list (keys.runList,
// written by createRecord) until the list is empty, one command after the
// other. So BullMQ's lifecycle (add, take, lock, finish, its events) is paid
// once per busy period, not once per command; BullMQ still gives what it gave
// before: at most one run active per session across all processes (global
// concurrency 1), its lock, and a dead holder's run handed to a survivor.

/**
 * A run job: `{sid}`. A job of the layout before run lists also has `index` and
 * `turn` (one command each); one left in a queue by an upgrade still runs.
 */
export type CommandJobData = { sid: string; index?: number; turn?: number };

/** What a run job does next (runNext-5.lua). */
/** `load` parses what the step read (it throws on a broken record: the run closes that command and goes on). */
/** `linger`: the list was empty and the run job waits on it (session-run.ts); `empty`: it ends. */
export type RunStep = { kind: 'command'; index: number; load: () => ExecutionLoad } | { kind: 'empty' } | { kind: 'paused' } | { kind: 'linger' };

/** One attempt, no retry: a retry would reorder the session and could repeat a side effect. */
export const JOB_OPTIONS = { attempts: 1, removeOnComplete: true, removeOnFail: true } as const;

export class SessionQueues {
  readonly #redis: PipelineRedis;
  /** BullMQ's connection: the queues' and the session Workers' (the pipeline's own when none is given) */
  readonly connection: Redis;
  readonly #keys: Keys;
  readonly #queues = new Map<string, Queue<CommandJobData>>();
  /** per session, its global concurrency set (or being set); a failed setting is forgotten, so the next call tries again */
  readonly #configured = new Map<string, Promise<void>>();
  #closing: Promise<void> | null = null;

  constructor(redis: PipelineRedis, keys: Keys, connection: Redis = redis) {
    this.#redis = redis;
    this.connection = connection;
    this.#keys = keys;
  }

  queue(sid: string): Queue<CommandJobData> {
    let q = this.#queues.get(sid);
    if (!q) {
      q = new Queue<CommandJobData>(this.#keys.queueName(sid), {
        connection: this.connection, prefix: this.#keys.bullPrefix, defaultJobOptions: JOB_OPTIONS,
      });
      // createRecord reads the queue's `paused` through keys.ts: a BullMQ that laid its keys out otherwise must not start.
      if (q.keys.meta !== this.#keys.queueMeta(sid)) throw new Error(`BullMQ's queue meta key ${q.keys.meta} is not keys.queueMeta (${this.#keys.queueMeta(sid)})`);
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
  configure(sid: string): Promise<void> {
    let setting = this.#configured.get(sid);
    if (!setting) {
      const started = this.queue(sid).setGlobalConcurrency(1).then(() => undefined);
      started.catch(() => { if (this.#configured.get(sid) === started) this.#configured.delete(sid); });
      this.#configured.set(sid, (setting = started));
    }
    return setting;
  }

  /** Resolves once a concurrency setting this process has under way landed (or failed): a deletion's TTLs then reach its key. */
  async settled(sid: string): Promise<void> {
    await this.#configured.get(sid)?.catch(() => undefined);
  }

  /**
   * Starts a run job: when the command at `index` found the run list empty
   * (no run job works on the session), or to repair one that is gone (`tag`).
   * Custom job ids may not look like integers (BullMQ rule), hence the `r`.
   */
  async startRun(sid: string, index: number, tag = ''): Promise<void> {
    await this.configure(sid);
    await this.queue(sid).add('run', { sid }, { ...JOB_OPTIONS, jobId: `r${index}${tag}` });
  }

  /**
   * One step of run `run`: drops `done` (the command it finished) from the run list, names the next and
   * reads it. `start`: the run takes the list over (a re-delivered job's run: the old one's steps then end
   * it). `lingerMs`: on an empty list, it lingers there this long (createRecord then says `wake`) rather than end.
   */
  async next(sid: string, run: { id: string; start?: boolean; lingerMs: number }, done: number | null): Promise<RunStep> {
    const k = this.#keys;
    const res = (await this.#redis.runNext(
      k.runList(sid), k.queueMeta(sid), k.sessionMeta(sid), k.grants(sid), k.recordPrefix(sid),
      done ?? '', run.id, run.start ? '1' : '0', Math.max(0, Math.ceil(run.lingerMs)),
    )) as [number, string?, string[]?, (string | null)?, (string | null)?, string[]?];
    if (res[0] === ScriptCode.PAUSED) return { kind: 'paused' };
    if (res[0] === ScriptCode.LINGER) return { kind: 'linger' };
    if (res[1] === undefined) return { kind: 'empty' };
    const index = Number(res[1]);
    return { kind: 'command', index, load: () => executionLoad(index, hashOf(res[2] ?? []), res[3], res[4], res[5] ?? []) };
  }

  /** A run ended on an error: an enqueue meanwhile starts a run job rather than wake this one (runNext's `run_until`). */
  async lingerNoMore(sid: string): Promise<void> {
    await this.#redis.hdel(this.#keys.sessionMeta(sid), 'run_until');
  }

  /** Commands not yet finished by a run job (the run list's length). */
  pendingRuns(sid: string): Promise<number> {
    return this.#redis.llen(this.#keys.runList(sid));
  }

  /** A paused queue takes no run job, and a run job stops before its next command (runNext). */
  async pause(sid: string): Promise<void> {
    await this.queue(sid).pause();
  }

  /** Resumes the queue and starts a run job for the commands that waited (one that finds nothing ends at once). */
  async resume(sid: string): Promise<void> {
    await this.queue(sid).resume();
    await this.startRun(sid, 0, `-resume-${Date.now()}`);
  }

  /**
   * The queue's BullMQ keys, plus those of the jobs that ledger indexes 1..records
   * may have started (`r<index>`, and `c<index>` of the layout before run lists):
   * what a deleted session's retention expires.
   */
  keysOf(sid: string, records: number): string[] {
    const q = this.queue(sid);
    const own = Object.values(q.keys).filter((key) => !key.endsWith(':'));
    const ids = Array.from({ length: records }, (_, i) => [`r${i + 1}`, `c${i + 1}`]).flat();
    const jobs = ids.map((id) => q.toKey(id)).flatMap((j) => [j, `${j}:lock`, `${j}:logs`]);
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
