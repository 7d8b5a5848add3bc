import { log, withIds } from '../log/index.ts';
import { ensureBaseline } from './baseline.ts';
import type { Keys } from './keys.ts';
import type { PipelineRedis } from './redis.ts';
import type { Sandboxes } from './sandboxes.ts';
import { newSessionId } from './sessions.ts';

// Sandboxes made before they are needed (THINKFLOW_WARM_POOL per worker
// process). A warm sandbox is an ordinary session sandbox, hardened and with
// its own fresh workspace, made for a session id that no session holds yet:
// the id waits in one Redis list, and a new session takes it with LPOP, which
// hands each id to exactly one caller. So nothing is relabelled or renamed at
// hand-over, a warm container is never seen by two sessions, and one that is
// never taken is removed like any session's sandbox:
//   - the worker that made it, at shutdown (LREM first: one that was taken meanwhile is the session's);
//   - a surviving worker, when the maker died (WorkerLiveness calls dropDead);
//   - its maker, when an id was taken but no session came of it (the taker failed or died).
// The maker keeps its warm sandboxes in use (so neither the idle pause nor the
// reaper touch them) and refills as ids are taken, seen on a wake message (a
// new session's first command publishes one) or every `checkMs`: once the
// takes and this worker's commands pause for `settleMs`, so a burst's (or a
// job's) commands do not share the CPU with the containers made to replace its sandboxes.

export type WarmSandboxes = {
  /** opens the session's sandbox (container, workspace, executor) and takes its baseline, as its first command would */
  prewarm(sessionId: string): Promise<void>;
  /** marks it in use (an open sandbox: no Docker call) */
  touch(sessionId: string): Promise<void>;
  remove(sessionId: string): Promise<void>;
};

/** The pool's view of the sandboxes; null where they cannot be opened ahead (an API process's remote calls, test fakes). */
export function warmSandboxesOf(sandboxes: Sandboxes): WarmSandboxes | null {
  const open = sandboxes.open?.bind(sandboxes);
  if (!open) return null;
  return {
    prewarm: async (sid) => { await open(sid); await ensureBaseline(sandboxes, sid); },
    touch: open,
    remove: (sid) => sandboxes.remove(sid),
  };
}

export type WarmPoolDeps = {
  redis: PipelineRedis;
  keys: Keys;
  sandboxes: WarmSandboxes;
  /** this worker process's id (worker-liveness.ts): the owner written beside each id */
  processId: string;
  /** when a warm sandbox is ready, and again while it waits: the worker keeps the id's queue Worker open for its first command */
  onReady?: (sessionId: string) => Promise<void>;
  /**
   * When this worker last ran a command (`Date.now()` while one runs): a refill also waits for that to be `settleMs`
   * old, so the containers it starts do not take the CPU from the commands and job ends of the sessions just handed over.
   */
  lastWorkAt?: () => number;
};

export type WarmPoolOptions = {
  /** THINKFLOW_WARM_POOL: warm sandboxes this process keeps ready; 0 = none */
  size: number;
  /** @default 1000 */
  checkMs?: number;
  /** an id taken this long ago with no session behind it is removed. @default 60000 */
  orphanAfterMs?: number;
  /** refills wait until no id was taken for this long (a burst is over). @default 300 */
  settleMs?: number;
  /** ...but never longer than this after the first take they waited for (a steady trickle of sessions). @default 3000 */
  maxSettleMs?: number;
  /**
   * Waiting sandboxes are marked in use (and their queue Worker kept open) this often: below half of the worker idle
   * time, the idle pause and the idle stop, so none of them takes a warm sandbox for idle. @default 5000
   */
  touchMs?: number;
};

/** A warm sandbox's entry (`<sid> <maker>`) when one is ready: the caller's new session starts on it, or it gives it back. */
export async function takeWarm(redis: PipelineRedis, keys: Keys): Promise<{ sid: string; entry: string } | null> {
  const entry = await redis.lpop(keys.warmIds());
  return entry ? { sid: sidOf(entry), entry } : null;
}

/** A taken warm entry whose session was not made: listed again, first, unless a session holds the id after all. */
export async function giveBackWarm(redis: PipelineRedis, keys: Keys, taken: { sid: string; entry: string }): Promise<void> {
  if (await redis.exists(keys.sessionMeta(taken.sid))) return;
  await redis.lpush(keys.warmIds(), taken.entry);
}

const entryOf = (sid: string, owner: string) => `${sid} ${owner}`;
const sidOf = (entry: string) => entry.slice(0, entry.indexOf(' '));

export class WarmPool {
  readonly #d: WarmPoolDeps;
  readonly #size: number;
  readonly #checkMs: number;
  readonly #orphanAfterMs: number;
  /** ids this process made: null while listed, else when it saw them taken */
  readonly #mine = new Map<string, number | null>();
  #filling = 0;
  readonly #settleMs: number;
  readonly #maxSettleMs: number;
  readonly #touchMs: number;
  /** when this process last saw an id taken, and when the refill it holds back started waiting */
  #lastTakeAt = 0;
  #waitingSince: number | null = null;
  #settleTimer: NodeJS.Timeout | null = null;
  #lastTouchAt = 0;
  #timer: NodeJS.Timeout | null = null;
  #checking: Promise<void> | null = null;
  #again = false;
  #closed = false;

  constructor(deps: WarmPoolDeps, opts: WarmPoolOptions) {
    this.#d = deps;
    this.#size = opts.size;
    this.#checkMs = opts.checkMs ?? 1000;
    this.#orphanAfterMs = opts.orphanAfterMs ?? 60_000;
    this.#settleMs = opts.settleMs ?? 300;
    this.#maxSettleMs = opts.maxSettleMs ?? 3000;
    this.#touchMs = opts.touchMs ?? 5000;
  }

  /** Warm ids of this process not taken yet (tests, metrics). */
  get ready(): number {
    return [...this.#mine.values()].filter((v) => v === null).length;
  }

  start(): void {
    if (this.#size <= 0) return;
    this.#timer = setInterval(() => this.poke(), this.#checkMs);
    this.#timer.unref();
    this.poke();
  }

  /** Checks soon (an id may just have been taken); calls during a check run one more after it. */
  poke(): void {
    if (this.#closed || this.#size <= 0) return;
    if (this.#checking) { this.#again = true; return; }
    this.#checking = this.#check()
      .catch((err: unknown) => log().warn({ err }, 'warm pool: a check failed; the next one tries again'))
      .finally(() => {
        this.#checking = null;
        if (this.#again) { this.#again = false; this.poke(); }
      });
  }

  /**
   * A wake message (published on every enqueue): a check only when it names one of this process's warm ids, i.e. a
   * new session's first command on it. Any other session's command costs the pool nothing; the periodic check sees
   * ids taken by a session that has not run a command yet.
   */
  wake(sessionId: string): void {
    if (this.#mine.has(sessionId)) this.poke();
  }

  /** Resolves once the pool holds its size (tests and benchmarks wait for a full pool). */
  async filled(timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.ready < this.#size) {
      if (Date.now() > until) throw new Error(`warm pool: ${this.ready} of ${this.#size} ready after ${timeoutMs} ms`);
      this.poke();
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async #check(): Promise<void> {
    const { redis, keys } = this.#d;
    const listed = new Set((await redis.lrange(keys.warmIds(), 0, -1)).map(sidOf));
    const now = Date.now();
    // Those waiting are kept in use (never paused or reaped) every touchMs, not on every check: a burst's checks do no
    // work for them. One that cannot be touched is logged; the others still are.
    const touchAll = now - this.#lastTouchAt >= this.#touchMs;
    const taken: string[] = [];
    for (const [sid, takenAt] of this.#mine) {
      if (listed.has(sid)) {
        if (takenAt === null && !touchAll) continue;
        this.#mine.set(sid, null); // or given back by a create that failed
        await this.#touch(sid);
      } else {
        if (takenAt === null) { this.#mine.set(sid, now); this.#lastTakeAt = now; }
        taken.push(sid);
      }
    }
    if (touchAll) this.#lastTouchAt = now;
    await this.#settleTaken(taken, now);
    // Never more than the size: those being made count, and so do those taken that are not a session yet (a create that
    // fails gives its id back; one that died leaves it until orphanAfterMs), so failing creates cannot make containers
    // without end. After a burst every missing one is made at once.
    const missing = this.#size - this.#mine.size - this.#filling;
    if (missing <= 0 || this.#holdRefill(now)) return;
    await Promise.all(Array.from({ length: missing }, () => this.#fillOne()));
  }

  async #touch(sid: string): Promise<void> {
    try {
      await this.#d.sandboxes.touch(sid);
      await this.#d.onReady?.(sid);
    } catch (err) {
      withIds({ session_id: sid }).warn({ err }, 'warm pool: a waiting sandbox could not be marked in use; the next touch tries again');
    }
  }

  /**
   * While ids are being taken (a burst of new sessions), a refill would start containers, each about half a second of
   * the host's CPU, beside the burst's first commands; it waits until the takes stop for `settleMs`, and this worker's
   * commands too (`lastWorkAt`: a job handed a warm sandbox runs its commands and then reads its workspace's changes
   * right after), at most `maxSettleMs`, then makes every missing one.
   */
  #holdRefill(now: number): boolean {
    const waited = now - (this.#waitingSince ?? now);
    const quietSince = Math.max(this.#lastTakeAt, this.#d.lastWorkAt?.() ?? 0);
    if (now - quietSince >= this.#settleMs || waited >= this.#maxSettleMs) {
      this.#waitingSince = null;
      return false;
    }
    this.#waitingSince ??= now;
    if (!this.#settleTimer && !this.#closed) {
      const wait = Math.max(10, Math.min(quietSince + this.#settleMs, this.#waitingSince + this.#maxSettleMs) - now);
      this.#settleTimer = setTimeout(() => { this.#settleTimer = null; this.poke(); }, wait);
      this.#settleTimer.unref();
    }
    return true;
  }

  /** Ids taken earlier: a session's now (this process forgets them), or removed once no session came of them. */
  async #settleTaken(taken: string[], now: number): Promise<void> {
    const { redis, keys, processId } = this.#d;
    // A session's now. Its sandbox stays open here too (this process may be the one running it); the idle pause asks
    // the executor, which every worker's use reaches, before it pauses (sandbox/idle-pause.ts).
    const held = await Promise.all(taken.map((sid) => redis.exists(keys.sessionMeta(sid))));
    for (const [i, sid] of taken.entries()) {
      if (held[i]) { this.#mine.delete(sid); continue; }
      if (now - this.#mine.get(sid)! <= this.#orphanAfterMs) continue;
      this.#mine.delete(sid);
      withIds({ session_id: sid }).warn({ worker: processId }, 'warm pool: an id was taken but no session came of it; its sandbox is removed');
      await this.#d.sandboxes.remove(sid);
    }
  }

  async #fillOne(): Promise<void> {
    const sid = newSessionId();
    this.#filling += 1;
    try {
      await this.#d.sandboxes.prewarm(sid);
      if (this.#closed) { await this.#d.sandboxes.remove(sid); return; }
      await this.#d.onReady?.(sid);
      this.#mine.set(sid, null);
      await this.#d.redis.rpush(this.#d.keys.warmIds(), entryOf(sid, this.#d.processId));
    } catch (err) {
      this.#mine.delete(sid);
      withIds({ session_id: sid }).warn({ err }, 'warm pool: a warm sandbox could not be made');
      await this.#d.sandboxes.remove(sid).catch((e: unknown) => withIds({ session_id: sid }).error({ err: e }, 'warm pool: a half-made warm sandbox could not be removed'));
    } finally {
      this.#filling -= 1;
    }
  }

  /** A dead worker's warm ids: those still listed are removed from the list, then their sandboxes (here, when on this engine). */
  async dropDead(dead: string): Promise<void> {
    const entries = (await this.#d.redis.lrange(this.#d.keys.warmIds(), 0, -1)).filter((e) => e.endsWith(` ${dead}`));
    await Promise.all(entries.map((e) => this.#unlist(e)));
  }

  /** Stops refilling; every warm id still listed is withdrawn and its sandbox removed. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    if (this.#settleTimer) clearTimeout(this.#settleTimer);
    await this.#checking; // a check running now arms no new timer (closed)
    const { redis, keys, processId } = this.#d;
    const own = [...this.#mine].filter(([, takenAt]) => takenAt === null).map(([sid]) => entryOf(sid, processId));
    await Promise.all(own.map((e) => this.#unlist(e)));
    // Taken with no session (yet): only this process knows of them, so they go now unless a session came of them.
    for (const [sid, takenAt] of this.#mine) {
      if (takenAt === null || (await redis.exists(keys.sessionMeta(sid)))) continue;
      this.#mine.delete(sid);
      await this.#d.sandboxes.remove(sid);
    }
  }

  async #unlist(entry: string): Promise<void> {
    const sid = sidOf(entry);
    // LREM wins or loses against a taker's LPOP: an id is either a session's or removed here, never both.
    if ((await this.#d.redis.lrem(this.#d.keys.warmIds(), 1, entry)) !== 1) return;
    this.#mine.delete(sid);
    await this.#d.sandboxes.remove(sid);
  }
}
