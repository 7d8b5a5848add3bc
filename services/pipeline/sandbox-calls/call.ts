import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { withIds } from '../../log/index.ts';
import { fromWire, SandboxCallError, toWire } from './errors.ts';
import { slices, type AnswerHead, type CallRequest, type Frame } from './frames.ts';
import { CallEnded, PipeReader, PipeWriter, type PipeDeps } from './pipe.ts';

// The caller's side of one sandbox call (README.md): the request goes into
// the calls list, any worker takes it, and the answer comes back on the
// call's `down` pipe. Not taken within `pickupMs`: the request is taken back
// out of the list (LREM), so it can never run later, and the call fails 503
// `sandbox_unavailable`; if LREM finds it gone a worker has it, and the call
// waits for the answer up to `answerMs` (then 504 `sandbox_timeout`).

export type CallOptions = { signal?: AbortSignal; pickupMs?: number; upload?: Readable };
/** A call's answer head; its body (if any) is still on the pipe. */
export type Answer = { head: AnswerHead; reader: PipeReader; op: string; sid: string };

export class CallClient {
  readonly #d: PipeDeps;

  constructor(d: PipeDeps) {
    this.#d = d;
  }

  /** Sends the call; resolves with its answer's head, rejects with the worker's error or a SandboxCallError. */
  async call(sid: string, op: string, args: unknown[], o: CallOptions = {}): Promise<Answer> {
    const { redis, keys, mailbox, opts } = this.#d;
    const pickupMs = o.pickupMs ?? opts.pickupMs;
    const id = randomBytes(12).toString('hex');
    const req: CallRequest = { id, sid, op, args, mailbox: mailbox.id, pickupBy: Date.now() + pickupMs };
    const json = JSON.stringify(req);
    const reader = new PipeReader(this.#d, { sid, call: id, dir: 'down' }, null);
    try {
      await redis.lpush(keys.calls(), json);
      const taken = this.#taken(reader, json, op, sid, pickupMs, o.signal);
      const first = o.upload ? await this.#upload(reader, taken, id, sid, o.upload, o.signal) : await taken;
      const head = this.#head(first);
      reader.setPeer(head.mailbox); // credits for a body go to the worker that sends it
      return { head, reader, op, sid };
    } catch (err) {
      // Taken back if still waiting (it must not run after its caller gave up), and the worker told to stop writing.
      await Promise.all([redis.lrem(keys.calls(), 1, json), reader.cancel()])
        .catch((e: unknown) => withIds({ session_id: sid }).warn({ err: e, op }, 'sandbox call: could not withdraw a failed call'));
      throw err;
    }
  }

  /** The first frame of the answer; see the header for the two time limits. */
  async #taken(reader: PipeReader, json: string, op: string, sid: string, pickupMs: number, signal?: AbortSignal): Promise<Frame> {
    const { redis, keys, opts } = this.#d;
    const first = await reader.next(Date.now() + pickupMs, signal);
    if (first) return first;
    if ((await redis.lrem(keys.calls(), 1, json)) > 0) {
      throw new SandboxCallError('sandbox_unavailable', `no worker took the ${op} call of session ${sid} within ${pickupMs} ms (is a worker process running, and not all busy?); nothing was done, try again`, { session_id: sid, op, waited_ms: pickupMs });
    }
    const late = await reader.next(Date.now() + opts.answerMs, signal);
    if (late) return late;
    throw timeout(op, sid, opts.answerMs);
  }

  #head(f: Frame): AnswerHead {
    if (f.t === 'H') return f.head;
    if (f.t === 'X') throw fromWire(f.error);
    throw new Error(`sandbox call: unexpected first frame ${f.t}`);
  }

  /**
   * An upload: the body streams into the call's `up` pipe while the call
   * waits for a worker (at most a window of it), then on. The worker's
   * accept (`A`) names its mailbox for wake-ups; its refusal ends the call
   * (the pump stops) and is the answer. The body's own error (e.g. the API's
   * size limit) is passed to the worker and thrown as it was.
   */
  async #upload(reader: PipeReader, taken: Promise<Frame>, id: string, sid: string, body: Readable, signal?: AbortSignal): Promise<Frame> {
    const writer = new PipeWriter(this.#d, { sid, call: id, dir: 'up' }, null);
    const stop = new AbortController();
    const abort = () => stop.abort(signal?.reason);
    signal?.addEventListener('abort', abort, { once: true });
    const pumped = this.#pump(writer, body, stop.signal).then(() => null, (err: unknown) => err);
    try {
      // Whichever comes first: a body that fails early is answered at once, not after the pickup.
      const early = await Promise.race([taken.then((f) => ({ f }), (err: unknown) => ({ err })), pumped.then((failed) => ({ failed }))]);
      if ('err' in early) throw early.err;
      if ('failed' in early && early.failed) throw early.failed instanceof BodyFailed ? early.failed.cause : early.failed;
      const first = 'f' in early ? early.f : await taken;
      if (first.t !== 'A') return first; // refused at once: an error head
      writer.setPeer(first.mailbox);
      const failed = await pumped;
      if (failed instanceof BodyFailed) throw failed.cause;
      if (failed && !(failed instanceof CallEnded)) throw failed;
      const head = await reader.next(Date.now() + this.#d.opts.answerMs, signal);
      if (!head) throw timeout('upload', sid, this.#d.opts.answerMs);
      return head;
    } finally {
      stop.abort();
      signal?.removeEventListener('abort', abort);
      writer.close();
    }
  }

  async #pump(writer: PipeWriter, body: Readable, signal: AbortSignal): Promise<void> {
    const it = body[Symbol.asyncIterator]();
    for (;;) {
      let step: IteratorResult<unknown>;
      try {
        step = await it.next();
      } catch (err) {
        // The worker discards what it got; the caller gets the body's own error.
        await writer.write({ t: 'X', error: toWire(err) }, signal).catch(() => undefined);
        throw new BodyFailed(err);
      }
      if (step.done) break;
      const chunk = Buffer.isBuffer(step.value) ? step.value : Buffer.from(step.value as Uint8Array);
      for (const data of slices(chunk, this.#d.opts.frameBytes)) await writer.write({ t: 'D', data }, signal);
    }
    await writer.write({ t: 'E' }, signal);
  }

  /** The answer's body, whole in memory (a file, a long JSON value), at most `maxAnswerBytes`. */
  async collect(a: Answer): Promise<Buffer> {
    const { maxAnswerBytes, stallMs } = this.#d.opts;
    const parts: Buffer[] = [];
    let size = 0;
    try {
      for (;;) {
        const f = await a.reader.next(Date.now() + stallMs);
        if (!f) throw stalled(a, stallMs);
        if (f.t === 'E') return Buffer.concat(parts, size);
        if (f.t === 'X') throw fromWire(f.error);
        if (f.t !== 'D') throw new Error(`sandbox call: unexpected frame ${f.t} in a body`);
        size += f.data.length;
        if (size > maxAnswerBytes) {
          throw new SandboxCallError('sandbox_answer_too_large', `the ${a.op} answer of session ${a.sid} is larger than ${maxAnswerBytes} bytes`, { session_id: a.sid, limit: maxAnswerBytes });
        }
        parts.push(Buffer.from(f.data));
      }
    } finally {
      await a.reader.cancel();
    }
  }

  /** The answer's body as a stream, with backpressure to the worker; destroying it ends the call (and the program in the sandbox). */
  stream(a: Answer): Readable {
    const { stallMs } = this.#d.opts;
    let done = false;
    return new Readable({
      highWaterMark: this.#d.opts.frameBytes,
      read() {
        a.reader.next(Date.now() + stallMs).then((f) => {
          if (!f) return this.destroy(stalled(a, stallMs));
          if (f.t === 'D') return void this.push(f.data);
          if (f.t === 'E') { done = true; return void this.push(null); }
          this.destroy(f.t === 'X' ? fromWire(f.error) : new Error(`sandbox call: unexpected frame ${f.t} in a stream`));
        }, (err: Error) => this.destroy(err));
      },
      destroy(err, cb) {
        const end = done ? Promise.resolve(a.reader.close()) : a.reader.cancel();
        end.then(() => cb(err), (e: unknown) => {
          withIds({ session_id: a.sid }).warn({ err: e, op: a.op }, 'sandbox call: could not end a stream');
          cb(err);
        });
      },
    });
  }
}

class BodyFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('the upload body failed');
  }
}

function timeout(op: string, sid: string, ms: number): SandboxCallError {
  return new SandboxCallError('sandbox_timeout', `a worker took the ${op} call of session ${sid} but did not answer within ${ms} ms`, { session_id: sid, op, waited_ms: ms });
}

function stalled(a: Answer, ms: number): SandboxCallError {
  return new SandboxCallError('sandbox_timeout', `the ${a.op} answer of session ${a.sid} stopped: no data for ${ms} ms`, { session_id: a.sid, op: a.op, waited_ms: ms });
}
