import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ApprovalMode } from '../policy/index.ts';
import type { Keys } from './keys.ts';
import type { PipelineRedis } from './redis.ts';

// Session metadata in Redis, readable by every API and worker process. The
// fields that decide execution (approval mode, project, policy) never change
// after creation, so processes may cache them; `deleted_at` is always re-read.

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

export function newSessionId(): string {
  // 128 random bits, lower-case hex: URL-, key- and Docker-name-safe as is.
  return `ses_${randomBytes(16).toString('hex')}`;
}

export class Sessions {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  readonly #cache = new Map<string, SessionMeta>();

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
    const created = await this.#redis.hsetnx(this.#keys.sessionMeta(meta.session_id), 'json', JSON.stringify(meta));
    if (!created) throw new Error(`session ${meta.session_id} already exists`);
    await this.#redis.zadd(this.#keys.sessions(), Date.now(), meta.session_id);
    this.#cache.set(meta.session_id, meta);
    return meta;
  }

  /** Cached immutable part; pass fresh=true when `deleted_at` matters. */
  async get(sid: string, fresh = false): Promise<SessionMeta | null> {
    if (!fresh) {
      const hit = this.#cache.get(sid);
      if (hit) return hit;
    }
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(sid)) return null;
    const raw = await this.#redis.hget(this.#keys.sessionMeta(sid), 'json');
    if (!raw) return null;
    const meta = SessionMeta.parse(JSON.parse(raw));
    const deleted = await this.#redis.hget(this.#keys.sessionMeta(sid), 'deleted_at');
    const full = { ...meta, deleted_at: deleted ?? null };
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(sid, full);
    return full;
  }

  async markDeleted(sid: string): Promise<void> {
    await this.#redis.hset(this.#keys.sessionMeta(sid), 'deleted_at', new Date().toISOString());
    this.#cache.delete(sid);
  }

  /** Undoes markDeleted() when the delete could not finish (its sandbox is still there). */
  async unmarkDeleted(sid: string): Promise<void> {
    await this.#redis.hdel(this.#keys.sessionMeta(sid), 'deleted_at');
    this.#cache.delete(sid);
  }

  async isDeleted(sid: string): Promise<boolean> {
    return (await this.#redis.hexists(this.#keys.sessionMeta(sid), 'deleted_at')) === 1;
  }
}
