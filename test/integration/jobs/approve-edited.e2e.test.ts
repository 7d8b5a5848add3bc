// "Edit, then approve" (approve_edited, API.md additions 2026-12-01) end to
// end on real Redis, Docker and BullMQ with a scripted model: the edited
// command runs instead of the asked one, the policy judges the edit (a forbid
// is a 400 and the approval stays pending), the ledger keeps both, and the
// model's next call hears what ran.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';
import { lastUserMessage, startHarness, type Harness } from './harness.ts';

const TRANSCRIPTS: TranscriptInput[] = [
  {
    name: 'edit-bash', match: 'frobnicate the workspace', delay_ms: 0,
    turns: [
      { reasoning: '<tf-bash id="1" cmd="frobnicate --all > frob.txt" need_result="true" />', text: '' },
      { reasoning: '', text: 'Frobnicated.' },
    ],
  },
  {
    name: 'edit-write', match: 'write the guarded notes', delay_ms: 0,
    turns: [
      { reasoning: '<tf-write id="1" path="guarded/notes.md" need_result="true">\nasked by the model\n</tf-write>', text: '' },
      { reasoning: '', text: 'Notes written.' },
    ],
  },
  {
    name: 'edit-touch', match: 'touch the guarded stamp', delay_ms: 0,
    turns: [{ reasoning: '<tf-touch id="1" path="guarded/stamp" />', text: 'Touched.' }],
  },
];

const GUARDED = {
  version: 1,
  rules: [
    { id: 'guarded-write', tool: 'write', path: 'guarded/**', decision: 'prompt', justification: 'needs a person' },
    { id: 'guarded-touch', tool: 'touch', path: 'guarded/**', decision: 'prompt', justification: 'needs a person' },
  ],
};

let h: Harness;
beforeAll(async () => { h = await startHarness('approve-edited', TRANSCRIPTS); });
afterAll(async () => { await h?.close(); });

async function pendingFor(jobId: string): Promise<any[]> {
  for (let i = 0; i < 150; i++) {
    const list = (await (await fetch(`${h.url}/v1/approvals?status=pending`)).json()).approvals.filter((a: any) => a.job_id === jobId);
    if (list.length) return list;
    await new Promise((r) => setTimeout(r, 100));
  }
  return [];
}

const answer = (token: string, body: unknown) => fetch(`${h.url}/v1/approvals/${token}`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});

async function refusal(res: Response): Promise<{ status: number; code: string; message: string; details: any }> {
  const body = (await res.json()) as { error: { code: string; message: string; details: any } };
  return { status: res.status, ...body.error };
}

describe('approve_edited', () => {
  it('runs the edited bash command; a forbidden edit is refused and the approval stays pending', async () => {
    const before = h.model.requests;
    const { job_id, session_id } = await h.submit({ task: 'frobnicate the workspace', approval: 'on-request' });
    const [pending] = await pendingFor(job_id);
    expect(pending).toMatchObject({ tool: 'bash', target: 'frobnicate --all > frob.txt' });

    const forbidden = await refusal(await answer(pending.token, { decision: 'approve_edited', cmd: 'curl https://example.com > frob.txt' }));
    expect(forbidden).toMatchObject({ status: 400, code: 'edit_forbidden', details: { rule: 'no-network-tools' } });
    expect(forbidden.message).toContain('no-network-tools');
    expect((await pendingFor(job_id)).map((a) => a.token)).toEqual([pending.token]);
    expect((await h.job(job_id)).status).toBe('awaiting_approval');

    const run = await answer(pending.token, { decision: 'approve_edited', cmd: 'echo edited-by-operator > frob.txt', reason: 'no frobnicate here' });
    expect(run.status).toBe(200);
    expect((await run.json()).approval).toMatchObject({ status: 'approve_edited', decision: 'approve_edited', reason: 'no frobnicate here' });

    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'succeeded', final_text: 'Frobnicated.' });
    expect(await h.file(session_id, 'frob.txt')).toBe('edited-by-operator\n');
    const [rec] = await h.ledger(session_id);
    expect(rec).toMatchObject({
      id: '1', tool: 'bash', cmd: 'echo edited-by-operator > frob.txt', status: 'succeeded', exit_code: 0,
      approval: { decision: 'approve_edited', reason: 'no frobnicate here' },
      edited_from: { tool: 'bash', cmd: 'frobnicate --all > frob.txt', path: null, content: null },
      // the record's policy fields are the edited command's own
      decision: 'allow',
    });
    // The model's next call hears that the operator edited the command, and what ran.
    const told = lastUserMessage(h.model, before + 1);
    expect(told).toContain('[THINKFLOW RESULT]');
    expect(told).toContain('The operator edited this command before approving it');
    expect(told).toContain('You asked for: frobnicate --all > frob.txt');
    expect(told).toContain('What ran: echo edited-by-operator > frob.txt');
  });

  it('writes the edited content of a write (an edit that still prompts runs: a person approved it)', async () => {
    const before = h.model.requests;
    const { job_id, session_id } = await h.submit({ task: 'write the guarded notes', approval: 'on-request', policy: GUARDED });
    const [pending] = await pendingFor(job_id);
    expect(pending).toMatchObject({ tool: 'write', target: 'guarded/notes.md' });
    const res = await answer(pending.token, { decision: 'approve_edited', content: 'written by the operator\n' });
    expect(res.status).toBe(200);
    const job = await h.waitFinal(job_id);
    expect(job.status).toBe('succeeded');
    expect(await h.file(session_id, 'guarded/notes.md')).toBe('written by the operator\n');
    const [rec] = await h.ledger(session_id);
    expect(rec).toMatchObject({
      tool: 'write', path: 'guarded/notes.md', content: 'written by the operator\n', content_size: 24, bytes_written: 24,
      decision: 'prompt', matched_rule: 'guarded-write',
      edited_from: { tool: 'write', path: 'guarded/notes.md', content: 'asked by the model\n', content_size: 19 },
    });
    const told = lastUserMessage(h.model, before + 1);
    expect(told).toContain('The operator edited the content before approving it');
    expect(told).toContain('You asked to write 19 bytes; what was written (24 bytes):\nwritten by the operator');
  });

  it('bad bodies are 400 invalid_body naming the field, and change nothing', async () => {
    const bash = await h.submit({ task: 'frobnicate the workspace', approval: 'on-request' });
    const touch = await h.submit({ task: 'touch the guarded stamp', approval: 'on-request', policy: GUARDED });
    const [b] = await pendingFor(bash.job_id);
    const [t] = await pendingFor(touch.job_id);
    const cases: [string, unknown, string][] = [
      [b.token, { decision: 'approve_edited', content: 'x' }, 'content'],
      [b.token, { decision: 'approve_edited' }, 'cmd'],
      [b.token, { decision: 'approve_edited', cmd: 'echo a', content: 'b' }, 'content'],
      [b.token, { decision: 'approve_edited', cmd: '   ' }, 'cmd'],
      [b.token, { decision: 'approve_edited', cmd: `echo ${'x'.repeat(70 * 1024)}` }, 'cmd'],
      [b.token, { decision: 'approve', cmd: 'echo a' }, 'cmd'],
      [b.token, { decision: 'reject', content: 'a' }, 'content'],
      [t.token, { decision: 'approve_edited', cmd: 'echo a' }, 'cmd'],
      [t.token, { decision: 'approve_edited', content: 'a' }, 'content'],
    ];
    for (const [token, body, field] of cases) {
      const r = await refusal(await answer(token, body));
      expect({ body, ...r }).toMatchObject({ status: 400, code: 'invalid_body', details: { field } });
      expect(r.message).toContain(field);
    }
    expect(await pendingFor(bash.job_id)).toHaveLength(1);
    expect(await pendingFor(touch.job_id)).toHaveLength(1);
    // An edit of an answered approval is the usual 409.
    expect((await answer(t.token, { decision: 'reject', reason: 'done here' })).status).toBe(200);
    expect((await refusal(await answer(t.token, { decision: 'approve_edited', content: 'a' }))).status).toBe(409);
    await fetch(`${h.url}/v1/jobs/${bash.job_id}/cancel`, { method: 'POST' });
    await h.waitFinal(bash.job_id);
    await h.waitFinal(touch.job_id);
  });
});
