import type { Redis } from 'ioredis';
import { reasonOf, withIds } from '../log/index.ts';
import { SessionEvent, type GapEvent } from './events.ts';
import type { Keys } from './keys.ts';

// The one reader of a session's event stream (a Redis stream per session,
// entry id `seq-0`, so any API process can replay it from a Last-Event-ID)
// and of its pub/sub channel. Every stream entry is checked against the union;
// one that does not parse is logged with its session and skipped, never passed
// on half-typed. A channel message is the same JSON, published by the same
// script in the same step as its stream entry: its envelope is checked (JSON,
// a type of the union, a seq, a session), not its whole body, which cost 26 µs
// an event, three events a command, on the command path. A checked event is
// returned as stored, field order included: that JSON is what SSE clients
// have always received.

/** The stored JSON → a typed event, or null (logged) when it is not one. */
export function parseEvent(json: string, sid: string | null, where: string): SessionEvent | null {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    withIds({ session_id: sid }).error({ err, where }, 'event log: an entry that is not JSON');
    return null;
  }
  const checked = SessionEvent.safeParse(raw);
  if (!checked.success) {
    const ids = { session_id: sid ?? (raw as { session_id?: string }).session_id ?? null, job_id: (raw as { job_id?: string }).job_id ?? null };
    withIds(ids).error({ where, type: (raw as { type?: unknown }).type, issues: checked.error.issues.slice(0, 5) }, 'event log: an entry that is not an event of the union');
    return null;
  }
  return raw as SessionEvent;
}

const EVENT_TYPES = new Set<string>(SessionEvent.options.map((o) => o.shape.type.value));

/** A channel message → an event, its envelope checked (see above); null (logged) when it is not one. */
export function parseLiveEvent(json: string, sid: string | null, where: string): SessionEvent | null {
  type Envelope = { type?: unknown; seq?: unknown; session_id?: unknown } | null;
  let raw: Envelope;
  try {
    raw = JSON.parse(json) as Envelope;
  } catch (err) {
    withIds({ session_id: sid }).error({ err, where }, 'event channel: a message that is not JSON');
    return null;
  }
  const forSession = sid === null || raw?.session_id === sid;
  if (raw && typeof raw === 'object' && EVENT_TYPES.has(raw.type as string) && Number.isInteger(raw.seq) && typeof raw.session_id === 'string' && forSession) {
    return raw as SessionEvent;
  }
  withIds({ session_id: sid }).error({ where, type: raw?.type }, 'event channel: a message that is not an event of the union');
  return null;
}

/** The seq of the oldest event still kept, or null when the session has none. */
export async function firstKeptSeq(redis: Redis, keys: Keys, sid: string): Promise<number | null> {
  const [first] = await redis.xrange(keys.events(sid), '-', '+', 'COUNT', 1);
  return first ? Number(first[0].split('-')[0]) : null;
}

/**
 * One page of the stream: its events, how many entries were read and the seqs
 * of the first and last of them (malformed entries included, so a reader
 * moves past them and sees a jump in the seqs).
 */
export type EventPage = { events: SessionEvent[]; read: number; firstSeq: number | null; lastSeq: number };

/** Up to `count` stream entries after `afterSeq` (0 = from the first), oldest first. */
export async function readEventPage(redis: Redis, keys: Keys, sid: string, afterSeq = 0, count = 1000): Promise<EventPage> {
  const rows = await redis.xrange(keys.events(sid), `(${afterSeq}-0`, '+', 'COUNT', count);
  const events: SessionEvent[] = [];
  let lastSeq = afterSeq;
  for (const [id, fields] of rows) {
    lastSeq = Number(id.split('-')[0]);
    const e = parseEvent(fields[fields.indexOf('d') + 1] ?? '', sid, `stream entry ${id}`);
    if (e) events.push(e);
  }
  return { events, read: rows.length, firstSeq: rows[0] ? Number(rows[0][0].split('-')[0]) : null, lastSeq };
}

/** Events after `afterSeq` (0 = from the first), oldest first. */
export async function readEvents(redis: Redis, keys: Keys, sid: string, afterSeq = 0, count = 1000): Promise<SessionEvent[]> {
  return (await readEventPage(redis, keys, sid, afterSeq, count)).events;
}

/** The `gap` a client resuming before the oldest kept event gets first (field order = the wire's). */
export function gapEvent(sid: string, firstSeq: number, after: number, jobId?: string): GapEvent {
  return { type: 'gap', first_seq: firstSeq, after, session_id: sid, ...(jobId === undefined ? {} : { job_id: jobId }), at: new Date().toISOString() };
}

type Listener = (event: SessionEvent) => void;
/** The type of a channel message, read off its head (emitEvent.lua writes seq, index, then the body, whose first key is type). */
const HEAD_TYPE = /^\{"seq":\d+,"index":[^,]*,"type":"([a-z_]+)"/;

/** One subscriber connection per process (shared, not owned), fanned out to every waiter. */
export class EventHub {
  readonly #sub: Redis;
  readonly #keys: Keys;
  readonly #listeners = new Map<string, { sid: string; set: Set<Listener>; types: Map<Listener, ReadonlySet<string>> }>();
  readonly #subscribing = new Map<string, Promise<unknown>>();
  constructor(subscriber: Redis, keys: Keys) {
    this.#sub = subscriber;
    this.#keys = keys;
    this.#sub.on('message', (channel: string, message: string) => this.#deliver(channel, message));
  }

  #deliver(channel: string, message: string): void {
    const entry = this.#listeners.get(channel);
    if (!entry) return;
    // Not parsed when no listener wants its type (a finish watch sees three events a command and wants one).
    if (entry.types.size === entry.set.size) {
      const type = HEAD_TYPE.exec(message)?.[1];
      if (type !== undefined && ![...entry.types.values()].some((t) => t.has(type))) return;
    }
    const event = parseLiveEvent(message, entry.sid, `channel ${channel}`);
    if (!event) return;
    for (const l of entry.set) {
      if (entry.types.get(l)?.has(event.type) === false) continue;
      // a listener that throws must not keep the event from the others
      try { l(event); } catch (err) {
        withIds({ session_id: entry.sid, job_id: event.job_id }).error({ err, type: event.type, seq: event.seq }, 'event hub: a listener failed');
      }
    }
  }

  /**
   * Resolves once Redis confirmed the subscription, so a state read after it misses nothing. `types`: the only event
   * types the listener is given (the others are not even parsed for it).
   */
  async subscribe(sid: string, listener: Listener, types?: ReadonlySet<string>): Promise<() => void> {
    const channel = this.#keys.eventChannel(sid);
    let entry = this.#listeners.get(channel);
    if (!entry) {
      entry = { sid, set: new Set(), types: new Map() };
      this.#listeners.set(channel, entry);
      this.#subscribing.set(channel, this.#sub.subscribe(channel));
    }
    entry.set.add(listener);
    if (types) entry.types.set(listener, types);
    await this.#subscribing.get(channel);
    return () => {
      const e = this.#listeners.get(channel);
      if (!e) return;
      e.set.delete(listener);
      e.types.delete(listener);
      if (e.set.size === 0) {
        this.#listeners.delete(channel);
        this.#subscribing.delete(channel);
        this.#unsubscribe(channel, sid);
      }
    };
  }

  /** Drops every listener; the subscriber connection belongs to the caller. */
  close(): void {
    for (const [channel, { sid }] of this.#listeners) this.#unsubscribe(channel, sid);
    this.#listeners.clear();
    this.#subscribing.clear();
  }

  #unsubscribe(channel: string, sid: string): void {
    // Harmless when it fails (the connection is closing): a message for a channel nobody listens to is dropped above.
    this.#sub.unsubscribe(channel).catch((err: unknown) => withIds({ session_id: sid }).warn({ reason: reasonOf(err) }, 'event hub: unsubscribe failed'));
  }
}
