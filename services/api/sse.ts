import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Redis } from 'ioredis';
import { firstKeptSeq, gapEvent, readEventPage, type Keys, type Pipeline, type SessionEvent, type SessionEventType } from '../pipeline/index.ts';
import { AppError } from './errors.ts';
import type { StreamCaps } from './stream-caps.ts';

// A session's event stream as Server-Sent Events (`id:` = seq). The Redis
// stream is the source of truth, read in seq order; pub/sub only wakes the
// loop. Events can be published by several processes, so relying on pub/sub
// order could skip one; re-reading from the last sent seq cannot. A client
// resuming before the oldest event kept gets `gap {first_seq}` first.

export type EventStreamDeps = { pipeline: Pipeline; redis: Redis; keys: Keys; streams: StreamCaps };

const BATCH = 500;
const KEEP_ALIVE_MS = 15_000;

/** `Last-Event-ID` header, else `?last_event_id=` or `?after=`; 0 = from the first event. */
export function resumePoint(c: Context): number {
  const raw = c.req.header('last-event-id') ?? c.req.query('last_event_id') ?? c.req.query('after') ?? '0';
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new AppError(400, 'invalid_query', `Last-Event-ID must be a non-negative integer, got '${raw}'`);
  // Past 2^53 a number no longer names one event (and Redis refuses it as a stream id).
  if (!Number.isSafeInteger(n)) throw new AppError(400, 'invalid_query', `Last-Event-ID must be at most ${Number.MAX_SAFE_INTEGER}, got '${raw}'`);
  return n;
}

export function streamSessionEvents(
  c: Context,
  deps: EventStreamDeps,
  sid: string,
  opts: {
    after: number;
    data?: (e: SessionEvent) => Record<string, unknown>;
    /** Close after sending an event of this type. */
    endsWith?: SessionEventType;
    /** Asked when nothing new is left to send: true closes the stream (e.g. a finished job resumed past its end). */
    done?: () => Promise<boolean>;
    /** Fields added to a `gap` event (the job's stream names its job). */
    gapData?: { job_id?: string };
  },
): Response {
  const release = deps.streams.acquire((c.var as { principal: { id: string } }).principal.id);
  return streamSSE(c, async (stream) => {
    let after = opts.after;
    let wake: (() => void) | null = null;
    const unsubscribe = await deps.pipeline.hub.subscribe(sid, () => wake?.()).catch((err: unknown) => {
      release();
      throw err;
    });
    stream.onAbort(() => wake?.());
    try {
      while (!stream.aborted) {
        const page = await readEventPage(deps.redis, deps.keys, sid, after, BATCH);
        // Seqs are consecutive: a jump past `after` may mean trimmed events (THINKFLOW_EVENTS_KEEP). Say so, never skip silently.
        if (page.firstSeq !== null && page.firstSeq > after + 1) {
          const first = await firstKeptSeq(deps.redis, deps.keys, sid);
          if (first !== null && first > after + 1) {
            const { type, ...gap } = gapEvent(sid, first, after, opts.gapData?.job_id);
            await stream.writeSSE({ event: type, data: JSON.stringify(gap) });
          }
        }
        for (const e of page.events) {
          await stream.writeSSE({ id: String(e.seq), event: e.type, data: JSON.stringify(opts.data ? opts.data(e) : e) });
          if (opts.endsWith && e.type === opts.endsWith) return;
        }
        // past a malformed entry too (the reader logged it): it must not be read again
        after = page.lastSeq;
        if (page.read === BATCH) continue;
        if (page.read === 0 && opts.done && (await opts.done())) return;
        const woken = await new Promise<boolean>((resolve) => {
          const t = setTimeout(() => done(false), KEEP_ALIVE_MS);
          function done(v: boolean) { clearTimeout(t); wake = null; resolve(v); }
          wake = () => done(true);
        });
        if (!woken && !stream.aborted) await stream.write(': keep-alive\n\n');
      }
    } finally {
      unsubscribe();
      release();
    }
  });
}
