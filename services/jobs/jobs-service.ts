// Jobs as the API sees them: submit (session + job record + a runner in this
// process), read, cancel from any process, and recovery of jobs whose runner
// process died. The runner itself is agent/job-runner.ts.
import { randomBytes } from 'node:crypto';
import { emptyCounts, runJob, type ModelEndpoint } from '../agent/index.ts';
import type { Keys, Pipeline, PipelineRedis } from '../pipeline/index.ts';
import { log, reasonOf, withIds, type Logger } from '../log/index.ts';
import { countChanges, jobLinks } from './job-changes.ts';
import { JobControlStore, LiveJobControl } from './job-control.ts';
import { JobEvents } from './job-events.ts';
import { openJobSession, scopedPipeline } from './job-session.ts';
import { FINAL_JOB_STATUSES, type ChangeCounts, type JobRequest, type JobView } from './job-schemas.ts';
import { JobStore } from './job-store.ts';
import type { WebhookSender } from './webhooks.ts';

export interface JobsServiceDeps {
  redis: PipelineRedis;
  keys: Keys;
  pipeline: Pipeline;
  endpoint: ModelEndpoint;
  webhooks: WebhookSender;
  /**
   * A runner process is presumed dead when its heartbeat is this old; its
   * unfinished jobs are then failed by any other API process.
   * @default 20
   */
  runnerTtlS?: number;
}

const CANCEL_POLL_MS = 500;

/** A job's webhook destination is refused already at submission (API.md additions: a 400). */
export class WebhookRefusedError extends Error {
  readonly code = 'webhook_refused';
  constructor(reason: string) {
    super(`webhook ${reason}`);
    this.name = 'WebhookRefusedError';
  }
}

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(10).toString('hex')}`;
}

export class JobsService {
  readonly store: JobStore;
  readonly events: JobEvents;
  readonly control: JobControlStore;
  readonly runnerId = newId('runner');
  readonly #d: JobsServiceDeps;
  readonly #running = new Map<string, { abort: AbortController; done: Promise<void>; control: LiveJobControl }>();
  readonly #timers: NodeJS.Timeout[] = [];

  constructor(deps: JobsServiceDeps) {
    this.#d = deps;
    const p = deps.pipeline;
    this.store = new JobStore(deps.redis, deps.keys, p.retentionS);
    this.control = new JobControlStore(deps.redis, deps.keys, p.retentionS);
    this.events = new JobEvents(deps.redis, deps.keys, { keep: p.eventsKeep, bodyBytes: p.bodyBytes, retentionS: p.retentionS });
  }

  #heartbeatKey(runner: string): string {
    return this.#d.keys.runner(runner);
  }

  /** Starts the heartbeat, cancel polling and orphan recovery (now and every TTL). */
  async start(): Promise<void> {
    const ttl = this.#d.runnerTtlS ?? 20;
    const beat = () => this.#d.redis.set(this.#heartbeatKey(this.runnerId), '1', 'EX', ttl)
      // Beats come every TTL/4, so the key outlives three missed ones.
      .catch((err: unknown) => log().warn({ err, runner: this.runnerId }, 'runner heartbeat not written'));
    await beat();
    const every = (ms: number, f: () => void) => {
      const t = setInterval(f, ms);
      t.unref();
      this.#timers.push(t);
    };
    every((ttl * 1000) / 4, () => void beat());
    // A cancel may arrive at another API process: it flags the job, the runner polls the flag.
    every(CANCEL_POLL_MS, () => {
      for (const [id, job] of this.#running) {
        void this.store.cancelRequested(id).then((c) => c && job.abort.abort('cancelled'))
          .catch((err: unknown) => withIds({ job_id: id }).warn({ err }, 'cancel flag not read; polled again shortly'));
        // Pause, resume and interrupts travel the same way (job-control.ts).
        void job.control.poll().catch((err: unknown) => withIds({ job_id: id }).warn({ err }, 'pause flag or messages not read; polled again shortly'));
      }
    });
    every(ttl * 1000, () => void this.recoverOrphans().catch((err: unknown) => log().error({ err }, 'orphan job recovery failed')));
    await this.recoverOrphans();
  }

  async recoverOrphans(): Promise<number> {
    let recovered = 0;
    for (const id of await this.store.list(10_000)) {
      const job = await this.store.get(id);
      if (!job || FINAL_JOB_STATUSES.has(job.view.status) || this.#running.has(id)) continue;
      if (job.runner && (await this.#d.redis.exists(this.#heartbeatKey(job.runner)))) continue;
      // A paused job's commands wait in a paused queue: nobody would ever resume it.
      if (job.view.status === 'paused' || (await this.control.pauseRequested(id))) await this.#d.pipeline.queues.resume(job.view.session_id);
      job.view.status = 'failed';
      job.view.error = 'the process running this job stopped before it finished';
      withIds({ job_id: id, session_id: job.view.session_id }).warn({ runner: job.runner }, 'the runner of this job is gone; marked failed');
      job.view.finished_at = new Date().toISOString();
      await this.events.finish(this.store.keyOf(id), job.view);
      await this.#d.pipeline.claims.releaseJob(job.view.session_id, id);
      recovered++;
    }
    return recovered;
  }

  /** @param opts.tightenOnly the job's policy comes from a submitter key: it may only tighten (POLICY.md §7) */
  async submit(request: JobRequest, owner: string | null, opts: { tightenOnly?: boolean } = {}): Promise<JobView> {
    if (request.webhook) {
      const refused = await this.#d.webhooks.refusal(request.webhook);
      if (refused) throw new WebhookRefusedError(refused);
    }
    const jobId = newId('job');
    const on = await openJobSession(this.#d, request, owner, jobId, opts.tightenOnly ?? false);
    const view: JobView = {
      job_id: jobId, session_id: on.sessionId, status: 'queued', task: request.task, project: on.settings.project,
      approval: on.settings.approval, flow: request.flow, limits: request.limits, model: this.#d.endpoint.model, model_source: this.#d.endpoint.source,
      turns: 0, api_calls: 0, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, commands: emptyCounts(),
      final_text: null, files_seeded: [], validate: request.validate ?? null, validation: request.validate ? { rounds: 0, passed: null } : null,
      error: null, changes: null, webhook: request.webhook ?? null, metadata: request.metadata ?? {},
      created_at: new Date().toISOString(), started_at: null, finished_at: null,
    };
    try {
      await this.store.create(view, owner, this.runnerId, on.fromSeq);
    } catch (err) {
      await this.#d.pipeline.claims.releaseJob(on.sessionId, jobId);
      throw err;
    }
    const submitted = { ...view };
    const abort = new AbortController();
    const timeout = setTimeout(() => abort.abort('timeout'), request.limits.timeout_s * 1000);
    const control = new LiveJobControl(this.control, jobId, (paused) => this.#pauseChanged(view, paused));
    const done = this.#run(view, request, on.ledgerFrom, abort.signal, control).finally(async () => {
      clearTimeout(timeout);
      this.#running.delete(jobId);
    });
    this.#running.set(jobId, { abort, done, control });
    return submitted;
  }

  async #run(view: JobView, request: JobRequest, ledgerFrom: number, signal: AbortSignal, control: LiveJobControl): Promise<void> {
    const logger = withIds({ job_id: view.job_id, session_id: view.session_id });
    const save = (v: JobView) => this.store.save(v).catch((err: unknown) => logger.error({ err }, 'saving the job view failed'));
    const emit = this.events.emitter(view.session_id, view.job_id);
    const pipeline = scopedPipeline(this.#d.pipeline, ledgerFrom);
    // The workspace's comparison (an executor request) starts as soon as the last turn's commands are final,
    // beside that turn's own end; dropped once another turn starts (a message steered the job on).
    const ahead: { counts: Promise<ChangeCounts | null> | null } = { counts: null };
    const onWorkspace = (state: 'changing' | 'settled') => {
      ahead.counts = state === 'settled' ? countChanges(this.#d.pipeline, view.session_id, logger) : null;
    };
    const final = await runJob({ pipeline, stream: this.#d.endpoint.stream, emit, save, control, onWorkspace }, view, request, signal);
    const counting = ahead.counts ?? countChanges(this.#d.pipeline, final.session_id, logger);
    // Independent: the pause flags and the workspace's comparison go out together.
    [, final.changes] = await Promise.all([this.#settleControl(final, control, logger), counting]);
    // The final state must land even across a Redis restart, or the job would
    // stay `running` with a live runner that no recovery would ever fail. The
    // session is freed only after it: a job submitted on it then starts after
    // this one's job_finished, whose recovery could otherwise end the new job's stream.
    await this.#persistently('writing the final job state', logger, () => this.events.finish(this.store.keyOf(final.job_id), final));
    await this.#persistently('freeing the session of the job', logger, () => this.#d.pipeline.claims.releaseJob(final.session_id, final.job_id));
    logger.info({ status: final.status, reason: final.error, api_calls: final.api_calls }, 'job finished');
    if (final.webhook) this.#d.webhooks.send(final.webhook, 'job_finished', { event: 'job_finished', job: final, links: jobLinks(final) }, final.job_id);
  }

  async #persistently(what: string, logger: Logger, step: () => Promise<void>): Promise<void> {
    for (let attempt = 1, delay = 200; ; attempt++, delay = Math.min(delay * 2, 10_000)) {
      try {
        return await step();
      } catch (err) {
        if (attempt >= 30) {
          logger.error({ err, attempt }, `${what}: giving up`);
          return;
        }
        logger.warn({ reason: reasonOf(err), attempt }, `${what}: retrying`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /** Cancel: the runner (here or in another API process) stops the model and skips the queue. */
  async cancel(id: string): Promise<void> {
    await this.store.requestCancel(id);
    this.#running.get(id)?.abort.abort('cancelled');
  }

  /** Steering: the text joins the job's next model call; `interrupt` also stops the current stream. Null when the job holds too many. */
  async message(job: JobView, text: string, interrupt: boolean): Promise<{ id: string } | null> {
    const added = await this.control.addMessage(job.job_id, text, interrupt);
    if (added) await this.events.append(job.session_id, job.job_id, 'message_added', { text, interrupt });
    return added;
  }

  /** From any process: the flag stops new model calls (runner) and the session's queue stops new commands (BullMQ, global). */
  async pause(job: JobView): Promise<void> {
    await this.#d.pipeline.queues.pause(job.session_id);
    await this.control.setPaused(job.job_id, true);
  }

  async resume(job: JobView): Promise<void> {
    await this.control.setPaused(job.job_id, false);
    await this.#d.pipeline.queues.resume(job.session_id);
  }

  /** The runner saw a pause or resume: the job's status and its event (the runner is the only writer of the view). */
  async #pauseChanged(view: JobView, paused: boolean): Promise<void> {
    // A resume can let the job finish before the next poll sees it: the event still precedes job_finished.
    if (!FINAL_JOB_STATUSES.has(view.status)) {
      view.status = paused ? 'paused' : 'running';
      await this.store.save(view);
    }
    await this.events.append(view.session_id, view.job_id, paused ? 'job_paused' : 'job_resumed', {});
  }

  /**
   * After the job: a resume not polled yet still gets its event; a job that
   * ended paused (cancelled, timed out) resumes its session's queue, so the
   * session stays usable.
   */
  async #settleControl(view: JobView, control: LiveJobControl, logger: Logger): Promise<void> {
    await control.poll().catch((err: unknown) => logger.warn({ err }, 'the last pause/resume poll failed'));
    if (!control.paused && !(await this.control.pauseRequested(view.job_id))) return;
    await this.#persistently('resuming the queue of a job that ended paused', logger, async () => {
      await this.control.setPaused(view.job_id, false);
      await this.#d.pipeline.queues.resume(view.session_id);
    });
  }

  /** Waits for a job run by this process (tests). */
  async settled(id: string): Promise<void> {
    await this.#running.get(id)?.done;
  }

  async close(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    for (const job of this.#running.values()) job.abort.abort('shutdown');
    await Promise.allSettled([...this.#running.values()].map((j) => j.done));
    await this.#d.webhooks.drain();
    // Left behind, the key expires after the TTL; until then other processes wait to recover our (now final) jobs.
    await this.#d.redis.del(this.#heartbeatKey(this.runnerId)).catch((err: unknown) => log().warn({ err, runner: this.runnerId }, 'runner heartbeat not removed'));
  }
}
