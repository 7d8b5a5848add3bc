// End to end on real Redis, Docker and BullMQ, with a scripted model: the
// acceptance list of the model-driven jobs issue.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastUserMessage, startHarness, type Harness } from './harness.ts';
import { TRANSCRIPTS } from './transcripts.ts';

let h: Harness;
beforeAll(async () => { h = await startHarness('jobs', TRANSCRIPTS); });
afterAll(async () => { await h?.close(); });

describe('model-driven jobs', () => {
  it('writes five files in one model call, mkdir first, inert examples not run', async () => {
    const { job_id, session_id, status } = await h.submit({ task: 'five files please' });
    expect(status).toBe('queued');
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'succeeded', api_calls: 1, turns: 1, error: null, model_source: 'openai-compatible' });
    expect(job.commands).toEqual({ total: 6, succeeded: 6, failed: 0, skipped: 0, forbidden: 0, rejected: 0 });
    expect(job.final_text).toBe('Five files written. `<tf-write id="9" path="not-run.txt">x</tf-write>` is only an example.');
    const ledger = await h.ledger(session_id);
    expect(ledger.map((e) => [e.id, e.tool, e.path, e.status, e.flow])).toEqual([
      ['1', 'mkdir', 'pkg/sub', 'succeeded', 'reasoning'],
      ...[1, 2, 3, 4, 5].map((n) => [String(n + 1), 'write', `pkg/sub/f${n}.txt`, 'succeeded', 'reasoning']),
    ]);
    // mkdir-before-write: every write started after the mkdir finished.
    for (const w of ledger.slice(1)) expect(Date.parse(w.started_at)).toBeGreaterThanOrEqual(Date.parse(ledger[0]!.finished_at));
    // Each record's timings, from its closing tag parsed in the stream to its finish, in order.
    for (const e of ledger) {
      const t = e.timings as Record<string, string>;
      const steps = ['parsed_at', 'admitted_at', 'queued_at', 'started_at', 'finished_at'].map((k) => Date.parse(t[k]!));
      expect(steps.every((ms, i) => Number.isFinite(ms) && (i === 0 || ms >= steps[i - 1]!))).toBe(true);
    }
    expect(await h.file(session_id, 'pkg/sub/f3.txt')).toBe('file 3 é€😀\n');
    expect(await h.file(session_id, 'not-run.txt')).toBeNull();
    expect(usageOk(job.usage)).toBe(true);
  });

  it('a stream split into 1-byte deltas gives the same result', async () => {
    const a = await h.submit({ task: 'five files please' });
    const b = await h.submit({ task: 'five files in one-byte deltas' });
    const [ja, jb] = [await h.waitFinal(a.job_id), await h.waitFinal(b.job_id)];
    expect(jb.status).toBe('succeeded');
    expect(jb.final_text).toBe(ja.final_text);
    const strip = (l: Array<Record<string, any>>) => l.map((e) => [e.id, e.tool, e.path, e.content, e.status]);
    expect(strip(await h.ledger(b.session_id))).toEqual(strip(await h.ledger(a.session_id)));
  });

  it('a failure mid-stream skips the tail, feeds [THINKFLOW ERROR] back and recovers with new ids', async () => {
    const before = h.model.requests;
    const { job_id, session_id } = await h.submit({ task: 'a failing edit' });
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'succeeded', api_calls: 2 });
    const ledger = await h.ledger(session_id);
    expect(ledger.map((e) => [e.turn, e.id, e.status])).toEqual([
      [1, '1', 'succeeded'], [1, '2', 'failed'], [1, '3', 'skipped'],
      [2, '4', 'succeeded'], [2, '5', 'succeeded'],
    ]);
    expect(job.commands).toMatchObject({ total: 5, succeeded: 3, failed: 1, skipped: 1 });
    const feedback = lastUserMessage(h.model, before + 1);
    expect(feedback).toContain('[THINKFLOW COMMAND LEDGER]');
    expect(feedback).toMatch(/id=1 tool=write target="a.txt" status=succeeded/);
    expect(feedback).toContain('[THINKFLOW ERROR]');
    expect(feedback).toMatch(/Command 2 \(edit a.txt\) failed/);
    expect(feedback).toContain('Skipped, not executed: 3.');
    // The interrupted assistant message stays in history, visible text only.
    const history = h.model.log[before + 1]!.messages;
    expect(history.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['All done (not really).']);
    expect(await h.file(session_id, 'a.txt')).toBe('bonjour\n');
    expect((await h.ledger(session_id)).every((e) => e.injected === true || e.turn === 2)).toBe(true);
  });

  it('reusing the id of a failed command is a duplicate_id parse error fed back to the model', async () => {
    const before = h.model.requests;
    const { job_id, session_id } = await h.submit({ task: 'please reuse a failed id' });
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'succeeded', api_calls: 3 });
    expect(lastUserMessage(h.model, before + 2)).toMatch(/\[THINKFLOW ERROR\][\s\S]*duplicate_id/);
    expect((await h.ledger(session_id)).map((e) => [e.turn, e.id, e.status])).toEqual([[1, '1', 'failed'], [3, '2', 'succeeded']]);
  });

  it('need_result: waits, runs, stops the stream and feeds [THINKFLOW RESULT] back', async () => {
    const before = h.model.requests;
    const { job_id, session_id } = await h.submit({ task: 'write then read it back' });
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'succeeded', api_calls: 2 });
    const feedback = lastUserMessage(h.model, before + 1);
    expect(feedback).toContain('[THINKFLOW RESULT]');
    expect(feedback).toContain('42');
    expect(await h.file(session_id, 'never.txt')).toBeNull();
    expect((await h.ledger(session_id)).map((e) => e.id)).toEqual(['1', '2', '4']);
  });

  it('approval mode never refuses at once and never hangs', async () => {
    const t0 = Date.now();
    const { job_id, session_id } = await h.submit({ task: 'please install a package', approval: 'never' });
    const job = await h.waitFinal(job_id, 20_000);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(job.status).toBe('succeeded');
    const ledger = await h.ledger(session_id);
    expect(ledger[0]).toMatchObject({ id: '1', status: 'forbidden', error: 'approval required by policy, but approval mode is never', decision: 'prompt' });
    // The refusal stops the stream: a later command is either never parsed or skipped, never run.
    expect(ledger.slice(1).every((e) => e.status === 'skipped')).toBe(true);
    expect(await h.file(session_id, 'after.txt')).toBeNull();
    expect(job.commands).toMatchObject({ forbidden: 1, succeeded: 0 });
  });

  it('on-request approval is answered over REST and the queue waits for it', async () => {
    const policy = { version: 1, rules: [{ id: 'guarded', tool: 'touch', path: 'guarded/**', decision: 'prompt', justification: 'needs a person' }] };
    const { job_id, session_id } = await h.submit({ task: 'touch the guarded file', approval: 'on-request', policy });
    let approvals: any[] = [];
    for (let i = 0; i < 100 && approvals.length === 0; i++) {
      approvals = (await (await fetch(`${h.url}/v1/approvals?status=pending`)).json()).approvals.filter((a: any) => a.job_id === job_id);
      if (!approvals.length) await new Promise((r) => setTimeout(r, 100));
    }
    expect(approvals).toHaveLength(1);
    expect(approvals[0]).toMatchObject({ session_id, command_id: '1', tool: 'touch', target: 'guarded/ok.txt' });
    expect((await h.job(job_id)).status).toBe('awaiting_approval');
    expect((await h.ledger(session_id)).find((e) => e.id === '2')?.status).toBe('queued');
    const res = await fetch(`${h.url}/v1/approvals/${approvals[0].token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"decision":"approve"}' });
    expect(res.status).toBe(200);
    const job = await h.waitFinal(job_id);
    expect(job.status).toBe('succeeded');
    expect((await h.ledger(session_id)).map((e) => e.status)).toEqual(['succeeded', 'succeeded']);
  });

  it('cancel stops the model and answers 202 with the job', async () => {
    const { job_id } = await h.submit({ task: 'take your time' });
    await new Promise((r) => setTimeout(r, 300));
    const res = await fetch(`${h.url}/v1/jobs/${job_id}/cancel`, { method: 'POST' });
    expect(res.status).toBe(202);
    expect((await res.json()).job_id).toBe(job_id);
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'cancelled', api_calls: 1 });
  });

  it('cancelling a job that waits for an approval rejects the approval and skips the queue', async () => {
    const policy = { version: 1, rules: [{ id: 'guarded', tool: 'touch', path: 'guarded/**', decision: 'prompt', justification: 'needs a person' }] };
    const { job_id, session_id } = await h.submit({ task: 'touch the guarded file', approval: 'on-request', policy });
    for (let i = 0; i < 100 && (await h.job(job_id)).status !== 'awaiting_approval'; i++) await new Promise((r) => setTimeout(r, 100));
    expect((await fetch(`${h.url}/v1/jobs/${job_id}/cancel`, { method: 'POST' })).status).toBe(202);
    const job = await h.waitFinal(job_id);
    expect(job.status).toBe('cancelled');
    const pending = (await (await fetch(`${h.url}/v1/approvals?status=pending`)).json()).approvals.filter((a: any) => a.job_id === job_id);
    expect(pending).toEqual([]);
    for (let i = 0; i < 50 && (await h.ledger(session_id)).some((e) => !['rejected', 'skipped'].includes(e.status)); i++) await new Promise((r) => setTimeout(r, 100));
    expect((await h.ledger(session_id)).map((e) => e.status)).toEqual(['rejected', 'skipped']);
    expect(await h.file(session_id, 'guarded/ok.txt')).toBeNull();
  });

  it('deleting the session under a running job fails the job with the reason, not as a model error', async () => {
    const { job_id, session_id } = await h.submit({ task: 'take your time' });
    await new Promise((r) => setTimeout(r, 300));
    expect((await fetch(`${h.url}/v1/sessions/${session_id}`, { method: 'DELETE' })).status).toBe(204);
    const job = await h.waitFinal(job_id);
    expect(job.status).toBe('failed');
    expect(job.error).toMatch(/^infrastructure error: .*deleted/);
  });

  it('max_turns ends a job that never finishes, with the reason', async () => {
    const { job_id } = await h.submit({ task: 'never finish', limits: { max_turns: 2 }, policy: { version: 1, defaults: { bash: 'allow' } } });
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'failed', api_calls: 2, turns: 2 });
    expect(job.error).toMatch(/max_turns \(2\)/);
  });

  it('seeds files before the first model call (not commands: never in the ledger; an event and the job view) and names them in the task', async () => {
    const before = h.model.requests;
    const { job_id, session_id } = await h.submit({ task: 'five files please', files: { 'docs/outline.md': '# Outline\n', 'notes.txt': '' } });
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'succeeded', api_calls: 1, files_seeded: [{ path: 'docs/outline.md', bytes: 10 }, { path: 'notes.txt', bytes: 0 }] });
    expect(job.commands.total).toBe(6);
    const ledger = await h.ledger(session_id);
    // Only the model's commands, under the ids it gave them: one command with id 1.
    expect(ledger.map((e) => [e.turn, e.flow, e.id])).toEqual([1, 2, 3, 4, 5, 6].map((id) => [1, 'reasoning', String(id)]));
    const sse = await (await fetch(`${h.url}/v1/jobs/${job_id}/events`)).text();
    const seeded = sse.split('\n\n').find((b) => b.includes('event: files_seeded'));
    expect(seeded).toBeDefined();
    expect(JSON.parse(seeded!.split('\n').find((l) => l.startsWith('data:'))!.slice(5))).toMatchObject({
      seq: 1, job_id, paths: [{ path: 'docs/outline.md', bytes: 10 }, { path: 'notes.txt', bytes: 0 }],
    });
    expect(await h.file(session_id, 'docs/outline.md')).toBe('# Outline\n');
    expect(lastUserMessage(h.model, before)).toContain('Files already in the workspace: docs/outline.md, notes.txt');
  });

  it('bad job bodies are 400 with error.code', async () => {
    for (const body of [{}, { task: '' }, { task: 'x', flow: 'other' }, { task: 'x', unknown: 1 }, { task: 'x', limits: { max_turns: 0 } }, { task: 'x', files: { '../x': 'y' } }]) {
      const res = await fetch(`${h.url}/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await res.json()).error.code).toMatch(/^invalid_/);
    }
    expect((await fetch(`${h.url}/v1/jobs/job_nope`)).status).toBe(404);
  });
});

function usageOk(u: { prompt_tokens: number; completion_tokens: number; total_tokens: number }): boolean {
  return u.prompt_tokens > 0 && u.completion_tokens > 0 && u.total_tokens === u.prompt_tokens + u.completion_tokens;
}
