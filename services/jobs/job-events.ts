import { EventWriter, type EventBody, type JobEmit, type Keys, type PipelineRedis, type RunnerEvent } from '../pipeline/index.ts';

// The job's side of the session's event stream. The events themselves are the
// pipeline's (one union, one writer, numbered from one counter per session, so
// a job's SSE is one ordered stream replayable from any Last-Event-ID); what
// this adds is the job: `job_finished`, then the job's final view.

export type RunnerEventType = RunnerEvent['type'];
/** What the runner says with an event of type T (the log adds seq, ids and time). */
export type RunnerEventFields<T extends RunnerEventType> = Omit<Extract<RunnerEvent, { type: T }>, 'type'>;

export class JobEvents {
  readonly #writer: EventWriter;
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;

  readonly #retentionS: number;

  /** The pipeline's settings: events kept (THINKFLOW_EVENTS_KEEP), bodies kept, retention of a finished job. */
  constructor(redis: PipelineRedis, keys: Keys, o: { keep: number; bodyBytes: number; retentionS: number }) {
    this.#writer = new EventWriter(redis, keys, o.keep, o.bodyBytes);
    this.#redis = redis;
    this.#keys = keys;
    this.#retentionS = o.retentionS;
  }

  /** One of the runner's events; returns its seq. */
  append<T extends RunnerEventType>(sessionId: string, jobId: string, type: T, data: RunnerEventFields<T>): Promise<number> {
    return this.#writer.append(sessionId, jobId, { type, ...data } as unknown as EventBody); // T is one member of the union: TS cannot narrow a generic spread;
  }

  /** The runner's writer for one job: `emit({ type: 'turn_started', turn, api_call })`. */
  emitter(sessionId: string, jobId: string): JobEmit {
    return this.#writer.emitter(sessionId, jobId);
  }

  /**
   * Writes the job's `job_finished` event, then its final view. They live in
   * different slots of a Redis Cluster (session, job), so not one MULTI: the
   * event comes first because a crash between leaves a job that is not final
   * with its runner gone, which JobsService.recoverOrphans finishes; the other
   * order could leave a final job whose stream never ends.
   * The job's record expires THINKFLOW_RETENTION_S after it (its session's keys when the session is deleted).
   */
  async finish(jobKey: string, view: { session_id: string; job_id: string; status: string }): Promise<void> {
    await this.#writer.append(view.session_id, view.job_id, { type: 'job_finished', job: view } as unknown as EventBody);
    const results = await this.#redis.multi().hset(jobKey, 'data', JSON.stringify(view)).expire(jobKey, this.#retentionS)
      .publish(this.#keys.jobChanges(), view.job_id).exec();
    const failed = results?.find(([err]) => err);
    if (!results || failed) throw failed?.[0] ?? new Error('MULTI was discarded');
  }
}
