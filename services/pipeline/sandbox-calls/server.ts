import type { Redis } from 'ioredis';
import { log, withIds } from '../../log/index.ts';
import type { UploadOptions } from '../../sandbox/index.ts';
import { sandboxCallKeys, type Keys, type SandboxCallKeys } from '../keys.ts';
import type { PipelineRedis } from '../redis.ts';
import type { Sandboxes } from '../sandboxes.ts';
import { toWire } from './errors.ts';
import type { CallRequest } from './frames.ts';
import { Mailbox } from './mailbox.ts';
import { OPS } from './ops.ts';
import { CallEnded, PipeReader, PipeWriter, type PipeDeps } from './pipe.ts';
import { resolveCallOptions, type ResolvedCallOptions, type SandboxCallOptions } from './options.ts';

// The worker's side (README.md): one blocking connection takes calls from
// the shared list (BRPOP, FIFO) while fewer than `callsPerWorker` run here;
// each is served by the local `Sandboxes` (ops.ts) and answered on its pipe.

export type SandboxCallServerDeps = {
  redis: PipelineRedis;
  keys: Keys;
  /** the process's shared subscriber (this server's mailbox) */
  subscriber: Redis;
  /** this worker's own sandboxes (Docker) */
  sandboxes: Sandboxes;
  uploadOptions: (sid: string) => Promise<UploadOptions>;
};

export type ServerStatus = 'idle' | 'running' | 'closing' | 'closed';

export class SandboxCallServer {
  readonly #d: SandboxCallServerDeps;
  readonly #opts: ResolvedCallOptions;
  readonly #mailbox: Mailbox;
  readonly #keys: SandboxCallKeys;
  readonly #pipes: PipeDeps;
  readonly #running = new Set<Promise<void>>();
  readonly #stop = new AbortController();
  #blocking: Redis | null = null;
  #slotFreed: (() => void) | null = null;
  #loop: Promise<void> | null = null;
  #status: ServerStatus = 'idle';
  #closing: Promise<void> | null = null;

  constructor(d: SandboxCallServerDeps, opts: SandboxCallOptions = {}) {
    this.#d = d;
    this.#opts = resolveCallOptions(opts);
    this.#keys = sandboxCallKeys(d.keys.prefix);
    this.#mailbox = new Mailbox(d.subscriber, this.#keys);
    this.#pipes = { redis: d.redis, keys: this.#keys, mailbox: this.#mailbox, opts: this.#opts };
  }

  get status(): ServerStatus { return this.#status; }
  /** calls being served here now */
  get serving(): number { return this.#running.size; }

  async start(): Promise<void> {
    if (this.#status !== 'idle') throw new Error(`sandbox call server is ${this.#status}`);
    this.#status = 'running';
    await this.#mailbox.start();
    this.#blocking = this.#d.redis.duplicate({ connectionName: 'thinkflow-sandbox-calls' });
    // It reconnects by itself; without a listener its errors would go to stderr unlogged.
    this.#blocking.on('error', (err: Error) => log().warn({ err }, 'sandbox calls: the blocking connection failed; reconnecting'));
    this.#loop = this.#take(this.#blocking);
  }

  async #take(blocking: Redis): Promise<void> {
    const list = this.#keys.calls();
    while (this.#status === 'running') {
      if (this.#running.size >= this.#opts.callsPerWorker) {
        await new Promise<void>((resolve) => { this.#slotFreed = resolve; });
        continue;
      }
      let got: [string, string] | null;
      try {
        got = await blocking.brpop(list, 1);
      } catch (err) {
        if (this.#status !== 'running') return;
        log().warn({ err }, 'sandbox calls: taking a call failed; trying again');
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (got) this.#serve(got[1]);
    }
  }

  #serve(json: string): void {
    let req: CallRequest;
    try {
      req = JSON.parse(json) as CallRequest;
    } catch (err) {
      log().error({ err, call: json.slice(0, 200) }, 'sandbox calls: a call that is not JSON was dropped');
      return;
    }
    // Its caller died before it could take the call back (a live one would have): nobody waits for the answer.
    if (Date.now() > req.pickupBy + this.#opts.pickupMs) {
      withIds({ session_id: req.sid }).warn({ op: req.op, call: req.id }, 'sandbox calls: a call whose caller gave up long ago was dropped');
      return;
    }
    const p = this.#answer(req).finally(() => {
      this.#running.delete(p);
      this.#slotFreed?.();
      this.#slotFreed = null;
    });
    this.#running.add(p);
  }

  async #answer(req: CallRequest): Promise<void> {
    const ids = withIds({ session_id: req.sid });
    const writer = new PipeWriter(this.#pipes, { sid: req.sid, call: req.id, dir: 'down' }, req.mailbox);
    const readers: PipeReader[] = [];
    const op = OPS[req.op];
    try {
      if (!op) throw new Error(`unknown sandbox call ${JSON.stringify(req.op)}`);
      await op({
        sandboxes: this.#d.sandboxes, uploadOptions: this.#d.uploadOptions, writer, mailbox: this.#mailbox.id, opts: this.#opts, signal: this.#stop.signal,
        up: () => {
          const r = new PipeReader(this.#pipes, { sid: req.sid, call: req.id, dir: 'up' }, req.mailbox);
          readers.push(r);
          return r;
        },
      }, req.sid, req.args);
    } catch (err) {
      // The caller gave up (it ended the call): nobody to answer.
      if (err instanceof CallEnded) return;
      ids.debug({ err, op: req.op }, 'sandbox calls: the call failed; its error goes back to the caller');
      await writer.write({ t: 'X', error: toWire(err) }).catch((e: unknown) => {
        if (!(e instanceof CallEnded)) ids.warn({ err: e, op: req.op }, 'sandbox calls: could not send a call its error');
      });
    } finally {
      // An upload's sender stops at its next frame (a refusal can come before its last).
      if (req.op === 'upload') await writer.endCall().catch((err: unknown) => ids.warn({ err }, 'sandbox calls: could not end an upload call'));
      for (const r of readers) r.close();
      writer.close();
    }
  }

  /**
   * Takes no more calls; the ones running get `graceMs` to finish, then their
   * transfers are cut, and a sandbox verb that still hangs is left behind
   * (its caller times out). Memoized.
   */
  close(graceMs = 5_000): Promise<void> {
    this.#closing ??= (async () => {
      this.#status = 'closing';
      this.#slotFreed?.();
      this.#blocking?.disconnect();
      await this.#loop;
      const all = Promise.allSettled([...this.#running]);
      if (!(await settledWithin(all, graceMs))) {
        this.#stop.abort(new Error('the worker is shutting down'));
        if (!(await settledWithin(all, 1_000))) log().warn({ calls: this.#running.size }, 'sandbox calls: closing with calls still running in the sandbox');
      }
      await this.#mailbox.stop();
      this.#status = 'closed';
    })();
    return this.#closing;
  }
}

async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), ms); });
  try {
    return await Promise.race([p.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
