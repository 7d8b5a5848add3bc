import { resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { approvalCard } from '../../../services/api/approval-view.ts';
import { CardViews, type CardViewDeps } from '../../../services/api/card/card-views.ts';
import { ViewPool } from '../../../services/api/card/view-pool.ts';
import { ApprovalCard, ApprovalsStreamEvent, JobsStreamEvent } from '../../../services/api/live-events.ts';
import type { ApprovalState } from '../../../services/pipeline/index.ts';
import { explainBash, loadPolicyDir, PolicyLayers, type Grant } from '../../../services/policy/index.ts';
import { servedDocument } from './doc-app.ts';

// Issue 24, "typed streams": the operator stream and the job-list stream each
// have one union of events, shown in the OpenAPI document, and a card built
// the way the stream builds it is of the card schema.

type Schema = { $ref?: string; oneOf?: Schema[]; anyOf?: Schema[]; properties?: Record<string, Schema>; const?: unknown; enum?: unknown[] };
const doc = (await servedDocument()) as unknown as {
  paths: Record<string, Record<string, { responses: Record<string, { description: string; content?: Record<string, { schema: Schema }> }> }>>;
  components: { schemas: Record<string, Schema> };
};
const deref = (s: Schema): Schema => (s.$ref ? deref(doc.components.schemas[s.$ref.split('/').pop()!]!) : s);

/** The `event` names of a route's 200 text/event-stream schema. */
function eventNames(path: string): unknown[] {
  const ok = doc.paths[path]!.get!.responses[200]!;
  expect(ok.description).toContain('`event:` is the `event` field');
  const union = deref(ok.content!['text/event-stream']!.schema);
  return (union.oneOf ?? union.anyOf ?? []).map((m) => {
    const name = deref(m).properties!.event!;
    return name.const ?? name.enum?.[0];
  });
}

describe('stream events in the OpenAPI document', () => {
  it('shows each stream\'s union of events under its 200 text/event-stream', () => {
    expect(eventNames('/v1/approvals/events')).toEqual(['snapshot', 'approval', 'resolution']);
    expect(eventNames('/v1/jobs/events')).toEqual(['snapshot', 'job']);
    expect(doc.components.schemas.ApprovalCard).toBeDefined();
  });
});

const POLICIES = resolve(import.meta.dirname, '../../../policies');
const layers = new PolicyLayers((await loadPolicyDir(POLICIES)).global, [], []);
const pool = new ViewPool({ maxBytes: 65536, maxLines: 2000, timeoutMs: 5000 });
afterAll(() => pool.close());

const DEPLOY_SH = 'set -e\nrm -rf ./data\ncurl -X POST https://prod.example/deploy\n';
/** The session's ledger records (the small fields the card reads), by index. */
const records: Record<number, object> = {
  1: { id: '1', tool: 'write', path: 'deploy.sh', dest: null, cmd: null, content: DEPLOY_SH, content_size: DEPLOY_SH.length, policy_reason: null },
  2: { id: '2', tool: 'edit', path: 'a.txt', dest: null, cmd: null, content: null, content_size: null, policy_reason: 'asks', old_text: 'a\nb\n', new_text: 'a\nc\n' },
  3: { id: '3', tool: 'bash', path: null, dest: null, cmd: 'bash deploy.sh', content: null, content_size: null, policy_reason: 'default for bash: prompt' },
};
const grant: Grant = { tool: 'bash', argv: ['bash', 'deploy.sh'] };
const deps = {
  pipeline: {
    approvals: { view: async () => null, saveView: async () => {}, grantOf: async () => [grant] },
    records: {
      rawBase: async (_sid: string, i: number) => (records[i] ? Buffer.from(JSON.stringify(records[i])) : null),
      rawCommand: async () => null,
      states: async (_sid: string, indexes: number[]) => indexes.map(() => ({ status: 'succeeded', approval: null })),
    },
    sessionMeta: async () => ({ session_id: 's1', owner: null, project: null, approval: 'on-request', policy: null, job_id: 'j1', created_at: '', deleted_at: null }),
  },
  gate: { explainBash: (_s: unknown, cmd: string, grants: Grant[]) => explainBash(layers, cmd, grants) },
  pool,
} as unknown as CardViewDeps;

const approval = (index: number, tool: string, target: string): ApprovalState => ({
  token: `t${index}`, session_id: 's1', job_id: 'j1', command_id: String(index), turn: 1, tool, target,
  matched_rules: [], justification: null, created_at: '2026-12-04T10:00:00Z', expires_at: '2026-12-04T10:10:00Z', status: 'pending', index,
  grant_options: [{ scope: 'exact', covers: target }],
  context: { task: 'ship the release', preceding_text: 'Now I run it.' },
  ...(tool === 'bash' ? {
    indirect: { path: 'deploy.sh', runner: 'bash', content: DEPLOY_SH, bytes: DEPLOY_SH.length, truncated: false, written_by_command_id: '1', written_by_index: 1, written_by_turn: 1 },
  } : {}),
});

describe('the approval card schema', () => {
  it('accepts cards built by approvalCard (a bash command running a script, an edit with its diff)', async () => {
    const views = new CardViews(deps);
    const bash = await approvalCard(views, approval(3, 'bash', 'bash deploy.sh'));
    expect(bash.indirect_lines!.lines).toHaveLength(3);
    expect(bash.recent.map((r) => r.id)).toEqual(['1', '2']);
    expect(bash.grant.scope).toEqual(grant);
    expect(ApprovalCard.parse(bash)).toEqual(bash);
    const edit = await approvalCard(views, approval(2, 'edit', 'a.txt'));
    expect(edit.diff).toEqual([{ op: ' ', text: 'a' }, { op: '-', text: 'b' }, { op: '+', text: 'c' }]);
    expect(ApprovalCard.parse(edit)).toEqual(edit);

    // As the stream sends them.
    for (const e of [{ event: 'snapshot', data: { approvals: [bash, edit] } }, { event: 'approval', data: edit }]) {
      expect(ApprovalsStreamEvent.safeParse(JSON.parse(JSON.stringify(e))).success).toBe(true);
    }
    const resolution = { token: 't3', session_id: 's1', job_id: 'j1', command_id: '3', status: 'reject', decision: 'reject', decided_by: 'alice', decided_at: '2026-12-04T10:01:00Z', reason: 'no' };
    expect(ApprovalsStreamEvent.safeParse({ event: 'resolution', data: resolution }).success).toBe(true);
    // A session event's name is not one of this stream's.
    expect(ApprovalsStreamEvent.safeParse({ event: 'approval_requested', data: bash }).success).toBe(false);
  });

  it('refuses a card missing a required field, or with one of the wrong type', async () => {
    const card = await approvalCard(new CardViews(deps), approval(3, 'bash', 'bash deploy.sh'));
    const { recent: _recent, ...noRecent } = card;
    expect(ApprovalCard.safeParse(noRecent).success).toBe(false);
    const { command: _command, ...noCommand } = card;
    expect(ApprovalCard.safeParse(noCommand).success).toBe(false);
    expect(ApprovalCard.safeParse({ ...card, diff_truncated: 'no' }).success).toBe(false);
    expect(ApprovalCard.safeParse({ ...card, grant: { scope: { tool: 'nope' }, words: '' } }).success).toBe(false);
    expect(ApprovalsStreamEvent.safeParse({ event: 'approval', data: noRecent }).success).toBe(false);
  });

  it('the job-list stream has its snapshot and job events only', () => {
    expect(JobsStreamEvent.safeParse({ event: 'snapshot', data: { jobs: [] } }).success).toBe(true);
    expect(JobsStreamEvent.safeParse({ event: 'approval', data: {} }).success).toBe(false);
  });
});
