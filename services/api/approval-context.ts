import type { JobStore } from '../jobs/index.ts';
import { withIds } from '../log/index.ts';
import { boundMetadata, TASK_CHARS, type ApprovalContext, type ApprovalState } from '../pipeline/index.ts';

// The job's part of an approval's `context` (pipeline/approval-context.ts):
// its task and metadata, added where approvals are listed (GET /v1/approvals,
// the operator stream's cards). The worker that requested the approval keeps
// no job data; the task and metadata never change once the job is submitted,
// so reading them here, at listing time, shows the same thing every time.

/** A job's task and metadata by id; null for no such job (expired, or a session without one). */
export type JobFacts = (jobId: string) => Promise<{ task: string; metadata: Record<string, unknown> } | null>;

/** From the jobs' store, read at the first listing; without jobs (a process without them) there is no task to show. */
export function jobFacts(jobs: { store: Pick<JobStore, 'get'> } | null | undefined): JobFacts {
  if (!jobs) return async () => null;
  return async (id) => {
    const job = await jobs.store.get(id);
    return job ? { task: job.view.task, metadata: job.view.metadata } : null;
  };
}

/**
 * The approvals with their full `context`: the job's task (cut at TASK_CHARS)
 * and metadata next to the preceding text the worker stored. One read per job,
 * however many of its approvals are listed. A job that cannot be read leaves
 * its approvals without a task (logged): the list is still served.
 */
export async function withJobContext<T extends ApprovalState>(facts: JobFacts, approvals: readonly T[]): Promise<(T & { context: ApprovalContext })[]> {
  const reads = new Map<string, Promise<Job | null>>();
  const read = (id: string) => {
    let p = reads.get(id);
    if (!p) {
      // The metadata bounded once per job (boundMetadata): every approval of the job repeats it.
      p = facts(id).then((job) => (job ? { ...job, ...boundedOf(job.metadata) } : null)).catch((err: unknown) => {
        withIds({ job_id: id }).warn({ err }, 'approvals: the job could not be read; its approvals are listed without a task');
        return null;
      });
      reads.set(id, p);
    }
    return p;
  };
  return Promise.all(approvals.map(async (a) => ({ ...a, context: contextOf(a, a.job_id ? await read(a.job_id) : null) })));
}

type Job = { task: string; metadata: Record<string, unknown>; metadata_truncated: boolean };

function boundedOf(metadata: Record<string, unknown>): Pick<Job, 'metadata' | 'metadata_truncated'> {
  const b = boundMetadata(metadata);
  return { metadata: b.metadata, metadata_truncated: b.truncated };
}

function contextOf(a: ApprovalState, job: Job | null): ApprovalContext {
  const preceding_text = a.context?.preceding_text ?? '';
  if (!job) return { preceding_text };
  const cut = job.task.length > TASK_CHARS;
  return {
    task: cut ? job.task.slice(0, TASK_CHARS) : job.task,
    ...(cut ? { task_truncated: true } : {}),
    ...(Object.keys(job.metadata).length > 0 ? { metadata: job.metadata } : {}),
    ...(job.metadata_truncated ? { metadata_truncated: true } : {}),
    preceding_text,
  };
}
