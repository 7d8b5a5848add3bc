import type Docker from 'dockerode';
import type { Readable } from 'node:stream';
import type { Command } from '../protocol/index.ts';
import type { ExecutorClient } from './executor-client.ts';
import { logSandboxError } from './log.ts';
import { containerName } from './names.ts';
import { uploadArchive, type UploadOptions, type UploadResult } from './workspace-upload.ts';
import type { ResolvedSandboxOptions } from './sandbox-options.ts';
import type { DirEntry, ExecuteOptions, ExecutionResult, ReadPathResult, Sandbox } from './types.ts';

type ExecutorResult = Omit<ExecutionResult, 'duration_ms'>;
type WireReadPath = { kind: 'file'; base64: string } | { kind: 'dir'; entries: DirEntry[] } | { kind: 'missing' } | { kind: 'outside' };

/** What a sandbox needs from its manager. */
export type SandboxHooks = {
  /** A live executor client; restarts or recreates the container when needed. */
  connect: () => Promise<ExecutorClient>;
  /** Marks use: +1 when a command starts, -1 when it ends, 0 for a plain touch. */
  touch: (delta: number) => void;
  /** The executor stopped answering: kill the container so the next connect starts it afresh. */
  recover: () => Promise<void>;
  /** An answer is late: thaws the container if another process paused it (frozen-container.ts `thawIfPaused`). */
  thaw?: () => Promise<void>;
  /** The engine, for what goes beside the executor's channel (`docker exec` of an upload). */
  docker: Docker;
};

/**
 * One session's sandbox. Connecting is the manager's job, so a container
 * that died between two commands is transparently brought back.
 */
export class DockerSandbox implements Sandbox {
  readonly sessionId: string;
  readonly #hooks: SandboxHooks;
  readonly #opts: ResolvedSandboxOptions;

  constructor(sessionId: string, hooks: SandboxHooks, opts: ResolvedSandboxOptions) {
    this.sessionId = sessionId;
    this.#hooks = hooks;
    this.#opts = opts;
  }

  async execute(command: Command, opts: ExecuteOptions = {}): Promise<ExecutionResult> {
    const started = performance.now();
    const done = (r: ExecutorResult): ExecutionResult => ({
      ...r,
      tool: command.tool,
      ...(command.path !== undefined ? { path: command.path } : {}),
      duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
    });
    const fail = (error_code: string, error: string) => done({ ok: false, tool: command.tool, error_code, error });
    if (opts.signal?.aborted) return fail('aborted', 'cancelled before it started');
    this.#hooks.touch(+1);
    try {
      return await this.#run(command, opts, done, fail);
    } finally {
      this.#hooks.touch(-1);
    }
  }

  async #run(
    command: Command,
    { signal, expect, needsBaseline }: ExecuteOptions,
    done: (r: ExecutorResult) => ExecutionResult,
    fail: (code: string, error: string) => ExecutionResult,
  ): Promise<ExecutionResult> {
    let client: ExecutorClient;
    try {
      client = await this.#hooks.connect();
    } catch (err) {
      return fail('sandbox_unavailable', errorMessage(err));
    }
    const bashTimeoutMs = Math.min(
      command.timeout !== undefined ? command.timeout * 1000 : this.#opts.bashTimeoutMs,
      this.#opts.maxBashTimeoutMs,
    );
    const limits = {
      bashTimeoutMs,
      outputCapBytes: this.#opts.outputCapBytes,
      readCapBytes: this.#opts.readCapBytes,
      workspaceQuotaBytes: this.#opts.workspaceQuotaBytes,
    };
    // The executor enforces the real timeout; this one only catches a stuck transport.
    const hostTimeout = (command.tool === 'bash' ? bashTimeoutMs : 0) + this.#opts.requestTimeoutMs;
    const rid = client.nextRid();
    const onAbort = () => client.cancel(rid);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const r = await this.#thawing(client.request<ExecutorResult>('exec', { command, limits, ...(expect ? { expect } : {}), ...(needsBaseline ? { baseline: true } : {}) }, hostTimeout));
      // The executor itself says its container holds processes it cannot end.
      if (r.error_code === 'sandbox_broken') await this.#recover('sandbox_broken');
      return done(r);
    } catch (err) {
      const code = (err as { code?: string }).code ?? 'sandbox_unavailable';
      // A stuck or misbehaving executor would hold every later command of the
      // session: the next command gets a fresh container on the same volume.
      if (code === 'sandbox_timeout' || code === 'sandbox_broken') await this.#recover(code);
      return fail(code, errorMessage(err));
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async #recover(reason: string): Promise<void> {
    try {
      await this.#hooks.recover();
    } catch (err) {
      logSandboxError(this.sessionId, `recovery after ${reason} failed`, err);
    }
  }

  async readPath(path: string): Promise<ReadPathResult> {
    return this.#using((client) => this.#readPath(client, path));
  }

  async #readPath(client: ExecutorClient, path: string): Promise<ReadPathResult> {
    const limits = { readPathCapBytes: this.#opts.readPathCapBytes };
    let r: WireReadPath;
    try {
      r = await client.request<WireReadPath>('readPath', { path, limits }, this.#opts.requestTimeoutMs);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'sandbox_timeout' || code === 'sandbox_broken') await this.#recover(code);
      // The session's own commands can change the path under the read (a
      // symlink or directory swapped mid-way): that is the caller's answer, not a fault.
      if (code === 'executor_error') {
        const reason = firstLine(errorMessage(err));
        return { kind: 'unreadable', loop: /ELOOP|too many levels of symbolic links/.test(reason), reason };
      }
      throw err;
    }
    return r.kind === 'file' ? { kind: 'file', bytes: Buffer.from(r.base64, 'base64') } : r;
  }

  async resolvePaths(paths: string[]): Promise<(string | null)[]> {
    return this.#using(async (client) => (await client.request<{ resolved: (string | null)[] }>('resolve', { paths }, this.#opts.requestTimeoutMs)).resolved);
  }

  /** A tar or tar.gz stream into the workspace, all or nothing (workspace-upload.ts); counts as use while it runs. */
  async uploadArchive(body: Readable, opts: UploadOptions): Promise<UploadResult> {
    this.#hooks.touch(+1);
    try {
      const client = await this.#hooks.connect();
      const container = this.#hooks.docker.getContainer(containerName(this.#opts.namePrefix, this.sessionId));
      return await uploadArchive({ docker: this.#hooks.docker, container, client, options: this.#opts, sessionId: this.sessionId }, body, opts);
    } finally {
      this.#hooks.touch(-1);
    }
  }

  /** A question about the workspace's baseline that the executor answers itself (sandbox-image/executor/workspace-ops.mjs). */
  async workspaceQuery<T>(op: 'changes'): Promise<T> {
    return this.#using((client) => client.request<T>(op, {}, this.#opts.requestTimeoutMs));
  }

  /** Counts the sandbox in use (the reaper leaves it running) until the returned release, which may be called more than once. */
  hold(): () => void {
    this.#hooks.touch(+1);
    let held = true;
    return () => {
      if (held) this.#hooks.touch(-1);
      held = false;
    };
  }

  async cancelRunning(): Promise<number> {
    return this.#using(async (client) => (await client.request<{ cancelled: number }>('cancelAll', {}, this.#opts.requestTimeoutMs)).cancelled);
  }

  // In use from before the connect to the answer: a pause (idle-pause.ts)
  // judged in between would freeze the executor under a request just sent.
  async #using<T>(fn: (client: ExecutorClient) => Promise<T>): Promise<T> {
    this.#hooks.touch(+1);
    try {
      return await this.#thawing(fn(await this.#hooks.connect()));
    } finally {
      this.#hooks.touch(-1);
    }
  }

  // Only the process that paused a container knows it did: another worker of
  // the same engine whose request is not answered soon looks, and thaws it
  // (one inspect per slow request; a running command is never paused, since the
  // pausing side asks the executor first).
  async #thawing<T>(answer: Promise<T>): Promise<T> {
    const thaw = this.#hooks.thaw;
    if (!thaw) return answer;
    const timer = setTimeout(() => void thaw().catch((err: unknown) => logSandboxError(this.sessionId, 'thawing a paused container failed', err)), THAW_CHECK_MS);
    try {
      return await answer;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** An executor answers a request in about a millisecond; one silent this long may be frozen by another process. */
const THAW_CHECK_MS = 300;

function firstLine(s: string): string {
  return s.split('\n', 1)[0]!.slice(0, 300);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
