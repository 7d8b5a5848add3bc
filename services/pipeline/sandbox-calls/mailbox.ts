import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { log } from '../../log/index.ts';
import type { SandboxCallKeys } from '../keys.ts';

// One process's wake-ups for its sandbox calls: a pub/sub channel of its own
// on the process's shared subscriber connection. A message names a pipe
// (`<call id>:<down|up>`) that has news (a frame, or room after a read). It
// is only a hint: every waiter reads Redis again after it, and at least every
// `pollMs` without one, so a message lost in a reconnect costs a poll period.

export class Mailbox {
  readonly id = randomBytes(9).toString('hex');
  readonly channel: string;
  readonly #subscriber: Redis;
  /** pipes this process waits on: their waiter, or a wake-up that came while none waited */
  readonly #pipes = new Map<string, { wake: (() => void) | null; pending: boolean }>();
  readonly #onMessage = (channel: string, message: string) => {
    if (channel !== this.channel) return;
    const pipe = this.#pipes.get(message);
    if (!pipe) return;
    if (pipe.wake) pipe.wake();
    else pipe.pending = true;
  };
  #started: Promise<void> | null = null;

  constructor(subscriber: Redis, keys: SandboxCallKeys) {
    this.#subscriber = subscriber;
    this.channel = keys.mailbox(this.id);
  }

  start(): Promise<void> {
    this.#started ??= (async () => {
      this.#subscriber.on('message', this.#onMessage);
      await this.#subscriber.subscribe(this.channel);
    })();
    return this.#started;
  }

  /** Wake-ups for `pipe` are kept from now until `close(pipe)`. */
  open(pipe: string): void {
    if (!this.#pipes.has(pipe)) this.#pipes.set(pipe, { wake: null, pending: false });
  }

  close(pipe: string): void {
    this.#pipes.get(pipe)?.wake?.();
    this.#pipes.delete(pipe);
  }

  /** Resolves on a wake-up for `pipe` (or one that came since the last wait), after `ms`, or when `signal` aborts. */
  wait(pipe: string, ms: number, signal?: AbortSignal): Promise<void> {
    // A pipe no longer open waits like a poll period: a caller that loops on it must not spin.
    const entry = this.#pipes.get(pipe) ?? { wake: null, pending: false };
    if (entry.pending || signal?.aborted) {
      entry.pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        if (entry.wake === done) entry.wake = null;
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, ms));
      entry.wake = done;
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  async stop(): Promise<void> {
    for (const pipe of [...this.#pipes.keys()]) this.close(pipe);
    this.#subscriber.off('message', this.#onMessage);
    if (!this.#started) return;
    await this.#subscriber.unsubscribe(this.channel)
      .catch((err: unknown) => log().warn({ err }, 'sandbox calls: unsubscribing the mailbox failed while closing'));
  }
}
