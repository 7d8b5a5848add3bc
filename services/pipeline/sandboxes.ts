import type { Readable } from 'node:stream';
import type { Command } from '../protocol/index.ts';
import { SandboxPreviews, type PreviewOptions, type PreviewRun } from '../sandbox/index.ts';
import type { BaselineInfo, ExecuteOptions, ExecutionResult, ReadPathResult, SandboxManager, UploadOptions, UploadResult, WorkspaceOut } from '../sandbox/index.ts';

// The pipeline's only view of the sandboxes: every session's sandbox by its
// id, three verbs and a health probe. Not the in-container executor, which a
// sandbox talks to. Tests inject an in-memory fake; the service injects
// `DockerSandboxes`.

export type { BaselineInfo, WorkspaceOut };

export interface Sandboxes {
  /** Must not throw for a failing command (failures are `ok: false`); may throw for infrastructure errors. */
  execute(sessionId: string, command: Command, opts?: ExecuteOptions): Promise<ExecutionResult>;
  readPath(sessionId: string, path: string): Promise<ReadPathResult>;
  /** Real workspace-relative paths (symlinks followed), `null` for one that leads outside; queued behind running work. */
  resolvePaths(sessionId: string, paths: string[]): Promise<(string | null)[]>;
  /** Aborts whatever still runs in the session's sandbox, e.g. a dead worker's command. */
  cancelRunning(sessionId: string): Promise<number>;
  /** A tar or tar.gz stream into the workspace, all or nothing; throws the sandbox's UploadError when refused. */
  uploadWorkspace(sessionId: string, body: Readable, opts: UploadOptions): Promise<UploadResult>;
  /** Removes the session's sandbox (container and workspace). Idempotent. */
  remove(sessionId: string): Promise<void>;
  /** Opens the session's sandbox now (container, workspace, executor), before any command; when open, marks it in use. */
  open?(sessionId: string): Promise<void>;
  /** Pauses the session's sandbox while nothing runs there (an approval wait); its next use resumes it. True when paused. */
  pause?(sessionId: string): Promise<boolean>;
  /** A command is on its way: thaws the session's sandbox now if this process paused it (never throws; failures are logged). */
  prewake?(sessionId: string): void;
  /** Runs the command on a throwaway copy of the session's workspace (sandbox/preview.ts); absent where there is no real workspace. @throws PreviewRefused */
  preview?(sessionId: string, command: Command, signal?: AbortSignal): Promise<PreviewRun>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
  /** The workspace out: archive, baseline, change list, patch (absent where there is no real workspace, e.g. test fakes). */
  readonly workspace?: WorkspaceOut;
}

/** The real one: one Docker sandbox per session (sandbox/'s SandboxManager). */
export class DockerSandboxes implements Sandboxes {
  readonly #manager: SandboxManager;
  readonly #previews: SandboxPreviews;

  constructor(manager: SandboxManager, previews: PreviewOptions = {}) {
    this.#manager = manager;
    this.#previews = new SandboxPreviews(manager, previews);
  }

  get workspace(): WorkspaceOut {
    return this.#manager.workspace;
  }

  async execute(sessionId: string, command: Command, opts?: ExecuteOptions): Promise<ExecutionResult> {
    const sandbox = await this.#manager.sandboxFor(sessionId);
    return sandbox.execute(command, opts);
  }

  async readPath(sessionId: string, path: string): Promise<ReadPathResult> {
    const sandbox = await this.#manager.sandboxFor(sessionId);
    return sandbox.readPath(path);
  }

  async resolvePaths(sessionId: string, paths: string[]): Promise<(string | null)[]> {
    const sandbox = await this.#manager.sandboxFor(sessionId);
    return sandbox.resolvePaths(paths);
  }

  async cancelRunning(sessionId: string): Promise<number> {
    const sandbox = await this.#manager.sandboxFor(sessionId);
    return sandbox.cancelRunning();
  }

  async uploadWorkspace(sessionId: string, body: Readable, opts: UploadOptions): Promise<UploadResult> {
    const sandbox = await this.#manager.sandboxFor(sessionId);
    return sandbox.uploadArchive(body, opts);
  }

  remove(sessionId: string): Promise<void> {
    return this.#manager.remove(sessionId);
  }

  async open(sessionId: string): Promise<void> {
    await this.#manager.sandboxFor(sessionId);
  }

  pause(sessionId: string): Promise<boolean> {
    return this.#manager.pause(sessionId);
  }

  prewake(sessionId: string): void {
    this.#manager.prewake(sessionId);
  }

  preview(sessionId: string, command: Command, signal?: AbortSignal): Promise<PreviewRun> {
    return this.#previews.run(sessionId, command, signal);
  }

  ping(): Promise<boolean> {
    return this.#manager.ping();
  }

  close(): Promise<void> {
    return this.#manager.close();
  }
}
