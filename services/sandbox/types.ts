import type { Readable } from 'node:stream';
import type { Command, ToolName } from '../protocol/index.ts';
import type { UploadOptions, UploadResult } from './workspace-upload.ts';

/**
 * The outcome of one command in the sandbox (ledger fields of PROTOCOL.md §6).
 * `ok` is the fact; the ledger status is decided once, by the pipeline's lifecycle.
 */
export type ExecutionResult = {
  ok: boolean;
  tool: ToolName;
  path?: string;
  bytes_written?: number;
  /** For `read`, the file content (capped, see `readCapBytes`). */
  stdout?: string;
  stderr?: string;
  stdout_truncated?: boolean;
  stderr_truncated?: boolean;
  exit_code?: number;
  error?: string;
  /** Stable machine-readable reason, e.g. `empty_content`, `path_outside_workspace`, `timeout`. */
  error_code?: string;
  /** With `path_changed`: the workspace-relative paths as they resolve now (`null` = outside). */
  resolved?: { path?: string | null; dest?: string | null };
  duration_ms: number;
};

export type DirEntry = { name: string; type: 'file' | 'dir' | 'symlink' | 'other'; size: number };

export type ReadPathResult =
  | { kind: 'file'; bytes: Buffer }
  | { kind: 'dir'; entries: DirEntry[] }
  | { kind: 'missing' }
  | { kind: 'outside' }
  /** The read failed in the sandbox: a symbolic link loop (`loop`), or the path was swapped (symlink, directory) while it was read. */
  | { kind: 'unreadable'; loop: boolean; reason: string };

/** Resolutions a policy check was made on; the executor refuses (`path_changed`) when they no longer hold. */
export type ExpectedResolution = { path?: string | null; dest?: string | null };
/**
 * `needsBaseline`: the command must not run before the workspace has a
 * baseline; without one it is answered `baseline_missing`, not run (the
 * caller takes the baseline and asks again).
 */
export type ExecuteOptions = { signal?: AbortSignal; expect?: ExpectedResolution; needsBaseline?: boolean };

/** One session's container, as the pipeline sees it. */
export interface Sandbox {
  readonly sessionId: string;
  /** Must not throw for a failing command: failures come back as `ok: false`. */
  execute(command: Command, opts?: ExecuteOptions): Promise<ExecutionResult>;
  readPath(path: string): Promise<ReadPathResult>;
  /** Workspace-relative real paths (symlinks followed; `null` = leads outside), seen as the next command will see them. */
  resolvePaths(paths: string[]): Promise<(string | null)[]>;
  /** Extracts a tar or tar.gz stream into the workspace, all or nothing; throws UploadError when refused. */
  uploadArchive(body: Readable, opts: UploadOptions): Promise<UploadResult>;
  /** Aborts every command running in the sandbox (whoever started it); resolves with how many. */
  cancelRunning(): Promise<number>;
}

/** Error codes produced on the host side (the executor adds the per-tool ones). */
export type HostErrorCode = 'sandbox_unavailable' | 'sandbox_timeout' | 'aborted';
