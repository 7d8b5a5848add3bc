import { randomBytes } from 'node:crypto';
import { withIds } from '../log/index.ts';
import { PipelineError } from './errors.ts';
import type { Keys } from './keys.ts';
import type { PipelineRedis } from './redis.ts';
import type { RunningJob } from './sessions.ts';

// A session runs one upload or one job at a time, and neither while another
// runs or a command is open (API.md: 409 `session_busy`). A claim is one
// atomic script (scripts/sessionClaim-2.lua) on fields of the session's meta
// hash, so two API processes racing cannot both win. An upload's claim
// expires unless renewed while it runs (a process that dies mid-upload frees
// the session by itself); a job's claim is released when the job ends, or by
// the recovery of a job whose runner died.

/** The claim of an upload outlives its last renewal by this much. */
const UPLOAD_TTL_MS = 60_000;

export type UploadClaim = { release(): Promise<void> };

const HELD_BY: Record<string, string> = {
  job: 'a job is running on the session',
  upload: 'an upload into the workspace is in progress',
  commands: 'commands of the session are queued or running',
};

export class SessionClaims {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;

  constructor(redis: PipelineRedis, keys: Keys) {
    this.#redis = redis;
    this.#keys = keys;
  }

  #run(sid: string, op: string, token: string, ttlMs = 0, job = ''): Promise<string> {
    const k = this.#keys;
    return this.#redis.sessionClaim(k.sessionMeta(sid), k.open(sid), op, token, ttlMs, job) as Promise<string>;
  }

  #refuse(sid: string, got: string): never {
    if (got === 'missing') throw new PipelineError('session_not_found', `session ${sid} not found`);
    if (got === 'deleted') throw new PipelineError('session_deleted', `session ${sid} was deleted`);
    throw new PipelineError('session_busy', `session ${sid} is busy: ${HELD_BY[got] ?? got}`, { session_id: sid, held_by: got });
  }

  /** Takes the session for an upload; renewed until release(). @throws PipelineError session_busy (409) */
  async claimUpload(sid: string): Promise<UploadClaim> {
    const token = randomBytes(16).toString('hex');
    const got = await this.#run(sid, 'claim_upload', token, UPLOAD_TTL_MS);
    if (got !== 'ok') this.#refuse(sid, got);
    const renew = setInterval(() => {
      // A missed renewal only shortens the claim; the next one (or the upload's end) follows.
      this.#run(sid, 'touch_upload', token, UPLOAD_TTL_MS)
        .catch((err: unknown) => withIds({ session_id: sid }).warn({ err }, 'upload claim not renewed'));
    }, UPLOAD_TTL_MS / 4);
    renew.unref();
    return {
      release: async () => {
        clearInterval(renew);
        await this.#run(sid, 'release_upload', token);
      },
    };
  }

  /** Takes the session for a job, with the settings it runs under. @throws PipelineError session_busy (409) */
  async claimJob(sid: string, job: RunningJob): Promise<void> {
    const got = await this.#run(sid, 'claim_job', job.job_id ?? '', 0, JSON.stringify(job));
    if (got !== 'ok') this.#refuse(sid, got);
  }

  /** Frees the session of this job (nothing when another holds it now). */
  async releaseJob(sid: string, jobId: string): Promise<void> {
    await this.#run(sid, 'release_job', jobId);
  }
}
