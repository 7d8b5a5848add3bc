import { setMaxListeners } from 'node:events';
import { WaitingError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { log, withIds } from '../log/index.ts';
import { ApprovalWaitAborted } from './approvals.ts';
import type { Keys } from './keys.ts';
import type { PipelineMetrics } from './metrics.ts';
import type { Processor } from './processor.ts';
import type { CommandJobData, SessionQueues } from './queues.ts';
import { guardLateConnectionErrors, workerConnections } from './late-connection-errors.ts';
import { recoverOrphans } from './recovery.ts';
import { RunWakes } from './run-linger.ts';
import { settlesWithin } from './settles.ts';
import { closeFailedCommand, RunHandedBack, runSessionJob, type Current } from './session-run.ts';
import type { PipelineRedis } from './redis.ts';
import { WarmPool, type WarmPoolOptions, type WarmSandboxes } from './warm-pool.ts';
import { WorkerLiveness, type LivenessOptions } from './worker-liveness.ts';

// The worker service: one BullMQ Worker per *busy* session in this process.
// A Worker holds its own blocking connection, so Workers of idle sessions are
// closed after `idleMs`; a wake message (published on every enqueue) or the
// periodic reconcile (sessions with non-final commands) opens them again. The
// reconcile is also what recovers a session whose worker process died: some
// live process must have a Worker on that queue for BullMQ's stalled-job
// check to hand the job over. A process killed outright is found faster by
// its heartbeat (worker-liveness.ts): its jobs go back to their queues within
// seconds, and this process opens Workers on those sessions.

export type WorkerPoolOptions = {
  lockMs: number;
  stalledIntervalMs: number;
  idleMs: number;
  /** @default 2000 */
  reconcileMs?: number;
  /** a `queued` record this old with no job in its queue is closed as lost. @default 30000 */
  lostAfterMs?: number;
  /** close(): running commands get this long to finish, then end `interrupted` (THINKFLOW_SHUTDOWN_GRACE_S). @default 30000 */
  shutdownGraceMs?: number;
  /** the heartbeat that finds a dead worker process in seconds (worker-liveness.ts) */
  liveness?: LivenessOptions;
  /** a run job waits this long on its emptied run list for the next command (run-linger.ts, THINKFLOW_RUN_LINGER_MS). @default 0 */
  lingerMs?: number;
};

export type WorkerPoolDeps = {
  redis: PipelineRedis;
  keys: Keys;
  /** the process's subscriber connection (wake messages), shared, not owned */
  subscriber: Redis;
  queues: SessionQueues;
  processor: Processor;
  openWorkers: PipelineMetrics['openWorkers'];
  /** sandboxes made before they are needed (warm-pool.ts); none when absent, none made at size 0 (a dead maker's are still removed) */
  warm?: WarmPoolOptions & { sandboxes: WarmSandboxes };
  /** a wake message for a session: a container this process paused is thawed ahead of its command (Sandboxes.prewake) */
  prewake?: (sid: string) => void;
};

const IDLE_CLOSE_MS = 5000;

/** `job`: the command this Worker's run is on, for close() to interrupt past the grace */
type Entry = { worker: Worker<CommandJobData>; busy: boolean; lastActive: number; job?: Current; closing?: Promise<void> };
export type PoolStatus = 'idle' | 'running' | 'closing' | 'closed';

export class WorkerPool {
  readonly #d: WorkerPoolDeps;
  readonly #opts: Required<Omit<WorkerPoolOptions, 'liveness'>>;
  readonly #liveness: WorkerLiveness;
  readonly #warm: WarmPool | null;
  readonly #wakes: RunWakes;
  readonly #entries = new Map<string, Entry>();
  readonly #opening = new Map<string, Promise<void>>();
  #timers: NodeJS.Timeout[] = [];
  /** aborted on close(): approval waits give their job back instead of holding shutdown for minutes */
  readonly #shutdown = new AbortController();
  #status: PoolStatus = 'idle';
  #closing: Promise<void> | null = null;
  #commandAt = 0; // when a command of this process last started or ended: the warm pool's refill waits for quiet

  constructor(deps: WorkerPoolDeps, opts: WorkerPoolOptions) {
    this.#d = deps;
    setMaxListeners(0, this.#shutdown.signal); // one listener per lingering run or approval wait, each removed at its end: no leak past 10
    const { liveness, ...rest } = opts;
    this.#opts = { reconcileMs: 2000, lostAfterMs: 30_000, shutdownGraceMs: 30_000, lingerMs: 0, ...rest };
    this.#wakes = new RunWakes(this.#opts.lingerMs);
    this.#liveness = new WorkerLiveness({
      redis: deps.redis, keys: deps.keys, queues: deps.queues,
      onTakenOver: (sid) => void this.ensure(sid).catch((err: unknown) => withIds({ session_id: sid }).error({ err }, 'could not open a session worker')),
      onDead: async (dead) => this.#warm?.dropDead(dead),
    }, liveness);
    const w = deps.warm;
    const lastWorkAt = () => ([...this.#entries.values()].some((e) => e.job) ? Date.now() : this.#commandAt);
    this.#warm = w ? new WarmPool({ redis: deps.redis, keys: deps.keys, sandboxes: w.sandboxes, processId: this.#liveness.id, onReady: (sid) => this.ensure(sid), lastWorkAt }, w) : null;
    deps.openWorkers.set(0);
  }

  get status(): PoolStatus { return this.#status; }
  get openWorkers(): number { return this.#entries.size; }
  /** this process's id in the workers' registry */
  get processId(): string { return this.#liveness.id; }
  get warm(): WarmPool | null { return this.#warm; }
  /** An enqueue of this process wakes a run that lingers here without a wake message (its round trip); false: not here. */
  wakeHere(sid: string, step?: Parameters<RunWakes['wake']>[1]): boolean { return this.#wakes.wake(sid, step); }

  async start(): Promise<void> {
    if (this.#status !== 'idle') throw new Error(`worker pool is ${this.#status}`);
    this.#status = 'running';
    const channel = this.#d.keys.wakeChannel();
    this.#d.subscriber.on('message', (ch: string, sid: string) => {
      if (ch !== channel) return;
      this.#d.prewake?.(sid);
      this.#wakes.wake(sid);
      void this.ensure(sid).catch((err: unknown) => withIds({ session_id: sid }).error({ err }, 'could not open a session worker'));
      this.#warm?.wake(sid); // a session's first command on a warm id: the pool refills
    });
    await this.#d.subscriber.subscribe(channel);
    await this.#liveness.start(); // registered before any Worker takes a job
    this.#warm?.start();
    await this.reconcile();
    this.#timers.push(setInterval(() => void this.reconcile().catch((err: unknown) => log().error({ err }, 'worker pool reconcile failed')), this.#opts.reconcileMs));
    this.#timers.push(setInterval(() => this.#sweep(), Math.max(100, Math.min(1000, this.#opts.idleMs / 2))));
    for (const t of this.#timers) t.unref();
  }

  /** Opens a Worker for every session that still has non-final commands; forgets the others. */
  async reconcile(): Promise<void> {
    const { redis, keys } = this.#d;
    const busy = await redis.zrange(keys.busy(), 0, -1, 'WITHSCORES');
    const sids: string[] = [];
    const scores: number[] = [];
    for (let i = 0; i < busy.length; i += 2) { sids.push(busy[i]!); scores.push(Number(busy[i + 1])); }
    if (sids.length === 0) return;
    // A GET and an LLEN each (one socket write; on a Cluster the sessions are in different slots).
    const [open, runs] = await Promise.all([
      Promise.all(sids.map((s) => redis.get(keys.open(s)))), Promise.all(sids.map((s) => redis.llen(keys.runList(s)))),
    ]);
    const now = Date.now();
    await Promise.all(sids.map(async (sid, i) => {
      // A run list left with entries (a run job that stopped on an error) needs a run job like open records do.
      const n = Math.max(Number(open[i] ?? 0), runs[i] ?? 0);
      if (n > 0) {
        const e = this.#entries.get(sid);
        // Only when this process's Worker has nothing to do: then an empty queue with open records means orphans.
        if (e && !e.busy && !e.closing && now - e.lastActive > this.#opts.reconcileMs) {
          await recoverOrphans(this.#d.processor.lifecycle, this.#d.queues, sid, this.#opts.lostAfterMs)
            .catch((err: unknown) => withIds({ session_id: sid }).error({ err }, 'orphan recovery failed'));
        }
        return this.ensure(sid);
      }
      // A session idle for a minute leaves the busy set; an enqueue puts it back. Not while a run job is active on it
      // (lingering, run-linger.ts): a dead holder's run is found through the busy set (worker-liveness.ts).
      if (now - scores[i]! > 60_000 && (await this.#d.queues.queue(sid).getActiveCount()) === 0) await redis.zrem(keys.busy(), sid);
    }));
  }

  /** Makes sure this process has a Worker on the session's queue. */
  async ensure(sid: string): Promise<void> {
    if (this.#status !== 'running') return;
    const e = this.#entries.get(sid);
    if (e && !e.closing) { e.lastActive = Date.now(); return; }
    let opening = this.#opening.get(sid);
    if (!opening) {
      opening = (async () => {
        await e?.closing; // reopen only once the previous Worker is fully closed
        if (this.#status === 'running' && !this.#entries.get(sid)) this.#open(sid);
      })().finally(() => this.#opening.delete(sid));
      this.#opening.set(sid, opening);
    }
    return opening;
  }

  #open(sid: string): void {
    const { keys, queues } = this.#d;
    let entry: Entry | undefined; // set before the Worker runs
    const runDeps = { processor: this.#d.processor, queues: this.#d.queues, onCommand: (c: Current | undefined) => { entry!.job = c; this.#commandAt = Date.now(); }, linger: this.#wakes };
    const worker = new Worker<CommandJobData>(
      keys.queueName(sid),
      async (job: Job<CommandJobData>, token?: string) => {
        try {
          await runSessionJob(runDeps, job.data, this.#shutdown.signal);
        } catch (err) {
          if (!(err instanceof ApprovalWaitAborted || err instanceof RunHandedBack) || !token) throw err;
          // Back to the head of the session's queue (RPUSH side): another worker goes on.
          withIds({ session_id: sid }).debug({ index: entry?.job?.index }, 'shutting down: the run goes back to the queue');
          await job.moveToWait(token);
          throw new WaitingError();
        }
      },
      {
        connection: queues.connection, prefix: keys.bullPrefix, concurrency: 1,
        lockDuration: this.#opts.lockMs, stalledInterval: this.#opts.stalledIntervalMs,
        // Re-delivery is safe (the ledger decides), so let a stalled job come back
        // many times rather than have BullMQ fail it behind the ledger's back.
        maxStalledCount: 1000, drainDelay: 5, autorun: false,
        removeOnComplete: { count: 0 }, removeOnFail: { count: 0 },
      },
    );
    // Before it runs: its lock tokens (`<id>:<n>`) then name this process (worker-liveness.ts).
    (worker as { id: string }).id = this.#liveness.workerId();
    guardLateConnectionErrors(workerConnections(worker), (err) => withIds({ session_id: sid }).warn({ err }, 'a closed session worker\'s connection failed late'));
    entry = { worker, busy: false, lastActive: Date.now() };
    this.#watchWorker(sid, entry);
    void worker.run().catch((err: unknown) => withIds({ session_id: sid }).warn({ err }, 'session worker stopped with an error'));
    this.#entries.set(sid, entry);
    this.#d.openWorkers.set(this.#entries.size);
  }

  #watchWorker(sid: string, entry: Entry): void {
    const { worker } = entry;
    worker.on('active', () => { entry.busy = true; entry.lastActive = Date.now(); });
    worker.on('completed', () => { entry.busy = false; entry.job = undefined; entry.lastActive = Date.now(); });
    worker.on('failed', (job, err) => {
      Object.assign(entry, { busy: false, job: undefined, lastActive: Date.now() });
      if (job) void this.#recoverFailedJob(job, err);
      else withIds({ session_id: sid }).error({ err }, 'a command job failed in the queue');
    });
    // Connection errors: BullMQ reconnects and the ledger stays authoritative; logged, not fatal.
    worker.on('error', (err) => withIds({ session_id: sid }).warn({ err }, 'session worker error'));
  }

  /** A job BullMQ failed (a run stopped on an error, or stalled too often): never leave a one-command job's record hanging. */
  async #recoverFailedJob(job: Job<CommandJobData>, err: Error): Promise<void> {
    const { sid, index } = job.data;
    if (index === undefined) {
      // A run job: the command it was on is closed already (session-run.ts); the reconcile starts another run.
      withIds({ session_id: sid }).error({ err, job: job.id }, 'a run job failed');
      return;
    }
    await closeFailedCommand(this.#d.processor.lifecycle, sid, index, new Error(job.failedReason ?? err.message))
      .catch((e: unknown) => withIds({ session_id: sid }).error({ err: e, index }, 'could not close the record of a failed job'));
  }

  /** Past the shutdown grace: the commands this process still runs end `interrupted`. */
  async #interruptRunning(): Promise<void> {
    const lifecycle = this.#d.processor.lifecycle;
    await Promise.all([...this.#entries].map(async ([sid, e]) => {
      if (!e.job) return;
      const ids = withIds({ session_id: sid });
      try {
        const rec = await lifecycle.ledger.get(sid, e.job.index);
        if (rec?.status !== 'running') return;
        ids.warn({ index: rec.index, command_id: rec.id }, 'shutdown grace over: the running command ends interrupted');
        await lifecycle.interrupt(rec);
      } catch (err) {
        ids.error({ err, index: e.job.index }, 'shutdown: could not interrupt a running command');
      }
    }));
  }

  #sweep(): void {
    const now = Date.now();
    for (const [sid, e] of this.#entries) {
      if (e.busy || e.closing || now - e.lastActive < this.#opts.idleMs) continue;
      e.closing = this.#closeEntry(sid, e);
    }
  }

  async #closeEntry(sid: string, e: Entry): Promise<void> {
    const closed = e.worker.close().catch((err: unknown) => {
      withIds({ session_id: sid }).warn({ err }, 'closing a session worker failed; dropped anyway');
    });
    // A Worker that was waiting for a job when Redis restarted can wait in
    // close() forever (BullMQ 5.81): once it runs no job, it is dropped after
    // a bound (it takes no new job), so the session can get a Worker again.
    while (!(await settlesWithin(closed, IDLE_CLOSE_MS))) {
      if (e.job) continue; // a running command: close() bounds it with the shutdown grace
      withIds({ session_id: sid }).warn(`a session worker with no job did not close within ${IDLE_CLOSE_MS / 1000} s; dropped`);
      break;
    }
    if (this.#entries.get(sid) === e) this.#entries.delete(sid);
    this.#d.openWorkers.set(this.#entries.size);
  }

  /**
   * Stops taking jobs at once, lets running commands finish within the grace,
   * then marks those still running `interrupted` (as recovery does for a dead
   * worker: stopped in the sandbox, never re-run) and closes every Worker.
   * Queued jobs stay in their queues for another worker process. Memoized.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#status = 'closing';
      for (const t of this.#timers) clearInterval(t);
      this.#shutdown.abort();
      await settlesWithin(Promise.allSettled([...this.#opening.values()]), 2 * IDLE_CLOSE_MS); // each waits for an idle Worker closing: bounded there
      const closed = Promise.allSettled([...this.#entries].map(([sid, e]) => (e.closing ??= this.#closeEntry(sid, e))));
      if (!(await settlesWithin(closed, this.#opts.shutdownGraceMs))) {
        await this.#interruptRunning();
        // Interrupting stops the command in the sandbox, so its job ends and its Worker closes; if not, the job is recovered as stalled.
        if (!(await settlesWithin(closed, 10_000))) log().warn('closing: a session worker is still busy after its command was interrupted; going on');
      }
      await this.#d.subscriber.unsubscribe(this.#d.keys.wakeChannel())
        .catch((err: unknown) => log().warn({ err }, 'unsubscribing from wake messages failed while closing'));
      await this.#warm?.close().catch((err: unknown) => log().warn({ err }, 'closing: warm sandboxes not all withdrawn; a survivor or the reaper removes the rest'));
      await this.#liveness.close(); // beating until its Workers closed: a draining process is not dead
      this.#status = 'closed';
    })();
    return this.#closing;
  }
}
