import { describe, expect, it } from 'vitest';
import { jobFacts, withJobContext } from '../../../services/api/approval-context.ts';
import { TASK_CHARS, type ApprovalState } from '../../../services/pipeline/index.ts';

// The job's part of an approval's context, added where approvals are listed.

const approval = (token: string, job: string | null, preceding?: string) => ({
  token, job_id: job, session_id: 's', ...(preceding !== undefined ? { context: { preceding_text: preceding } } : {}),
}) as unknown as ApprovalState;

describe('withJobContext', () => {
  it('adds the task and metadata next to the stored words, reading each job once', async () => {
    const reads: string[] = [];
    const facts = async (id: string) => {
      reads.push(id);
      return id === 'job_a' ? { task: 'Deploy it', metadata: { ticket: 'OPS-1' } } : { task: 'Other', metadata: {} };
    };
    const out = await withJobContext(facts, [approval('t1', 'job_a', 'I run it.'), approval('t2', 'job_a'), approval('t3', 'job_b'), approval('t4', null, 'net')]);
    expect(out.map((a) => a.context)).toEqual([
      { task: 'Deploy it', metadata: { ticket: 'OPS-1' }, preceding_text: 'I run it.' },
      { task: 'Deploy it', metadata: { ticket: 'OPS-1' }, preceding_text: '' },
      { task: 'Other', preceding_text: '' },
      { preceding_text: 'net' },
    ]);
    expect(reads.sort()).toEqual(['job_a', 'job_b']);
  });

  it('cuts a long task and says so; a job that cannot be read leaves the approval without a task', async () => {
    const long = 'x'.repeat(TASK_CHARS + 10);
    const [a] = await withJobContext(async () => ({ task: long, metadata: {} }), [approval('t', 'job_a')]);
    expect(a!.context).toEqual({ task: long.slice(0, TASK_CHARS), task_truncated: true, preceding_text: '' });
    const [b] = await withJobContext(async () => { throw new Error('redis down'); }, [approval('t', 'job_a', 'w')]);
    expect(b!.context).toEqual({ preceding_text: 'w' });
    const [c] = await withJobContext(jobFacts(null), [approval('t', 'job_a')]);
    expect(c!.context).toEqual({ preceding_text: '' });
  });
});
