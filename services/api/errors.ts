import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { CALL_ERROR_STATUS, isRedisUnreachable, isStorageFull, PipelineError, SandboxCallError } from '../pipeline/index.ts';

// One error type that knows its HTTP answer. `app.onError` renders every
// AppError as {"error":{"code","message","details"}}; anything else is logged
// and answered as a bare 500 so internals never leak.

export type AppErrorCode =
  | 'invalid_json' | 'invalid_body' | 'invalid_query' | 'unsupported_media_type' | 'payload_too_large'
  | 'job_finished' | 'job_not_paused'
  | 'unauthorized' | 'forbidden' | 'not_found' | 'session_not_found' | 'session_deleted'
  | 'approval_not_found' | 'approval_closed' | 'path_outside_workspace' | 'invalid_path'
  | 'invalid_policy' | 'policy_loosens' | 'grant_scope_unavailable' | 'webhook_refused' | 'invalid_files' | 'seed_failed' | 'duplicate_id' | 'not_ready' | 'too_many' | 'storage_full' | 'cleanup_failed' | 'internal'
  | 'host_not_allowed' | 'cross_origin_refused' | 'client_header_required'
  | 'too_many_commands' | 'path_changed' | 'sandbox_unavailable' | 'storage_quota_exceeded'
  | 'invalid_idempotency_key' | 'idempotency_conflict' | 'idempotency_in_progress' | 'idempotency_answer_not_kept'
  | 'invalid_validator'
  | 'session_busy' | 'invalid_archive' | 'workspace_full' | 'workspace_conflict' | 'upload_failed'
  | 'baseline_unavailable' | 'workspace_changed'
  // approve_edited: the edited command reaches a forbid (the approval stays pending)
  | 'edit_forbidden'
  | 'sandbox_timeout' | 'sandbox_answer_too_large'
  // 503: Redis unreachable (middleware/redis-guard.ts); the process is draining on SIGTERM (services/main/http-drain.ts)
  | 'redis_unavailable' | 'shutting_down';

export class AppError extends Error {
  readonly code: AppErrorCode;
  readonly status: ContentfulStatusCode;
  readonly details: unknown;

  constructor(status: ContentfulStatusCode, code: AppErrorCode, message: string, opts: { details?: unknown; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.details = opts.details ?? null;
  }

  toBody(): { error: { code: AppErrorCode; message: string; details: unknown } } {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

const PIPELINE_STATUS: Record<PipelineError['code'], ContentfulStatusCode> = {
  session_not_found: 404, session_deleted: 410, duplicate_id: 409, invalid_policy: 400, policy_loosens: 400, invalid_files: 400, too_many: 429, seed_failed: 422, cleanup_failed: 503,
  too_many_commands: 413,
  // 429 like the other per-key caps: this key's quota, not the server's storage (that is 503 storage_full).
  storage_quota_exceeded: 429,
  invalid_validator: 400,
  // Workspace uploads (PUT /v1/sessions/:id/workspace); upload_failed: the sandbox's extraction failed on its side.
  session_busy: 409, invalid_archive: 400, workspace_full: 413, workspace_conflict: 409, upload_failed: 502,
  // approve_edited: an edit that does not fit its command, or that the policy forbids
  invalid_body: 400, edit_forbidden: 400,
};

/** The one boundary where pipeline errors become HTTP errors. */
export function toAppError(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  if (err instanceof PipelineError) return new AppError(PIPELINE_STATUS[err.code], err.code, err.message, { details: err.details ?? null });
  // An API process's sandbox call to the workers (pipeline/sandbox-calls): none took it 503, no answer in time 504, too large 502.
  if (err instanceof SandboxCallError) return new AppError(CALL_ERROR_STATUS[err.code], err.code, err.message, { details: err.details, cause: err });
  // Redis at maxmemory refuses writes whole (noeviction): the request changed nothing and may be retried.
  if (isStorageFull(err)) return new AppError(503, 'storage_full', 'storage is full: nothing was written; retry later', { cause: err });
  // A command that lost its connection: whether it ran is unknown (middleware/redis-guard.ts answers most of these first).
  if (isRedisUnreachable(err)) return new AppError(503, 'redis_unavailable', `Redis is unreachable: ${(err as Error).message}`, { cause: err });
  return null;
}
