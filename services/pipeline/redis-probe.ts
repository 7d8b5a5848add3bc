import type { Cluster, Redis } from 'ioredis';
import { log } from '../log/index.ts';
import { connectRedis } from './redis.ts';

// Whether Redis answers, known within about a second, for the API's fast
// 503s and /readyz. The process's own connections wait through an outage on
// purpose (BullMQ needs `maxRetriesPerRequest: null`, and a ledger write
// must not be abandoned half-known), so they cannot tell: a stopped Redis
// leaves their sockets open and their commands unanswered. The probe has a
// connection of its own that fails fast instead (no offline queue, a
// command timeout) and PINGs on a short period; a closed socket counts at once.
// A PING unanswered in time counts only when this process was not itself
// stalled: under load its event loop can be blocked past the timeout with
// Redis's answer already waiting unread, and calling that an outage answered
// requests 503 `redis_unavailable` while Redis was fine (seen at 200 busy
// sessions on 2 cores).

export type RedisProbeOptions = {
  /** @default 500 */
  intervalMs?: number;
  /** a PING unanswered this long means Redis is unreachable. @default 1000 */
  timeoutMs?: number;
};

export type RedisState = { up: boolean; reason: string | null };

/** Checks this process was too stalled to judge still end in an outage once no PING was answered for this many timeouts. */
const SILENT_LIMIT = 3;

export class RedisProbe {
  readonly #conn: Redis | Cluster;
  readonly #watched: Redis[];
  readonly #timeoutMs: number;
  #up = false;
  #reason: string | null = 'not connected yet';
  /** when Redis last answered a PING of this probe, late answers included */
  #answeredAt = 0;
  #timer: NodeJS.Timeout | null = null;
  readonly #onDown = new Set<() => void>();

  /** `watched`: the process's own connections; one that is not `ready` (reconnecting) also counts as down. */
  constructor(url: string, name: string, watched: Redis[] = [], opts: RedisProbeOptions = {}) {
    this.#timeoutMs = opts.timeoutMs ?? 1000;
    this.#watched = watched;
    // Any REDIS_URL form: on a Cluster the PING goes to one of its masters.
    this.#conn = connectRedis(url, {
      // The PING's own timer judges; this only clears PINGs a stopped Redis never answers.
      connectionName: name, enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: Math.max(5000, 5 * this.#timeoutMs),
      connectTimeout: this.#timeoutMs, retryStrategy: () => 250, lazyConnect: true,
    });
    // Failures are what this connection exists to see: they set the state, logged once per change.
    this.#conn.on('error', (err: Error) => this.#down(err.message));
    this.#conn.on('close', () => this.#down('connection to Redis closed'));
    this.#conn.on('ready', () => void this.check());
    const every = opts.intervalMs ?? 500;
    this.#timer = setInterval(() => void this.check(), every);
    this.#timer.unref();
    this.#conn.connect().catch((err: Error) => this.#down(err.message));
  }

  get state(): RedisState {
    const lagging = this.#watched.find((r) => r.status !== 'ready');
    if (this.#up && lagging) return { up: false, reason: `a connection of this process is ${lagging.status}` };
    return { up: this.#up, reason: this.#up ? null : this.#reason };
  }

  /** PINGs now (bounded by the timeout) and returns the new state. */
  async check(): Promise<RedisState> {
    const verdict = await this.#ping();
    if (verdict === 'answered') {
      if (!this.#up) log().info('redis reachable');
      this.#up = true;
      this.#reason = null;
    } else if (verdict !== 'stalled') this.#down(verdict.message);
    else if (performance.now() - this.#answeredAt >= SILENT_LIMIT * this.#timeoutMs) {
      // Stalls alone never hide an outage for long: a live Redis answers between them (its answer is read first).
      this.#down(`no answer to PING for ${Math.round(performance.now() - this.#answeredAt)} ms`);
    }
    return this.state;
  }

  /**
   * One PING against its own timer. When the timer fires, one turn of the event loop first reads what already
   * arrived (a `setImmediate` runs after the poll phase); a timer that fired late by half the timeout or more means
   * this process was stalled, not Redis: no verdict (the next check gives one).
   */
  #ping(): Promise<'answered' | 'stalled' | Error> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (v: 'answered' | 'stalled' | Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(v);
      };
      const due = performance.now() + this.#timeoutMs;
      const timer = setTimeout(() => {
        const late = performance.now() - due;
        setImmediate(() => settle(late >= this.#timeoutMs / 2 ? 'stalled' : new Error(`no answer to PING within ${this.#timeoutMs} ms`)));
      }, this.#timeoutMs);
      this.#conn.ping().then(() => { this.#answeredAt = performance.now(); settle('answered'); }, (err: Error) => settle(err));
    });
  }

  /** Start-up: waits until Redis answered, at most `ms`, so a new process does not answer 503 while its probe still connects. */
  async settle(ms: number): Promise<RedisState> {
    const end = Date.now() + ms;
    while (!this.#up && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    return this.state;
  }

  /** Calls `f` each time Redis becomes unreachable; returns the unsubscribe. */
  onDown(f: () => void): () => void {
    this.#onDown.add(f);
    return () => this.#onDown.delete(f);
  }

  #down(reason: string): void {
    this.#reason = reason;
    if (!this.#up) return;
    this.#up = false;
    log().warn({ reason }, 'redis unreachable');
    for (const f of this.#onDown) f();
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#onDown.clear();
    this.#conn.disconnect();
  }
}

/**
 * True when a Redis command failed for want of a connection (closed, timed
 * out, or given up after retries): nothing is known of whether it ran.
 */
export function isRedisUnreachable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  return /^(Connection is closed\.|Command timed out|Stream isn't writeable)/.test(err.message);
}
