import type { Readable } from 'node:stream';
import { UploadError, type UploadEntry, type UploadOptions, type UploadRefusal } from '../sandbox/index.ts';
import { PipelineError, type PipelineErrorCode } from './errors.ts';
import type { Pipeline, SeededFile } from './pipeline.ts';
import type { PolicyGate } from './policy-gate.ts';
import type { SessionMeta } from './sessions.ts';

// PUT /v1/sessions/:id/workspace, the pipeline's part: the session is taken
// (nothing else may run: session-claims.ts), every entry is judged by the
// policy as a write of its path while the archive streams into the sandbox
// (which extracts it as the command user and commits all or nothing:
// sandbox/workspace-upload.ts), and the files are announced like seeded ones
// (`files_seeded`): not commands, never in the ledger.

export type UploadSummary = { files: number; bytes: number };

/** What the sandbox's refusals become (each a PipelineError the API maps to its status). */
const CODES: Record<string, PipelineErrorCode> = {
  session_busy: 'session_busy', invalid_archive: 'invalid_archive', invalid_files: 'invalid_files', workspace_full: 'workspace_full',
  workspace_conflict: 'workspace_conflict',
  // The commit met the workspace as a command left it (a read-only directory, a name taken meanwhile).
  permission_denied: 'workspace_conflict', is_directory: 'workspace_conflict', not_a_directory: 'workspace_conflict', already_exists: 'workspace_conflict',
};

function judge(gate: Pick<PolicyGate, 'evaluateSeeded'>, session: SessionMeta, e: UploadEntry): UploadRefusal | null {
  const ev = gate.evaluateSeeded(session, e.path);
  if (ev.decision === 'allow') return null;
  // `prompt` refuses too: an upload never waits for a person.
  const rule = ev.matched_rules.find((r) => r.decision === ev.decision);
  return {
    code: 'invalid_files',
    message: `${e.path}: the policy does not allow writing it (${ev.reason})`,
    details: { path: e.path, decision: ev.decision, rule: rule?.id ?? null, reason: ev.reason, matched_rules: ev.matched_rules },
  };
}

/** How an upload into `session` is judged: each entry as a seeded write (also what a worker serving a remote upload uses). */
export function uploadChecks(gate: Pick<PolicyGate, 'evaluateSeeded'>, session: SessionMeta): UploadOptions {
  return { check: (e) => judge(gate, session, e) };
}

/**
 * Extracts the tar (or tar.gz) `body` into the session's workspace, all or
 * nothing, and emits `files_seeded`.
 * @throws PipelineError session_busy, invalid_archive, invalid_files, workspace_full, workspace_conflict, upload_failed;
 *   errors of `body` itself (e.g. the API's size limit) and of the sandbox transport pass through
 */
export async function uploadWorkspace(p: Pipeline, sid: string, body: Readable): Promise<UploadSummary> {
  const claim = await p.claims.claimUpload(sid);
  try {
    const session = await p.session(sid);
    const result = await p.sandboxes.uploadWorkspace(sid, body, uploadChecks(p.gate, session)).catch((err: unknown) => {
      if (!(err instanceof UploadError)) throw err;
      throw new PipelineError(CODES[err.code] ?? 'upload_failed', err.message, { ...err.details, ...(CODES[err.code] ? {} : { cause_code: err.code }) });
    });
    const paths: SeededFile[] = result.written.map((e) => ({ path: e.path, bytes: e.size }));
    // GET …/changes compares against the workspace after its uploads (API.md): the
    // executor dropped the old baseline, and the next command takes the new one first.
    await p.events.append(sid, session.job_id, { type: 'files_seeded', paths });
    return { files: result.files, bytes: result.bytes };
  } finally {
    await claim.release();
  }
}
