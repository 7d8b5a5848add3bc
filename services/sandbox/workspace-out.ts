import type Docker from 'dockerode';
import { Readable } from 'node:stream';
import { ExecutorRequestError } from './executor-client.ts';
import { EXECUTOR_NODE } from './container-spec.ts';
import { containerName } from './names.ts';
import { execJson, execStream, WorkspaceExecError } from './workspace-exec.ts';
import { thawIfPaused } from './frozen-container.ts';

// The workspace out of its sandbox (API.md additions 2026-12-01): the
// archive (GNU tar in the container), the baseline, the change list and the
// patch (sandbox-image/executor/workspace-out.mjs). Each is one `docker exec`
// as root in the session's container, streamed: the service never holds a
// workspace, only a socket's worth of it. Root in the container (not the
// command user): the baseline lives where commands cannot reach, unreadable
// files are still read (CAP_DAC_READ_SEARCH), and the executor's sweep of
// the command user's processes after each command does not cut a download.
// Neither tar nor the walk follows a symlink: one is archived as a symlink.

export type WorkspaceFormat = 'tar' | 'tar.gz';
export type ChangeKind = 'added' | 'modified' | 'deleted';
export type WorkspaceChange = { path: string; change: ChangeKind; bytes: number };
/** `baseline_at` null: no baseline yet (nothing ran in the workspace since it was made), so nothing changed. */
export type ChangeList = { baseline_at: string | null; changes: WorkspaceChange[] };
export type BaselineInfo = { baseline_at: string; files: number; stored_bytes: number; ms: number };

/** The session's workspace, out of its sandbox. Errors carry `code` (WorkspaceExecError, or the sandbox's own). */
export interface WorkspaceOut {
  /** The workspace as a tar stream (gzip'd for `tar.gz`). */
  archive(sessionId: string, format: WorkspaceFormat): Promise<Readable>;
  /** A git patch from the baseline to the workspace as it is; empty without a baseline. */
  patch(sessionId: string): Promise<Readable>;
  changes(sessionId: string): Promise<ChangeList>;
  /** Makes the workspace as it is now the baseline (after seeding or an upload). */
  setBaseline(sessionId: string): Promise<BaselineInfo>;
  /** Takes a baseline unless the workspace has one (a command was answered `baseline_missing`). */
  ensureBaseline(sessionId: string): Promise<void>;
}

const SCRIPT = '/opt/thinkflow/executor/workspace-out.mjs';
const TAR = [
  'tar', '-C', '/workspace', '--one-file-system', '--anchored',
  // The sandbox's own entries (workspace-out.mjs's walk skips the same).
  '--exclude=./.thinkflow-private', '--exclude=./.thinkflow-upload-*',
  '--sort=name', '--numeric-owner', '--owner=0', '--group=0',
  // 64 KiB records instead of 10 KiB: a sixth of the writes, frames and chunks between the container and the client.
  '--blocking-factor=128',
];

/**
 * A session's running sandbox (DockerSandbox): `hold()` counts it in use
 * until the returned release (idempotent), so the reaper leaves it running;
 * `workspaceQuery` asks its executor.
 */
export type SandboxHold = { hold(): () => void; workspaceQuery<T>(op: 'changes'): Promise<T> };
type Refusal = { failed: { code: string; message: string } };

export class SandboxWorkspaceOut implements WorkspaceOut {
  constructor(
    private readonly docker: () => Docker,
    private readonly namePrefix: () => string,
    private readonly running: (sessionId: string) => Promise<SandboxHold>,
  ) {}

  async archive(sessionId: string, format: WorkspaceFormat): Promise<Readable> {
    // gzip's fastest level: the container has one CPU, and a download is bound by it (bench/workspace).
    const argv = format === 'tar.gz' ? [...TAR, '-I', 'gzip -1', '-cf', '-', '.'] : [...TAR, '-cf', '-', '.'];
    return this.#stream(sessionId, argv, [0, 1]); // tar's 1: a file changed while it was read (a command running)
  }

  async patch(sessionId: string): Promise<Readable> {
    try {
      return await this.#stream(sessionId, [EXECUTOR_NODE, SCRIPT, 'patch'], [0]);
    } catch (err) {
      if ((err as { code?: string }).code === 'no_baseline') return emptyStream();
      throw err;
    }
  }

  // The executor answers it (no exec, no new process): it is asked for often (every finished job, pipelines polling).
  async changes(sessionId: string): Promise<ChangeList> {
    const r = await this.#ask<ChangeList>(sessionId, 'changes');
    if (!('failed' in r)) return r;
    if (r.failed.code === 'no_baseline') return { baseline_at: null, changes: [] };
    // Too long for the executor's channel: the same list from a program of its own, on its own stream.
    if (r.failed.code === 'answer_too_large') return this.#json<ChangeList>(sessionId, 'changes');
    throw new WorkspaceExecError(r.failed.code, r.failed.message, null);
  }

  setBaseline(sessionId: string): Promise<BaselineInfo> {
    return this.#json<BaselineInfo>(sessionId, 'baseline-set');
  }

  // Asked when the executor answered a command `baseline_missing`; the program takes none if another worker just did.
  async ensureBaseline(sessionId: string): Promise<void> {
    await this.#json(sessionId, 'baseline-ensure');
  }

  // An executor from an image older than these questions does not know them: its container has no private area either.
  async #ask<T>(sessionId: string, op: 'changes'): Promise<T | Refusal> {
    try {
      return await (await this.running(sessionId)).workspaceQuery<T | Refusal>(op);
    } catch (err) {
      if (!(err instanceof ExecutorRequestError && /unknown op/.test(err.message))) throw err;
      return { failed: { code: 'baseline_unsupported', message: 'this sandbox was created before workspace baselines existed; it gets them once its container is made again' } };
    }
  }

  async #container(sessionId: string): Promise<{ container: Docker.Container; release: () => void }> {
    const release = (await this.running(sessionId)).hold();
    // Asked again once held (a held sandbox is never paused): a pause may have come in between, and `docker exec` refuses a paused container.
    // Another process may have paused it (only the pauser knows): one inspect, as `docker exec` refuses a paused container.
    const name = containerName(this.namePrefix(), sessionId);
    await this.running(sessionId).then(() => thawIfPaused(this.docker(), name, sessionId)).catch((err: unknown) => {
      release();
      throw err;
    });
    return { container: this.docker().getContainer(name), release };
  }

  async #stream(sessionId: string, argv: string[], okExits: number[]): Promise<Readable> {
    const { container, release } = await this.#container(sessionId);
    try {
      return await execStream(container, argv, { okExits, onClose: release });
    } catch (err) {
      release();
      throw err;
    }
  }

  async #json<T>(sessionId: string, op: string): Promise<T> {
    const { container, release } = await this.#container(sessionId);
    try {
      return await execJson<T>(container, [EXECUTOR_NODE, SCRIPT, op]);
    } finally {
      release();
    }
  }
}

function emptyStream(): Readable {
  return Readable.from([]);
}
