import { PreviewRefused, UploadError, type PreviewRefusalCode } from '../../sandbox/index.ts';

// What can go wrong between a caller and the worker that serves its call
// (not in the sandbox: those errors cross the wire as they were thrown).

export type SandboxCallErrorCode =
  /** no worker took the call within `pickupMs` (none running, or all busy): nothing was done */
  | 'sandbox_unavailable'
  /** a worker took the call but its answer (or the next frame of a stream) did not come in time */
  | 'sandbox_timeout'
  /** the answer is larger than `maxAnswerBytes` */
  | 'sandbox_answer_too_large';

/** The HTTP answer of each code (the API's one mapping reads it: api/errors.ts). */
export const CALL_ERROR_STATUS: Record<SandboxCallErrorCode, 502 | 503 | 504> = {
  sandbox_unavailable: 503, sandbox_timeout: 504, sandbox_answer_too_large: 502,
};

export class SandboxCallError extends Error {
  constructor(readonly code: SandboxCallErrorCode, message: string, readonly details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'SandboxCallError';
  }
}

/** An error as it crosses Redis: what callers of `Sandboxes` look at (name, code, exit code, details). */
export type WireError = { name: string; message: string; code?: string; exitCode?: number; details?: Record<string, unknown> };

export function toWire(err: unknown): WireError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const e = err as Error & { code?: unknown; exitCode?: unknown; details?: unknown };
  return {
    name: e.name, message: e.message,
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    ...(typeof e.exitCode === 'number' ? { exitCode: e.exitCode } : {}),
    ...(e.details && typeof e.details === 'object' ? { details: e.details as Record<string, unknown> } : {}),
  };
}

/**
 * The worker's error again on the caller's side: the upload's refusals as
 * the sandbox's `UploadError` and a preview's as its `PreviewRefused` (the
 * pipeline maps them by class), the others
 * as an Error with the same name, code and exit code (baseline.ts and the
 * routes read those).
 */
export function fromWire(w: WireError): Error {
  if (w.name === 'UploadError') return new UploadError(w.code ?? 'upload_failed', w.message, w.details ?? {});
  if (w.name === 'PreviewRefused') return new PreviewRefused((w.code ?? 'copy_failed') as PreviewRefusalCode, w.message);
  if (w.name === 'SandboxCallError') return new SandboxCallError((w.code ?? 'sandbox_timeout') as SandboxCallErrorCode, w.message, w.details ?? {});
  const err = new Error(w.message) as Error & Record<string, unknown>;
  err.name = w.name;
  if (w.code !== undefined) err.code = w.code;
  if (w.exitCode !== undefined) err.exitCode = w.exitCode;
  if (w.details !== undefined) err.details = w.details;
  return err;
}
