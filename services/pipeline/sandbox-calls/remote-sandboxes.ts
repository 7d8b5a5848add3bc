import type { Redis } from 'ioredis';
import type { Readable } from 'node:stream';
import type { Command } from '../../protocol/index.ts';
import type {
  BaselineInfo, ChangeList, ExecuteOptions, ExecutionResult, PreviewRun, ReadPathResult, UploadOptions, UploadResult, WorkspaceFormat, WorkspaceOut,
} from '../../sandbox/index.ts';
import { sandboxCallKeys, type Keys } from '../keys.ts';
import type { PipelineRedis } from '../redis.ts';
import type { Sandboxes } from '../sandboxes.ts';
import { CallClient, type Answer, type CallOptions } from './call.ts';
import { SandboxCallError } from './errors.ts';
import { Mailbox } from './mailbox.ts';
import { resolveCallOptions, type ResolvedCallOptions, type SandboxCallOptions } from './options.ts';

// `Sandboxes` for a process without Docker (THINKFLOW_ROLE=api): every verb
// is a call any worker serves (server.ts) with its own sandboxes. What
// callers see is what the local sandboxes would give (values, the sandbox's
// errors by name and code), plus SandboxCallError when no worker answers.

export type RemoteSandboxesDeps = { redis: PipelineRedis; keys: Keys; subscriber: Redis };

/** The readiness probe waits this long at most for a worker, whatever `pickupMs` is (readyz gives it 3 s). */
const PING_PICKUP_MS = 2_000;

export class RemoteSandboxes implements Sandboxes {
  readonly workspace: WorkspaceOut;
  readonly #mailbox: Mailbox;
  readonly #client: CallClient;
  readonly #opts: ResolvedCallOptions;

  constructor(d: RemoteSandboxesDeps, opts: SandboxCallOptions = {}) {
    this.#opts = resolveCallOptions(opts);
    const keys = sandboxCallKeys(d.keys.prefix);
    this.#mailbox = new Mailbox(d.subscriber, keys);
    this.#client = new CallClient({ redis: d.redis, keys, mailbox: this.#mailbox, opts: this.#opts });
    this.workspace = new RemoteWorkspaceOut(this);
  }

  /** Subscribes the mailbox: before the first call. */
  start(): Promise<void> {
    return this.#mailbox.start();
  }

  /** One call whose answer is a value (its JSON body collected, at most `maxAnswerBytes`). */
  async value<T>(sid: string, op: string, args: unknown[] = [], o: CallOptions = {}): Promise<T> {
    const a = await this.#client.call(sid, op, args, o);
    if (a.head.body === 'json') return JSON.parse((await this.#client.collect(a)).toString('utf8')) as T;
    a.reader.close();
    return a.head.value as T;
  }

  /** One call whose answer is a stream. */
  async stream(sid: string, op: string, args: unknown[] = []): Promise<Readable> {
    const a = await this.#client.call(sid, op, args);
    if (a.head.body !== 'stream') return unexpected(a);
    return this.#client.stream(a);
  }

  execute(sid: string, command: Command, opts: ExecuteOptions = {}): Promise<ExecutionResult> {
    const { signal, ...rest } = opts;
    return this.value(sid, 'execute', [command, rest], signal ? { signal } : {});
  }

  async readPath(sid: string, path: string): Promise<ReadPathResult> {
    const a = await this.#client.call(sid, 'readPath', [path]);
    if (a.head.body === 'bytes') return { kind: 'file', bytes: await this.#client.collect(a) };
    if (a.head.body) return unexpected(a);
    a.reader.close();
    return a.head.value as ReadPathResult;
  }

  resolvePaths(sid: string, paths: string[]): Promise<(string | null)[]> { return this.value(sid, 'resolvePaths', [paths]); }
  cancelRunning(sid: string): Promise<number> { return this.value(sid, 'cancelRunning'); }

  /**
   * The serving worker judges each entry with its own policy gate and the
   * session as stored (`opts.check` stays here: a function cannot cross);
   * every process loads the same THINKFLOW_POLICY_DIR.
   */
  uploadWorkspace(sid: string, body: Readable, _opts: UploadOptions): Promise<UploadResult> {
    return this.value(sid, 'upload', [], { upload: body });
  }

  async remove(sid: string): Promise<void> { await this.value(sid, 'remove'); }
  /** Bounded by the serving worker (sandbox/preview.ts), within `answerMs`; its refusals come back as PreviewRefused. */
  preview(sid: string, command: Command): Promise<PreviewRun> { return this.value(sid, 'preview', [command]); }

  /** True when a worker answered within 2 s and its Docker engine did. */
  async ping(): Promise<boolean> {
    try {
      return await this.value<boolean>('ping', 'ping', [], { pickupMs: Math.min(PING_PICKUP_MS, this.#opts.pickupMs) });
    } catch (err) {
      if (err instanceof SandboxCallError) return false;
      throw err;
    }
  }

  close(): Promise<void> { return this.#mailbox.stop(); }
}

class RemoteWorkspaceOut implements WorkspaceOut {
  constructor(private readonly r: RemoteSandboxes) {}
  archive(sid: string, format: WorkspaceFormat): Promise<Readable> { return this.r.stream(sid, 'archive', [format]); }
  patch(sid: string): Promise<Readable> { return this.r.stream(sid, 'patch'); }
  changes(sid: string): Promise<ChangeList> { return this.r.value(sid, 'changes'); }
  setBaseline(sid: string): Promise<BaselineInfo> { return this.r.value(sid, 'setBaseline'); }
  async ensureBaseline(sid: string): Promise<void> { await this.r.value(sid, 'ensureBaseline'); }
}

function unexpected(a: Answer): never {
  void a.reader.cancel();
  throw new Error(`sandbox call ${a.op}: unexpected answer ${JSON.stringify(a.head.body ?? 'value')}`);
}
