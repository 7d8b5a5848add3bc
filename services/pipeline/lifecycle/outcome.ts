import { OUTSIDE } from '../../policy/index.ts';
import type { ToolName } from '../../protocol/index.ts';
import { DEFAULT_OUTPUT_CAP_BYTES, type ExecutionResult } from '../../sandbox/index.ts';
import { capText, summarize, type LedgerResult } from '../ledger-record.ts';

// A command that ran (or was refused right before its side effect): the
// executor's answer becomes the ledger's result here, the status decided
// once and the output capped once. Pure.

export type RunStatus = 'succeeded' | 'failed' | 'forbidden';
export type Outcome = { status: RunStatus; result: LedgerResult };

/** Executor failures that are refusals of the hard invariant (or of a check that no longer holds), not ordinary failures. */
export function isRefusal(errorCode: string | undefined): boolean {
  return errorCode === OUTSIDE || errorCode === 'path_changed' || errorCode === 'forbidden';
}

/** A symlink out of the workspace found at execution is the hard invariant: refused, like `..`. */
export function statusOf(r: Pick<ExecutionResult, 'ok' | 'error_code'>): RunStatus {
  return r.ok ? 'succeeded' : isRefusal(r.error_code) ? 'forbidden' : 'failed';
}

export function outcomeOf(tool: ToolName, r: ExecutionResult, capChars = DEFAULT_OUTPUT_CAP_BYTES): Outcome {
  const status = statusOf(r);
  const out = capText(r.stdout, capChars);
  const err = capText(r.stderr, capChars);
  const base = {
    error: r.ok ? null : r.error ?? `exit code ${r.exit_code ?? '?'}`, error_code: r.ok ? null : r.error_code ?? null,
    bytes_written: r.bytes_written ?? null, stdout: out.text, stderr: err.text,
    stdout_truncated: out.truncated || Boolean(r.stdout_truncated), stderr_truncated: err.truncated || Boolean(r.stderr_truncated),
    exit_code: r.exit_code ?? null, duration_ms: r.duration_ms,
  };
  return { status, result: { ...base, output_summary: summarize(tool, { ...base, status }) } };
}

/** What the executor would have answered for a run that failed before or around it (a refused path, a crashed executor). */
export function failedRun(tool: ToolName, code: string, error: string, durationMs: number): ExecutionResult {
  return { ok: false, tool, duration_ms: durationMs, error, error_code: code };
}
