import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ApprovalMode } from '../policy/index.ts';
import type { Keys } from './keys.ts';
import { execMulti, type PipelineRedis } from './redis.ts';

// Session metadata in Redis, readable by every API and worker process. The
// fields set at creation never change, so processes may cache them;
// `deleted_at` is always re-read, and so is the job running on the session
// (session-claims.ts): a job on an existing session may bring its own
// project, approval mode and policy, which hold while it runs.

export const SessionMeta = z.object({
  session_id: z.string(),
  /** api key identity of the creator (null in dev mode) */
  owner: z.string().nullable(),
  project: z.string().nullable(),
  approval: ApprovalMode,
  /** the session policy layer as sent (validated at creation) */
  policy: z.unknown().nullable(),
  job_id: z.string().nullable(),
  created_at: z.string(),
  deleted_at: z.string().nullable(),
});
export type SessionMeta = z.infer<typeof SessionMeta>;

/** The session as a request reads it: with `paused_at` (ms) while a worker holds its container paused (pause-marks.ts). */
export type SessionState = SessionMeta & { paused_at?: number };

/** What a job running on the session sets (its id, and the settings it brings or keeps). */
export const RunningJob = SessionMeta.pick({ job_id: true, project: true, approval: true, policy: true });
export type RunningJob = z.infer<typeof RunningJob>;

export function newSessionId(): string {
  // 128 random bits, lower-case hex: URL-, key- and Docker-name-safe as is.
  return `ses_${randomBytes(16).toString('hex')}`;
}

export class Sessions {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  readonly #cache = new Map<string, SessionMeta>();
  /** the `running_job` last read per cached session (undefined: never read here) */
  readonly #jobs = new Map<string, string | null>();

  constructor(redis: PipelineRedis, keys: Keys) {
    this.#redis = redis;
    this.#keys = keys;
  }

  async create(input: Omit<SessionMeta, 'session_id' | 'created_at' | 'deleted_at'> & { session_id?: string }): Promise<SessionMeta> {
    const meta: SessionMeta = {
      ...input,
      session_id: input.session_id ?? newSessionId(),
      created_at: new Date().toISOString(),
      deleted_at: null,
    };
    // Together (one round trip): NX leaves an existing id's entry as it was, for the refusal below.
    const [created] = await Promise.all([
      this.#redis.hsetnx(this.#keys.sessionMeta(meta.session_id), 'json', JSON.stringify(meta)),
      this.#redis.zadd(this.#keys.sessions(), 'NX', Date.now(), meta.session_id),
    ]);
    if (!created) throw new Error(`session ${meta.session_id} already exists`);
    this.#cache.set(meta.session_id, meta);
    return meta;
  }

  /** The session's immutable part as this process last read or made it (its owner, say); null when not cached. */
  remembered(sid: string): SessionMeta | null {
    return this.#cache.get(sid) ?? null;
  }

  /**
   * The session as it runs now: the cached immutable part with the running
   * job's settings over it (read on every call). Pass fresh=true when
   * `deleted_at` matters.
   */
  async get(sid: string, fresh = false): Promise<SessionState | null> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(sid)) return null;
    const key = this.#keys.sessionMeta(sid);
    const hit = fresh ? undefined : this.#cache.get(sid);
    if (hit) {
      const [job, paused] = await this.#redis.hmget(key, 'running_job', 'paused_at');
      this.#jobs.set(sid, job ?? null);
      return withPause(withJob(hit, job ?? null), paused ?? null);
    }
    const [raw, deleted, job, paused] = await this.#redis.hmget(key, 'json', 'deleted_at', 'running_job', 'paused_at');
    if (!raw) return null;
    const full = { ...SessionMeta.parse(JSON.parse(raw)), deleted_at: deleted ?? null };
    if (this.#cache.size > 10_000) {
      this.#cache.clear();
      this.#jobs.clear();
    }
    this.#cache.set(sid, full);
    this.#jobs.set(sid, job ?? null);
    return withPause(withJob(full, job ?? null), paused ?? null);
  }

  /**
   * The session as this process last read it, for an enqueue that reads
   * nothing first: createRecord refuses it when the session is deleted or
   * another job runs on it now (`jobGuard`), and the caller decides again with
   * the job it names (`sawJob`). Null when not cached.
   */
  assumed(sid: string): { session: SessionMeta; job: string | null } | null {
    const hit = this.#cache.get(sid);
    const job = this.#jobs.get(sid);
    return hit && job !== undefined ? { session: withJob(hit, job), job } : null;
  }

  /** Drops what this process remembers of the session (createRecord found it gone): the next read is a fresh one. */
  forget(sid: string): void {
    this.#cache.delete(sid);
    this.#jobs.delete(sid);
  }

  /** `job`: the running_job Redis holds now (createRecord said so); null when the session is not cached. */
  sawJob(sid: string, job: string | null): { session: SessionMeta; job: string | null } | null {
    if (!this.#cache.has(sid)) return null;
    this.#jobs.set(sid, job);
    return this.assumed(sid);
  }

  /** The session, whether it is deleted now and the job running on it (its `running_job` JSON): one read when cached. */
  async getLive(sid: string): Promise<{ session: SessionMeta; deleted: boolean; job: string | null } | null> {
    const hit = this.#cache.get(sid);
    if (!hit) {
      const session = await this.get(sid, true);
      return session ? { session, deleted: session.deleted_at !== null, job: this.#jobs.get(sid) ?? null } : null;
    }
    const [job, deleted] = await this.#redis.hmget(this.#keys.sessionMeta(sid), 'running_job', 'deleted_at');
    this.#jobs.set(sid, job ?? null);
    return { session: withJob(hit, job ?? null), deleted: deleted !== null && deleted !== undefined, job: job ?? null };
  }

  /** The session with its `running_job` field as the caller just read it (the worker, with the record): no read when cached. */
  async withRunningJob(sid: string, job: string | null): Promise<SessionMeta | null> {
    const hit = this.#cache.get(sid);
    return hit ? withJob(hit, job) : this.get(sid);
  }

  async markDeleted(sid: string): Promise<void> {
    await this.#redis.hset(this.#keys.sessionMeta(sid), 'deleted_at', new Date().toISOString());
    this.#cache.delete(sid);
    this.#jobs.delete(sid);
  }

  /** Undoes markDeleted() when the delete could not finish (its sandbox is still there). */
  async unmarkDeleted(sid: string): Promise<void> {
    await this.#redis.hdel(this.#keys.sessionMeta(sid), 'deleted_at');
    this.#cache.delete(sid);
    this.#jobs.delete(sid);
  }

  /** Its DELETE finished: marked deleted, and its keys carry the retention TTL (session-delete.ts, retention.ts). */
  async deleteFinished(sid: string): Promise<boolean> {
    const meta = this.#keys.sessionMeta(sid);
    const [deleted, ttl] = await execMulti(this.#redis.multi().hexists(meta, 'deleted_at').pttl(meta));
    return deleted === 1 && Number(ttl) > 0;
  }

  async isDeleted(sid: string): Promise<boolean> {
    return (await this.#redis.hexists(this.#keys.sessionMeta(sid), 'deleted_at')) === 1;
  }
}

/** Parsed `running_job` values by their JSON: a job's settings are read once per command, parsed once per job. */
const parsedJobs = new Map<string, RunningJob>();
const jobGuards = new Map<string, string>();

/** What createRecord compares with the session's `running_job` (its SHA-1; '' = no job). */
export function jobGuard(job: string | null): string {
  if (!job) return '';
  let guard = jobGuards.get(job);
  if (!guard) {
    guard = createHash('sha1').update(job).digest('hex');
    if (jobGuards.size > 1000) jobGuards.clear();
    jobGuards.set(job, guard);
  }
  return guard;
}

function withPause(meta: SessionMeta, pausedAt: string | null): SessionState {
  return pausedAt ? { ...meta, paused_at: Number(pausedAt) } : meta;
}

function withJob(meta: SessionMeta, job: string | null): SessionMeta {
  if (!job) return meta;
  let parsed = parsedJobs.get(job);
  if (!parsed) {
    parsed = RunningJob.parse(JSON.parse(job));
    if (parsedJobs.size > 1000) parsedJobs.clear();
    parsedJobs.set(job, parsed);
  }
  return { ...meta, ...parsed };
}
