import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Job } from 'bullmq';
import { log, withIds } from '../log/index.ts';
import type { Keys } from './keys.ts';
import type { CommandJobData, SessionQueues } from './queues.ts';
import type { PipelineRedis } from './redis.ts';

// Worker processes' liveness, so a dead one's sessions go on elsewhere within
// seconds instead of after BullMQ's lock + stalled interval (60 s by default).
// Each worker process writes one heartbeat key (SET PX) every `beatMs` (500 ms,
// TTL 2 s): per process and time, never per command or per session. Its BullMQ
// Workers carry the process id in their `id`, hence in every job lock token
// (`<id>:<n>`), so the lock itself says which process holds a job: nothing is
// written per command or per Worker. Every `beatMs` each process also reads
// the others' heartbeats; one whose key expired is dead: the first survivor to
// take it out of the registry (SREM, one winner) hands each job its Workers
// held back to its queue with BullMQ's own `moveToWait(token)` (checks the
// token, RPUSHes the job to the head of the queue). Re-delivered, the ledger
// decides as for a stalled job (processor.ts): `running` → interrupted, never
// re-run; `queued` → runs; `awaiting_approval` → waits again; and a holder that
// only looked dead starts nothing more (its start transition names its run:
// transition-7.lua refuses it once the re-delivered run holds the list). BullMQ's own
// lock and stalled check stay as the fallback (a survivor that dies mid-takeover).
// A process judges others only after `deadMs` of its own heartbeats going
// through: after a Redis outage every key may have expired, and live
// processes get that long to write theirs again.

export type LivenessOptions = {
  /** @default 500 */
  beatMs?: number;
  /** a heartbeat's TTL: a process silent this long is dead. @default 2000 */
  deadMs?: number;
};

export type LivenessDeps = {
  redis: PipelineRedis;
  keys: Keys;
  queues: SessionQueues;
  /** a session whose job was handed back: this process opens a Worker on it */
  onTakenOver: (sid: string) => void;
  /** after a dead process's jobs were handed back, in the one survivor that took it over (its warm sandboxes go: warm-pool.ts) */
  onDead?: (dead: string) => Promise<void>;
};

/** The process that holds a job lock: a Worker id is `<process id>.<uuid>`, a token `<worker id>:<n>`. */
export function holderOf(token: string): string {
  const dot = token.indexOf('.');
  return dot > 0 ? token.slice(0, dot) : '';
}

export class WorkerLiveness {
  /** this process's id (no `.` or `:`), the prefix of its Workers' ids */
  readonly id = `w${process.pid}-${randomBytes(4).toString('hex')}`;
  readonly #d: LivenessDeps;
  readonly #beatMs: number;
  readonly #deadMs: number;
  #timer: NodeJS.Timeout | null = null;
  /** since when this process's beats have gone through without a gap (0: not now) */
  #upSince = 0;
  #lastBeat = 0;
  #beating = false;
  #watching = false;

  constructor(deps: LivenessDeps, opts: LivenessOptions = {}) {
    this.#d = deps;
    this.#beatMs = opts.beatMs ?? 500;
    this.#deadMs = opts.deadMs ?? 2000;
  }

  /** A Worker id for this process: BullMQ's job lock tokens then name the process. */
  workerId(): string {
    return `${this.id}.${randomBytes(8).toString('hex')}`;
  }

  async start(): Promise<void> {
    await this.#beat();
    this.#timer = setInterval(() => void this.#tick(), this.#beatMs);
    this.#timer.unref();
  }

  /** The beat never waits for a watch (a takeover may take a while): each has its own guard. */
  async #tick(): Promise<void> {
    if (!this.#beating) {
      this.#beating = true;
      await this.#beat()
        .catch((err: unknown) => log().warn({ err, worker: this.id }, 'worker liveness: heartbeat not written'))
        .finally(() => { this.#beating = false; });
    }
    if (this.#watching || !this.#upSince || Date.now() - this.#upSince < this.#deadMs) return;
    this.#watching = true;
    await this.#watch()
      .catch((err: unknown) => log().warn({ err, worker: this.id }, 'worker liveness: watching the other workers failed'))
      .finally(() => { this.#watching = false; });
  }

  async #beat(): Promise<void> {
    const { redis, keys } = this.#d;
    const now = Date.now();
    let prev: string | null;
    try {
      // GET: a missing previous value means this process was silent past its TTL (or just started).
      prev = (await redis.set(keys.workerBeat(this.id), `${hostname()}:${process.pid}`, 'PX', this.#deadMs, 'GET')) as string | null;
    } catch (err) {
      this.#upSince = 0;
      throw err;
    }
    if (prev === null || now - this.#lastBeat > this.#deadMs) {
      if (this.#lastBeat) log().warn({ worker: this.id }, 'worker liveness: this process was silent past its heartbeat TTL');
      await redis.sadd(keys.workers(), this.id);
      this.#upSince = now;
    } else if (!this.#upSince) {
      this.#upSince = now;
    }
    this.#lastBeat = now;
  }

  /** Reads the others' heartbeats; takes over the sessions of those that expired. */
  async #watch(): Promise<void> {
    const { redis, keys } = this.#d;
    const others = (await redis.smembers(keys.workers())).filter((w) => w !== this.id);
    const alive = await Promise.all(others.map((w) => redis.exists(keys.workerBeat(w))));
    for (const [i, dead] of others.entries()) {
      if (alive[i]) continue;
      // One survivor wins the SREM and takes over; the others leave it.
      if ((await redis.srem(keys.workers(), dead)) === 1) {
        await this.takeOver(dead);
        await this.#d.onDead?.(dead).catch((err: unknown) => log().warn({ err, dead }, 'worker liveness: cleaning up after a dead worker failed'));
      }
    }
  }

  /** Hands every job whose lock `dead` holds back to its queue; returns the sessions. */
  async takeOver(dead: string): Promise<string[]> {
    const { redis, keys, queues } = this.#d;
    const started = Date.now();
    const sids = await redis.zrange(keys.busy(), 0, -1);
    const taken: string[] = [];
    await Promise.all(sids.map(async (sid) => {
      const q = queues.queue(sid);
      for (const jobId of await redis.lrange(q.keys.active!, 0, -1)) {
        const token = await redis.get(`${q.toKey(jobId)}:lock`);
        if (!token || holderOf(token) !== dead) continue;
        try {
          const job = await Job.fromId<CommandJobData>(q, jobId);
          if (!job) continue;
          await job.moveToWait(token);
          taken.push(sid);
          this.#d.onTakenOver(sid);
        } catch (err) {
          // The lock moved meanwhile (its stalled check, another survivor): BullMQ has it.
          withIds({ session_id: sid }).warn({ err, job: jobId, dead }, 'worker liveness: a dead worker\'s job was not handed back');
        }
      }
    }));
    // The sessions named (at most 200): an operator sees which commands ended `interrupted` and why.
    log().warn({ dead, count: taken.length, sessions: taken.slice(0, 200), ms: Date.now() - started }, 'worker liveness: a worker process died; its jobs went back to their queues');
    return taken;
  }

  /** Stops beating and leaves the registry (after this process's Workers closed). */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    const { redis, keys } = this.#d;
    await Promise.all([redis.srem(keys.workers(), this.id), redis.del(keys.workerBeat(this.id))])
      .catch((err: unknown) => log().warn({ err, worker: this.id }, 'worker liveness: could not leave the registry'));
  }
}
