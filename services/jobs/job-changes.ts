import type { Pipeline } from '../pipeline/index.ts';
import type { Logger } from '../log/index.ts';
import type { ChangeCounts, JobView } from './job-schemas.ts';

// What a finished job changed in its workspace, for the job view and the
// webhook: counts from the sandbox's change list (GET …/changes has the
// paths) and the links a pipeline follows to take the result.

/** Counts by kind; null when the workspace could not be compared (logged; GET …/changes answers why). */
export async function countChanges(pipeline: Pick<Pipeline, 'sandboxes' | 'isDeleted'>, sid: string, logger: Logger): Promise<ChangeCounts | null> {
  const out = pipeline.sandboxes.workspace;
  if (!out) return null;
  try {
    // Asking a deleted session's sandbox would make it again.
    if (await pipeline.isDeleted(sid)) return null;
    const { changes } = await out.changes(sid);
    const counts: ChangeCounts = { added: 0, modified: 0, deleted: 0 };
    for (const c of changes) counts[c.change]++;
    return counts;
  } catch (err) {
    logger.warn({ err }, 'the job\'s changes could not be counted');
    return null;
  }
}

/** Where the job and its result are, as paths of this API (relative to the URL the job was submitted to). */
export function jobLinks(view: Pick<JobView, 'job_id' | 'session_id'>): { job: string; workspace: string; changes: string; patch: string } {
  const session = `/v1/sessions/${encodeURIComponent(view.session_id)}`;
  return {
    job: `/v1/jobs/${encodeURIComponent(view.job_id)}`,
    workspace: `${session}/workspace`,
    changes: `${session}/changes`,
    patch: `${session}/changes?format=patch`,
  };
}
