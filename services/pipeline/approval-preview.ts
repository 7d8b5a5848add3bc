import type { Redis } from 'ioredis';
import { z } from 'zod';
import { withIds } from '../log/index.ts';
import type { Command } from '../protocol/index.ts';
import type { PreviewRun } from '../sandbox/index.ts';
import type { ApprovalState, Approvals } from './approvals.ts';
import type { Keys } from './keys.ts';
import type { LedgerReads } from './pipeline-ports.ts';
import type { Sandboxes } from './sandboxes.ts';

// Preview before deciding (issue 24): a pending command run on a throwaway
// copy of its session's workspace, by whichever worker takes the call
// (sandbox-calls: an API process has no Docker), bounded there
// (sandbox/preview.ts). This is the one home of its answer. Here: what
// cannot be previewed, one preview at a time per approval (a key with the
// preview's bound as TTL, so a crashed caller frees it), and every outcome
// in words an operator reads on the card.

export const PreviewChange = z.object({
  path: z.string(),
  change: z.enum(['added', 'modified', 'deleted']),
  bytes: z.number().int().nonnegative().meta({ description: 'the file\'s size after the command (0 for a deletion)' }),
  diff: z.string().optional().meta({ description: 'a text file\'s unified diff (`---`/`+++` and hunks); absent for a binary file, a file past the bound of the diffs read (128 KiB in all), or a change of mode only' }),
  diff_truncated: z.boolean().optional(),
});

/** Why a preview is `unavailable` or `failed`, for programs; `reason` says it in words. */
export const PreviewCode = z.enum([
  'network_approval', 'command_unavailable', 'no_sandboxes', 'worker_unavailable', 'previews_busy', 'preview_running',
  'workspace_too_large', 'preview_timeout', 'copy_failed', 'command_cut', 'sandbox_error', 'preview_error',
]);

export const ApprovalPreview = z.object({
  /** ok: the command ran to its end in the copy (whatever its exit code); failed: it was cut, or the preview broke; unavailable: nothing ran */
  status: z.enum(['ok', 'unavailable', 'failed']),
  code: PreviewCode.optional(),
  reason: z.string().optional(),
  exit_code: z.number().int().optional(),
  /** the command's own failure in the copy (`nonzero_exit`, `timeout`, `workspace_full`, …) */
  error_code: z.string().optional(),
  stdout: z.string().optional(),
  stderr: z.string().optional(),
  /** stdout or stderr was cut (each is kept up to 16 KiB) */
  truncated: z.boolean().optional(),
  /** the command's timeout in the copy: its own, capped at THINKFLOW_PREVIEW_TIMEOUT_S */
  limit_ms: z.number().int().optional(),
  duration_ms: z.number().int().optional(),
  changes: z.array(PreviewChange),
  /** more paths changed than listed (200) */
  changes_truncated: z.boolean().optional(),
}).meta({ description: 'the pending command as it ran on a throwaway copy of the workspace (network none, the session\'s limits); the real workspace is never touched' });
export type ApprovalPreview = z.infer<typeof ApprovalPreview>;
type Code = z.infer<typeof PreviewCode>;

export type ApprovalPreviewPorts = {
  approvals: Pick<Approvals, 'get'>;
  records: Pick<LedgerReads, 'rawCommand'>;
  sandboxes: Sandboxes;
  redis: Pick<Redis, 'set' | 'del'>;
  keys: Keys;
  /** TTL of the one-at-a-time key: longer than a preview can last (its bound), shorter than an operator waits */
  lockMs: number;
};

const unavailable = (code: Code, reason: string): ApprovalPreview => ({ status: 'unavailable', code, reason, changes: [] });

/** Previews a pending approval's command; the caller has checked that it is pending. Never throws for a preview that is not possible. */
export async function previewApproval(p: ApprovalPreviewPorts, a: ApprovalState): Promise<ApprovalPreview> {
  if (a.tool === 'network') {
    return unavailable('network_approval', 'a network connection cannot be previewed: a preview runs with no network, so it would only show the connection refused');
  }
  if (!p.sandboxes.preview) return unavailable('no_sandboxes', 'this service runs no sandboxes to preview on');
  const raw = await p.records.rawCommand(a.session_id, a.index);
  if (!raw) return unavailable('command_unavailable', 'the command is no longer kept (it has run or was dropped)');
  const command = JSON.parse(raw.toString('utf8')) as Command;
  const lock = p.keys.approvalPreview(a.session_id, a.token);
  if ((await p.redis.set(lock, '1', 'PX', p.lockMs, 'NX')) !== 'OK') {
    return unavailable('preview_running', 'a preview of this approval is already running; its result shows when it is done');
  }
  try {
    return fromRun(await p.sandboxes.preview(a.session_id, command));
  } catch (err) {
    return fromError(err, a);
  } finally {
    await p.redis.del(lock);
  }
}

function fromRun(r: PreviewRun): ApprovalPreview {
  const x = r.result;
  const cut = x.error_code === 'timeout' || x.error_code === 'aborted';
  const broke = x.error_code?.startsWith('sandbox_') === true;
  const truncated = x.stdout_truncated === true || x.stderr_truncated === true;
  return {
    status: cut || broke ? 'failed' : 'ok',
    ...(cut ? { code: 'command_cut' as const, reason: `the command did not finish within the preview's ${r.run_limit_ms / 1000} s and was stopped; what it did until then is shown` } : {}),
    ...(broke ? { code: 'sandbox_error' as const, reason: `the preview's sandbox failed: ${x.error ?? x.error_code}` } : {}),
    ...(x.exit_code !== undefined ? { exit_code: x.exit_code } : {}),
    ...(x.error_code !== undefined ? { error_code: x.error_code } : {}),
    ...(x.stdout !== undefined ? { stdout: x.stdout } : {}),
    ...(x.stderr !== undefined ? { stderr: x.stderr } : !x.ok && x.error ? { stderr: x.error } : {}),
    ...(truncated ? { truncated } : {}),
    limit_ms: r.run_limit_ms,
    duration_ms: r.duration_ms,
    changes: r.changes,
    ...(r.changes_truncated ? { changes_truncated: true } : {}),
  };
}

/** A refusal or failure as the card says it; anything unexpected is logged with the approval's ids. */
function fromError(err: unknown, a: ApprovalState): ApprovalPreview {
  const e = err as { name?: string; code?: string; message?: string };
  const message = e.message ?? String(err);
  if (e.name === 'PreviewRefused') {
    if (e.code === 'workspace_too_large' || e.code === 'previews_busy') return unavailable(e.code, message);
    if (e.code === 'preview_timeout' || e.code === 'copy_failed') return { status: 'failed', code: e.code, reason: message, changes: [] };
  }
  if (e.name === 'SandboxCallError' && e.code === 'sandbox_unavailable') {
    return unavailable('worker_unavailable', `no worker took the preview (${message})`);
  }
  withIds({ session_id: a.session_id, job_id: a.job_id ?? undefined }).error({ err, command_id: a.command_id }, 'approval preview failed');
  return { status: 'failed', code: 'preview_error', reason: `the preview failed: ${message}`, changes: [] };
}
