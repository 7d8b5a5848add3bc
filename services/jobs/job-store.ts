import type { Redis } from 'ioredis';
import type { Keys } from '../pipeline/index.ts';
import { JobView } from './job-schemas.ts';
import type { WebhookDelivery } from './job-schemas.ts';

// Jobs in Redis: one hash per job (`data` = the JobView JSON, `owner`,
// `cancel`, `pause`), and a zset of all jobs by creation time. The job's runner is the
// only writer of `data`; cancel requests go to their own field so they never
// race it. Keys are pipeline/keys.ts's (a job's own keys share the tag
// `{j:<id>}`; the jobs list is a global index, written apart from them).

/** `fromSeq`: the session's events before the job (a job on an existing session streams the ones after). */
export type StoredJob = { view: JobView; owner: string | null; cancelRequested: boolean; runner: string | null; fromSeq: number };

const PRUNE_BATCH = 20;
/** Past any clock skew between API hosts and any creation's round trips; far below a job's retention. */
const PRUNE_AFTER_MS = 10 * 60 * 1000;

export class JobStore {
  readonly #redis: Redis;
  readonly #keys: Keys;
  /** THINKFLOW_RETENTION_S: webhook deliveries (sent once the job is final) expire with the job */
  readonly #retentionS: number;

  constructor(redis: Redis, keys: Keys, retentionS: number) {
    this.#redis = redis;
    this.#keys = keys;
    this.#retentionS = retentionS;
  }

  // The list entry goes first (its own slot on a Cluster, so not in the
  // job's MULTI): a crash between the two leaves an entry without a job, which
  // readers skip and #pruneList drops, never a job the list misses.
  async create(view: JobView, owner: string | null, runner: string, fromSeq = 0): Promise<void> {
    await this.#redis.zadd(this.#keys.jobs(), Date.parse(view.created_at), view.job_id);
    // The prune beside the job's own write (its round trips are not on the submission's path).
    await Promise.all([
      this.#redis
        .multi()
        .hset(this.#keys.job(view.job_id), { data: JSON.stringify(view), owner: owner ?? '', cancel: '0', runner, from_seq: String(fromSeq) })
        .publish(this.#keys.jobChanges(), view.job_id)
        .exec(),
      this.#pruneList(),
    ]);
  }

  // A job's hash expires after the retention, its place in the list would
  // not: each new job drops the oldest places whose job is gone, so the list
  // holds the jobs that exist (and a few) however many were ever made. Only
  // places older than PRUNE_AFTER_MS: a younger one may be a job whose record
  // is still on its way (this process's or another's), which must stay listed.
  async #pruneList(): Promise<void> {
    const oldest = await this.#redis.zrangebyscore(this.#keys.jobs(), '-inf', `(${Date.now() - PRUNE_AFTER_MS}`, 'LIMIT', 0, PRUNE_BATCH);
    if (oldest.length === 0) return;
    // One EXISTS each (one socket write): the jobs live in different slots.
    const found = await Promise.all(oldest.map((id) => this.#redis.exists(this.#keys.job(id))));
    const gone = oldest.filter((_, i) => found[i] === 0);
    if (gone.length > 0) await this.#redis.zrem(this.#keys.jobs(), ...gone);
  }

  async get(id: string): Promise<StoredJob | null> {
    if (!/^job_[A-Za-z0-9]{1,64}$/.test(id)) return null;
    const h = await this.#redis.hgetall(this.#keys.job(id));
    if (!h.data) return null;
    return { view: JobView.parse(JSON.parse(h.data)), owner: h.owner || null, cancelRequested: h.cancel === '1', runner: h.runner || null, fromSeq: Number(h.from_seq ?? 0) };
  }

  /** Appends one webhook delivery attempt (a list, so concurrent attempts never overwrite each other). */
  async recordDelivery(id: string, delivery: WebhookDelivery): Promise<void> {
    const key = this.#keys.jobDeliveries(id);
    const out = await this.#redis.multi().rpush(key, JSON.stringify(delivery)).expire(key, this.#retentionS).exec();
    const failed = out?.find(([err]) => err);
    if (!out || failed) throw failed?.[0] ?? new Error('MULTI was discarded');
  }

  async deliveries(id: string): Promise<WebhookDelivery[]> {
    return (await this.#redis.lrange(this.#keys.jobDeliveries(id), 0, -1)).map((d) => JSON.parse(d) as WebhookDelivery);
  }

  keyOf(id: string): string {
    return this.#keys.job(id);
  }

  async save(view: JobView): Promise<void> {
    await this.#redis.multi().hset(this.#keys.job(view.job_id), 'data', JSON.stringify(view)).publish(this.#keys.jobChanges(), view.job_id).exec();
  }

  /** The channel on which every write of a job's view is announced (payload: job id). */
  changesChannel(): string {
    return this.#keys.jobChanges();
  }

  async requestCancel(id: string): Promise<void> {
    await this.#redis.hset(this.#keys.job(id), 'cancel', '1');
  }

  async cancelRequested(id: string): Promise<boolean> {
    return (await this.#redis.hget(this.#keys.job(id), 'cancel')) === '1';
  }

  /** Job ids, newest first. */
  async list(limit = 100): Promise<string[]> {
    return this.#redis.zrevrange(this.#keys.jobs(), 0, limit - 1);
  }
}
