// Errors the pipeline throws on purpose; the API maps each code to a status.
export type PipelineErrorCode = 'session_not_found' | 'session_deleted' | 'duplicate_id' | 'invalid_policy' | 'policy_loosens' | 'invalid_files' | 'too_many' | 'seed_failed' | 'cleanup_failed' | 'too_many_commands' | 'storage_quota_exceeded'
  | 'invalid_validator'
  | 'session_busy' | 'invalid_archive' | 'workspace_full' | 'workspace_conflict' | 'upload_failed'
  | 'invalid_body' | 'edit_forbidden';

export class PipelineError extends Error {
  readonly code: PipelineErrorCode;
  readonly details: unknown;
  constructor(code: PipelineErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = 'PipelineError';
    this.code = code;
    this.details = details;
  }
}
