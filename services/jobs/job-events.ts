import { appendEventArgs } from '../pipeline/events.ts';
import type { Keys } from '../pipeline/keys.ts';
import { jobKeys } from './job-store.ts';
import type { PipelineRedis } from '../pipeline/redis.ts';

// The runner's events (turn_started, reasoning_delta, text_delta,
// command_parsed, parse_error, turn_ended, job_finished) go into the session's
// event stream, numbered with the pipeline's own counter: a job's SSE is then
// one ordered stream, replayable from any Last-Event-ID by any API process.

export const JOB_EVENT_TYPES = ['turn_started', 'reasoning_delta', 'text_delta', 'command_parsed', 'parse_error', 'turn_ended', 'job_finished'] as const;
export type JobEventType = (typeof JOB_EVENT_TYPES)[number];

export class JobEvents {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  readonly #keep: number;

  /** `keep`: events kept per session stream, 0 = all (THINKFLOW_EVENTS_KEEP). */
  constructor(redis: PipelineRedis, keys: Keys, keep = 0) {
    this.#redis = redis;
    this.#keys = keys;
    this.#keep = keep;
  }

  async append(sessionId: string, jobId: string, type: JobEventType, data: Record<string, unknown> = {}): Promise<number> {
    return Number(await this.#redis.appendEvent(...this.#args(sessionId, jobId, type, data)));
  }

  /**
   * Writes the job's final view and its `job_finished` event in one MULTI, so
   * no reader ever sees a final job without its last event, or the reverse.
   */
  async finish(jobKey: string, view: { session_id: string; job_id: string }): Promise<void> {
    const multi = this.#redis.multi().hset(jobKey, 'data', JSON.stringify(view))
      .publish(jobKeys(this.#keys.prefix).changes(), view.job_id) as unknown as { appendEvent(...a: (string | number)[]): { exec(): Promise<unknown> } };
    const results = (await multi.appendEvent(...this.#args(view.session_id, view.job_id, 'job_finished', { job: view })).exec()) as Array<[Error | null, unknown]> | null;
    const failed = results?.find(([err]) => err);
    if (!results || failed) throw failed?.[0] ?? new Error('MULTI was discarded');
  }

  #args(sessionId: string, jobId: string, type: JobEventType, data: Record<string, unknown>): (string | number)[] {
    return appendEventArgs(this.#keys, sessionId, type, { session_id: sessionId, job_id: jobId, at: new Date().toISOString(), ...data }, this.#keep);
  }
}
