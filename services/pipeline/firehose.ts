import type { Redis } from 'ioredis';
import type { PipelineEvent } from './events.ts';
import type { Keys } from './keys.ts';

// Every session's events, and every approval answer, for the operator-wide
// streams (approvals, jobs list). One pattern subscription per process on the
// shared subscriber connection, fanned out to listeners. Pub/sub only wakes:
// each stream re-reads the state it shows, so a missed message costs nothing
// but latency, and every (re)connection starts with a full snapshot.

export type FirehoseEvent = Pick<PipelineEvent, 'seq' | 'session_id' | 'job_id' | 'at'> & { type: string; approval?: PipelineEvent['approval'] };
type Listener = { event?: (e: FirehoseEvent) => void; answered?: (token: string) => void };

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
    this.#sub.on('pmessage', (pat: string, _channel: string, message: string) => {
      if (pat !== pattern || this.#listeners.size === 0) return;
      let e: FirehoseEvent;
      try { e = JSON.parse(message) as FirehoseEvent; } catch (err) {
        process.stderr.write(`thinkflow api: firehose: unreadable event on ${_channel}: ${(err as Error).message}\n`);
        return;
      }
      for (const l of this.#listeners) l.event?.(e);
    });
    this.#sub.on('message', (channel: string, token: string) => {
      if (channel !== answers) return;
      for (const l of this.#listeners) l.answered?.(token);
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
      this.#sub.on('message', (ch: string, message: string) => { if (ch === channel) for (const f of set!) f(message); });
      this.#channelReady.set(channel, this.#sub.subscribe(channel));
    }
    set.add(fn);
    await this.#channelReady.get(channel);
    return () => { set!.delete(fn); };
  }

  /** Resolves once Redis confirmed the subscriptions, so a snapshot read after it misses nothing. */
  async listen(l: Listener): Promise<() => void> {
    this.#ready ??= this.#start();
    this.#listeners.add(l);
    await this.#ready;
    return () => { this.#listeners.delete(l); };
  }
}
