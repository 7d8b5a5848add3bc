import type { Keys } from './keys.ts';
import type { PipelineRedis } from './redis.ts';

// The global `busy` index: sessions that had non-final commands lately (the
// worker pool's reconcile opens Workers for them and prunes the idle ones a
// minute after their entry's score). On a Redis Cluster it is in a slot of its
// own, so it is written by its own ZADD *before* the record script instead of
// inside it: a crash between the two leaves an entry whose session has nothing
// open, which the reconcile prunes; never an open record the reconcile cannot
// see. A process marks a session at most once per MARK_EVERY_MS: that is below
// the reconcile's 60 s prune age, so an entry this process skipped refreshing
// is still there (no other path removes entries).

const MARK_EVERY_MS = 30_000;
/** sessions remembered per process; the oldest are forgotten first (a forgotten one is just marked again) */
const MAX_REMEMBERED = 10_000;

export class BusyIndex {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  /** session → when this process last marked it (insertion order = oldest first) */
  readonly #marked = new Map<string, number>();

  constructor(redis: PipelineRedis, keys: Keys) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /** Puts the session in the busy index (score = now) unless this process did so within MARK_EVERY_MS. */
  async mark(sid: string): Promise<void> {
    const now = Date.now();
    const at = this.#marked.get(sid);
    if (at !== undefined && now - at < MARK_EVERY_MS) return;
    await this.#redis.zadd(this.#keys.busy(), now, sid);
    this.#marked.delete(sid);
    this.#marked.set(sid, now);
    for (const [s, t] of this.#marked) {
      if (now - t < MARK_EVERY_MS && this.#marked.size <= MAX_REMEMBERED) break;
      this.#marked.delete(s);
    }
  }
}
