import type { Redis } from 'ioredis';
import { withIds } from '../log/index.ts';
import { parseLiveEvent } from './event-reader.ts';
import type { SessionEvent } from './events.ts';
import type { Keys } from './keys.ts';

// Every session's events, and every approval answer, for the operator-wide
// streams (approvals, jobs list). One pattern subscription per process on the
// shared subscriber connection, fanned out to listeners. Pub/sub only wakes:
// each stream re-reads the state it shows, so a missed message costs nothing
// but latency, and every (re)connection starts with a full snapshot.

type Listener = { event?: (e: SessionEvent) => void; answered?: (token: string) => void };

export class Firehose {
  readonly #sub: Redis;
  readonly #keys: Keys;
  readonly #listeners = new Set<Listener>();
  #ready: Promise<unknown> | null = null;
  readonly #channels = new Map<string, Set<(message: string) => void>>();
  readonly #channelReady = new Map<string, Promise<unknown>>();

  constructor(subscriber: Redis, keys: Keys) {
    this.#sub = subscriber;
    this.#keys = keys;
  }

  #start(): Promise<unknown> {
    const pattern = this.#keys.eventChannel('X').replace('{X}', '{*}');
    const answers = this.#keys.approvalChannel();
    this.#sub.on('pmessage', (pat: string, channel: string, message: string) => {
      if (pat !== pattern || this.#listeners.size === 0) return;
      // malformed: logged (with the session id the event names) by the reader, and not passed on
      const e = parseLiveEvent(message, null, `channel ${channel}`);
      if (e) for (const l of this.#listeners) this.#call(() => l.event?.(e), e.session_id);
    });
    this.#sub.on('message', (channel: string, token: string) => {
      if (channel !== answers) return;
      for (const l of this.#listeners) this.#call(() => l.answered?.(token), null);
    });
    // Subscribed for the life of the process: the worker's Approvals may share the channel subscription.
    return Promise.all([this.#sub.psubscribe(pattern), this.#sub.subscribe(answers)]);
  }

  /**
   * Messages of one more channel (another service's, e.g. job changes) on the
   * same shared connection; resolves once subscribed. The subscription stays
   * for the life of the process, like the others.
   */
  async onChannel(channel: string, fn: (message: string) => void): Promise<() => void> {
    let set = this.#channels.get(channel);
    if (!set) {
      set = new Set();
      this.#channels.set(channel, set);
      this.#sub.on('message', (ch: string, message: string) => { if (ch === channel) for (const f of set!) this.#call(() => f(message), null); });
      this.#channelReady.set(channel, this.#sub.subscribe(channel));
    }
    set.add(fn);
    await this.#channelReady.get(channel);
    return () => { set!.delete(fn); };
  }

  /** A listener that throws must not keep the message from the others. */
  #call(fn: () => void, sid: string | null): void {
    try { fn(); } catch (err) {
      withIds({ session_id: sid }).error({ err }, 'firehose: a listener failed');
    }
  }

  /** Resolves once Redis confirmed the subscriptions, so a snapshot read after it misses nothing. */
  async listen(l: Listener): Promise<() => void> {
    this.#ready ??= this.#start();
    this.#listeners.add(l);
    await this.#ready;
    return () => { this.#listeners.delete(l); };
  }
}
