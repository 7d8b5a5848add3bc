import { ENV_DEFAULTS } from '../config/index.ts';

/**
 * Bounds of a preview (preview.ts): a pending command run in a throwaway
 * sandbox on a copy of its session's workspace. The sandbox itself has the
 * session's limits (the manager's SandboxOptions); these bound the preview.
 */
export interface PreviewOptions {
  /** A workspace whose archive is larger than this is not copied: `workspace_too_large` (THINKFLOW_PREVIEW_MAX_WORKSPACE_MB). @default 268435456 (256 MiB) */
  maxWorkspaceBytes?: number;
  /** The command's own timeout, capped at this (THINKFLOW_PREVIEW_TIMEOUT_S). @default 60000 */
  maxRunMs?: number;
  /** Previews one process runs at once; past it `previews_busy` (THINKFLOW_PREVIEWS_PER_WORKER). @default 2 */
  perProcess?: number;
  /** Time for everything around the run (start, copy, baseline, changes); with `maxRunMs`, a preview's whole bound (within a sandbox call's 120 s). @default 45000 */
  setupMs?: number;
  /** Bytes of stdout and of stderr kept, each. @default 16384 */
  outputBytes?: number;
  /** Bytes of the patch read for diffs (all files), and of one file's diff. @default 131072, 16384 */
  patchBytes?: number;
  fileDiffBytes?: number;
  /** Changed paths listed at most. @default 200 */
  maxChanges?: number;
}

export type ResolvedPreviewOptions = Required<PreviewOptions>;

const D = ENV_DEFAULTS;

export function resolvePreviewOptions(o: PreviewOptions = {}): ResolvedPreviewOptions {
  return {
    maxWorkspaceBytes: o.maxWorkspaceBytes ?? D.THINKFLOW_PREVIEW_MAX_WORKSPACE_MB * 1024 * 1024,
    maxRunMs: o.maxRunMs ?? D.THINKFLOW_PREVIEW_TIMEOUT_S * 1000,
    perProcess: o.perProcess ?? D.THINKFLOW_PREVIEWS_PER_WORKER,
    setupMs: o.setupMs ?? 45_000,
    outputBytes: o.outputBytes ?? 16 * 1024,
    patchBytes: o.patchBytes ?? 128 * 1024,
    fileDiffBytes: o.fileDiffBytes ?? 16 * 1024,
    maxChanges: o.maxChanges ?? 200,
  };
}
