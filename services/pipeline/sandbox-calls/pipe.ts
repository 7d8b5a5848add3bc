import type { SandboxCallKeys } from '../keys.ts';
import type { PipelineRedis } from '../redis.ts';
import { SandboxCallError } from './errors.ts';
import { decodeFrame, encodeFrame, type Frame } from './frames.ts';
import type { Mailbox } from './mailbox.ts';
import { keyTtlMs, type ResolvedCallOptions } from './options.ts';

// One direction of a call: frames in a Redis list, written by one process
// and read by another. Backpressure: the writer waits while the list holds
// `window` frames, so a pipe never keeps more than window × frameBytes in
// Redis, whatever the two sides' speeds; the reader's wake-up after each read
// (a credit) lets it go on. Either side may set the call's `end` key: the
// writer then stops (`CallEnded`) instead of filling a list nobody reads.

export type PipeDeps = { redis: PipelineRedis; keys: SandboxCallKeys; mailbox: Mailbox; opts: ResolvedCallOptions };
export type PipeName = { sid: string; call: string; dir: 'down' | 'up' };

/** The other side set the call's `end`: it reads no more (it answered, or gave up). */
export class CallEnded extends Error {
  constructor() {
    super('the other side ended the call');
    this.name = 'CallEnded';
  }
}

abstract class PipeEnd {
  readonly #d: PipeDeps;
  protected readonly list: string;
  protected readonly end: string;
  /** the mailbox wake-ups of this pipe go to, on both sides */
  protected readonly pipe: string;
  /** the other side's mailbox, once known */
  #peer: string | null;
  /** this side is done with the pipe: a read or write still under way stops instead of polling on */
  protected closed = false;

  constructor(d: PipeDeps, n: PipeName, peer: string | null) {
    this.#d = d;
    this.list = d.keys.pipe(n.sid, n.call, n.dir);
    this.end = d.keys.pipe(n.sid, n.call, 'end');
    this.pipe = `${n.call}:${n.dir}`;
    this.#peer = peer;
    d.mailbox.open(this.pipe);
  }

  protected get d(): PipeDeps { return this.#d; }

  setPeer(mailbox: string): void { this.#peer = mailbox; }

  /** Wakes the other side (a hint: it polls anyway). */
  protected notify(): void {
    if (!this.#peer) return;
    const channel = this.#d.keys.mailbox(this.#peer);
    // A lost wake-up costs the other side one poll period; nothing to undo.
    this.#d.redis.publish(channel, this.pipe).catch(() => undefined);
  }

  close(): void {
    this.closed = true;
    this.#d.mailbox.close(this.pipe);
  }
}

export class PipeWriter extends PipeEnd {
  /** Appends a frame; waits (up to `stallMs`) while the pipe is full. @throws CallEnded, SandboxCallError sandbox_timeout */
  write(frame: Frame, signal?: AbortSignal): Promise<void> {
    return this.writeMany([frame], signal);
  }

  /** Appends frames in one round trip (the pipe may then hold up to window - 1 + frames.length). */
  async writeMany(frames: Frame[], signal?: AbortSignal): Promise<void> {
    const { redis, opts } = this.d;
    signal?.throwIfAborted();
    if (this.closed) throw new CallEnded();
    const [len, , ended] = await Promise.all([
      redis.rpush(this.list, ...frames.map(encodeFrame)), redis.pexpire(this.list, keyTtlMs(opts)), redis.exists(this.end),
    ]);
    this.notify();
    if (ended) throw new CallEnded();
    if (len < opts.window) return;
    const stallBy = Date.now() + opts.stallMs;
    for (;;) {
      await this.d.mailbox.wait(this.pipe, Math.min(opts.pollMs, stallBy - Date.now()), signal);
      signal?.throwIfAborted();
      if (this.closed) throw new CallEnded();
      const [n, e] = await Promise.all([redis.llen(this.list), redis.exists(this.end)]);
      if (e) throw new CallEnded();
      if (n < opts.window) return;
      if (Date.now() >= stallBy) throw new SandboxCallError('sandbox_timeout', `the other side of the sandbox call read nothing for ${opts.stallMs} ms`);
    }
  }

  /** Ends the call for both sides: the other side's writes stop; this side's frames are left to expire. */
  async endCall(): Promise<void> {
    await this.d.redis.set(this.end, '1', 'PX', keyTtlMs(this.d.opts));
    this.notify();
  }
}

export class PipeReader extends PipeEnd {
  #buffered: Buffer[] = [];

  /** The next frame, or null when none came by `deadline` (ms since the epoch). @throws CallEnded once closed */
  async next(deadline: number, signal?: AbortSignal): Promise<Frame | null> {
    const { redis, opts, mailbox } = this.d;
    for (;;) {
      if (this.closed) throw new CallEnded();
      const head = this.#buffered.shift();
      if (head) return decodeFrame(head);
      const got = await redis.lpopBuffer(this.list, opts.window);
      if (got && got.length > 0) {
        this.#buffered = got;
        this.notify(); // room in the pipe: the writer may go on
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await mailbox.wait(this.pipe, Math.min(opts.pollMs, left), signal);
      signal?.throwIfAborted();
    }
  }

  /** Gives up the call: the writer stops at its next frame, the frames are dropped. */
  async cancel(): Promise<void> {
    const { redis, opts } = this.d;
    await Promise.all([redis.set(this.end, '1', 'PX', keyTtlMs(opts)), redis.unlink(this.list)]);
    this.notify();
    this.close();
  }
}
