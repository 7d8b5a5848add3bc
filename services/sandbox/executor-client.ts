import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { PassThrough } from 'node:stream';
import { sandboxLog } from './log.ts';

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout };
export type Demux = (stream: NodeJS.ReadableStream, out: NodeJS.WritableStream, err: NodeJS.WritableStream) => void;

export class ExecutorUnavailableError extends Error {
  readonly code = 'sandbox_unavailable';
}
export class ExecutorTimeoutError extends Error {
  readonly code = 'sandbox_timeout';
}
/** The executor sent something no sound executor sends (an oversized line): the container is not trusted again. */
export class ExecutorBrokenError extends Error {
  readonly code = 'sandbox_broken';
}
/** The executor is fine and answered, but the request itself failed there (e.g. a file system error mid-read). */
export class ExecutorRequestError extends Error {
  readonly code = 'executor_error';
}

export type ExecutorClientOptions = {
  /** Largest line accepted; past it the client declares the executor broken and detaches. */
  maxFrameBytes?: number;
  /** Called once with the reason when the stream fails or the executor is declared broken. */
  onError?: (err: Error) => void;
  /** The session the container serves, carried on this client's log lines. */
  sessionId?: string;
};

const STDERR_TAIL = 4096;

/**
 * JSON lines over the executor's control socket or a hijacked `docker attach`
 * stream. Request ids carry a random per-client prefix: every attached client
 * sees every response, and must only pick up its own.
 */
export class ExecutorClient {
  readonly #stream: Duplex;
  readonly #prefix = randomBytes(4).toString('hex');
  readonly #pending = new Map<string, Pending>();
  #seq = 0;
  #buffered: Buffer[] = [];
  #bufferedBytes = 0;
  readonly #maxFrameBytes: number;
  readonly #onError?: (err: Error) => void;
  readonly #sessionId?: string;
  #readyWaiters: (() => void)[] = [];
  #ready = false;
  #closed = false;
  #stderrTail = '';

  /** `demux` splits a multiplexed `docker attach` stream; null for the control socket, which carries the executor's lines alone. */
  constructor(stream: Duplex, demux: Demux | null, options: ExecutorClientOptions = {}) {
    this.#stream = stream;
    this.#maxFrameBytes = options.maxFrameBytes ?? 32 * 1024 ** 2;
    this.#onError = options.onError;
    this.#sessionId = options.sessionId;
    if (demux) {
      const out = new PassThrough();
      const err = new PassThrough();
      demux(stream, out, err);
      out.on('data', (chunk: Buffer) => this.#onData(chunk));
      err.on('data', (chunk: Buffer) => {
        this.#stderrTail = (this.#stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
      });
      for (const s of [out, err]) s.on('error', (e: Error) => this.#broken(`sandbox executor stream failed: ${e.message}`));
    } else {
      stream.on('data', (chunk: Buffer) => this.#onData(chunk));
    }
    const gone = () => this.#fail(new ExecutorUnavailableError(`sandbox executor went away${this.#diagnostics()}`));
    stream.on('end', gone);
    stream.on('close', gone);
    stream.on('error', (e: Error) => {
      this.#report(e);
      gone();
    });
  }

  get alive(): boolean {
    return !this.#closed;
  }

  /** Resolves when the executor has said it is ready (only new starts say so) or answered a ping. */
  async waitReady(timeoutMs: number): Promise<void> {
    if (this.#ready) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.#readyWaiters.push(resolve)),
      new Promise<void>((_, reject) => {
        timer = setTimeout(() => reject(new ExecutorTimeoutError(`sandbox executor not ready after ${timeoutMs} ms${this.#diagnostics()}`)), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
  }

  /** Sends one request and resolves with its `result`. Rejects on transport failure or timeout. */
  request<T>(op: string, body: Record<string, unknown>, timeoutMs: number): Promise<T> {
    if (this.#closed) return Promise.reject(new ExecutorUnavailableError(`sandbox executor is not attached${this.#diagnostics()}`));
    const rid = `${this.#prefix}-${++this.#seq}`;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(rid);
        reject(new ExecutorTimeoutError(`sandbox executor did not answer ${op} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(rid, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.#stream.write(JSON.stringify({ rid, op, ...body }) + '\n');
    });
  }

  /** The rid the next request will get, so a caller can cancel it. */
  nextRid(): string {
    return `${this.#prefix}-${this.#seq + 1}`;
  }

  /** Fire-and-forget cancel of a running request (its own response reports `aborted`). */
  cancel(target: string): void {
    if (!this.#closed) this.#stream.write(JSON.stringify({ rid: `${this.#prefix}-c${++this.#seq}`, op: 'cancel', target }) + '\n');
  }

  /** Detaches; the container and its executor keep running. */
  close(): void {
    this.#fail(new ExecutorUnavailableError('sandbox client closed'));
    this.#stream.destroy();
  }

  #diagnostics(): string {
    const tail = this.#stderrTail.trim();
    return tail ? ` (executor stderr: ${tail.slice(-500)})` : '';
  }

  #report(err: Error): void {
    try {
      this.#onError?.(err);
    } catch (hookErr) {
      // a logger that throws must not take the transport down with it
      sandboxLog(this.#sessionId).error({ err: hookErr, cause: err.message }, 'executor error hook threw');
    }
  }

  /** Fails everything pending, detaches and drops the buffered bytes; the container must be replaced. */
  #broken(message: string): void {
    if (this.#closed) return;
    const err = new ExecutorBrokenError(message);
    this.#report(err);
    this.#buffered = [];
    this.#bufferedBytes = 0;
    this.#fail(err);
    this.#stream.destroy();
  }

  #fail(err: Error): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const [rid, p] of this.#pending) {
      clearTimeout(p.timer);
      p.reject(err);
      this.#pending.delete(rid);
    }
  }

  // Split on newlines without re-scanning: responses to large reads are big.
  // A line is never buffered past maxFrameBytes, whatever the container sends.
  #onData(chunk: Buffer): void {
    if (this.#closed) return;
    let start = 0;
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, start)) {
      if (this.#bufferedBytes + (i - start) > this.#maxFrameBytes) return this.#oversized();
      this.#buffered.push(chunk.subarray(start, i));
      const line = Buffer.concat(this.#buffered).toString('utf8');
      this.#buffered = [];
      this.#bufferedBytes = 0;
      start = i + 1;
      this.#onLine(line);
      if (this.#closed) return;
    }
    if (start < chunk.length) {
      if (this.#bufferedBytes + (chunk.length - start) > this.#maxFrameBytes) return this.#oversized();
      this.#buffered.push(chunk.subarray(start));
      this.#bufferedBytes += chunk.length - start;
    }
  }

  #oversized(): void {
    this.#broken(`sandbox executor sent a line over ${this.#maxFrameBytes} bytes; the container is replaced`);
  }

  #onLine(line: string): void {
    let msg: { rid?: string | null; type?: string; result?: unknown; error?: string };
    try {
      msg = JSON.parse(line);
    } catch (err) {
      // not ours (e.g. stray output); the executor only writes JSON lines
      sandboxLog(this.#sessionId).warn({ err, line: line.slice(0, 200) }, 'executor channel: a line that is not JSON was ignored');
      return;
    }
    if (msg.type === 'ready') return this.#markReady();
    if (typeof msg.rid !== 'string') return;
    const p = this.#pending.get(msg.rid);
    if (!p) return;
    this.#pending.delete(msg.rid);
    clearTimeout(p.timer);
    this.#markReady();
    if (msg.error !== undefined) p.reject(new ExecutorRequestError(`executor error: ${msg.error}`));
    else p.resolve(msg.result);
  }

  #markReady(): void {
    this.#ready = true;
    for (const w of this.#readyWaiters.splice(0)) w();
  }
}
