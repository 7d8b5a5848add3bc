import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { log, reasonOf } from '../log/index.ts';
import type { StreamCaps } from './stream-caps.ts';

// A "state + changes" Server-Sent Events stream: each connection first gets a
// `snapshot` of the whole state it shows, then one event per change. A client
// that reconnects gets a fresh snapshot, so nothing is missed across a drop
// (these streams span many sessions, which have no common seq to resume from).

/** A stream's events: a union discriminated on `event` (live-events.ts). */
export type FeedEvent = { event: string; data: unknown };
/** Sends one event: only a member of the stream's union, with that member's data. */
export type Push<E extends FeedEvent> = <K extends E['event']>(event: K, data: Extract<E, { event: K }>['data']) => void;
type Write = (event: string, data: unknown) => void;

const KEEP_ALIVE_MS = 15_000;

export function streamFeed<E extends FeedEvent>(
  c: Context,
  opts: {
    /** Start listening for changes; resolves once listening (the snapshot is read after). */
    listen: (push: Push<E>) => Promise<() => void>;
    snapshot: () => Promise<Extract<E, { event: 'snapshot' }>['data']>;
    label: string;
    /** the per-key cap on open streams (THINKFLOW_MAX_STREAMS_PER_KEY) */
    streams: StreamCaps;
  },
): Response {
  const release = opts.streams.acquire((c.var as { principal: { id: string } }).principal.id);
  return streamSSE(c, async (stream) => {
    // Registered first, so a client gone during the snapshot still ends the stream.
    let ended!: () => void;
    const gone = new Promise<void>((resolve) => { ended = resolve; });
    stream.onAbort(() => ended());
    let chain: Promise<unknown> = Promise.resolve();
    let n = 0;
    // Writes are chained so events leave in the order they were pushed.
    const push: Write = (event, data) => {
      chain = chain.then(async () => {
        if (stream.aborted) return;
        await stream.writeSSE({ id: String(++n), event, data: JSON.stringify(data) });
      }).catch((err: unknown) => log().warn({ stream: opts.label, event, reason: reasonOf(err) }, 'live feed: write failed'));
    };
    const held: [string, unknown][] = [];
    let live = false;
    const stop = await opts.listen((event, data) => (live ? push(event, data) : held.push([event, data]))).catch((err: unknown) => {
      release();
      throw err;
    });
    const timer = setInterval(() => {
      chain = chain.then(() => (stream.aborted ? undefined : stream.write(': keep-alive\n\n')))
        .catch((err: unknown) => log().debug({ stream: opts.label, reason: reasonOf(err) }, 'live feed: keep-alive not written (client gone)'));
    }, KEEP_ALIVE_MS);
    try {
      if (stream.aborted) return;
      push('snapshot', await opts.snapshot());
      live = true;
      for (const [event, data] of held) push(event, data);
      await gone;
    } finally {
      clearInterval(timer);
      stop();
      release();
    }
  });
}

/**
 * Calls `fn(key)` at most once per `ms` for each key, always after the last
 * call (trailing); `cancel()` drops what is pending (the stream closed).
 */
export function throttleByKey(ms: number, fn: (key: string) => void): { call: (key: string) => void; cancel: () => void } {
  const timers = new Map<string, NodeJS.Timeout>();
  return {
    call(key) {
      if (timers.has(key)) return;
      timers.set(key, setTimeout(() => { timers.delete(key); fn(key); }, ms));
    },
    cancel() {
      for (const t of timers.values()) clearTimeout(t);
      timers.clear();
    },
  };
}
