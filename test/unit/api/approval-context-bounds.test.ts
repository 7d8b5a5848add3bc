import { describe, expect, it } from 'vitest';
import { withJobContext } from '../../../services/api/approval-context.ts';
import { ApprovalContext, METADATA_CHARS, type ApprovalState } from '../../../services/pipeline/index.ts';

// A job's metadata is the submitter's (any JSON up to the 2 MiB body limit),
// and every approval of the job carries it in `context` (GET /v1/approvals,
// the operator stream's snapshot and cards). Unbounded, one submitter's job
// with 2 MiB of metadata and a few hundred approvals makes a listing of
// hundreds of MiB (past V8's longest string the listing fails outright, for
// every operator), and a card with 100 000 keys renders 200 000 DOM nodes.
// Like the task (TASK_CHARS), an approval's metadata is bounded and says so.

const approval = (token: string) => ({ token, job_id: 'job_a', session_id: 's' }) as unknown as ApprovalState;

describe('withJobContext: the metadata an approval carries is bounded', () => {
  it('a huge metadata (many keys, long values) is cut per approval, and marked', async () => {
    const metadata: Record<string, unknown> = { ticket: 'OPS-1', blob: 'x'.repeat(1024 * 1024) };
    for (let i = 0; i < 50_000; i++) metadata[`k${i}`] = i;
    const rows = await withJobContext(async () => ({ task: 'Deploy it', metadata }), Array.from({ length: 100 }, (_, i) => approval(`t${i}`)));
    const size = JSON.stringify(rows).length;
    expect(size).toBeLessThan(100 * (METADATA_CHARS + 1024));
    const ctx = rows[0]!.context;
    expect(ctx.metadata_truncated).toBe(true);
    expect(ctx.metadata!.ticket).toBe('OPS-1');
    expect(JSON.stringify(ctx.metadata).length).toBeLessThanOrEqual(METADATA_CHARS);
    expect(ApprovalContext.safeParse(ctx).success).toBe(true);
  });

  it('a small metadata is kept whole, unmarked', async () => {
    const metadata = { ticket: 'OPS-1', nested: { a: [1, 2, 3] }, note: 'y'.repeat(500) };
    const [a] = await withJobContext(async () => ({ task: 'T', metadata }), [approval('t')]);
    expect(a!.context).toEqual({ task: 'T', metadata, preceding_text: '' });
  });
});
