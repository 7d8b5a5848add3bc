// Validators, the watchdog and expired approvals end to end, on real Redis,
// Docker and BullMQ with a scripted model (issue 20, API.md additions).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';
import { lastUserMessage, startHarness, type Harness } from './harness.ts';

const write = (id: number, path: string, text: string) => `<tf-write id="${id}" path="${path}">\n${text}\n</tf-write>`;

const TRANSCRIPTS: TranscriptInput[] = [
  {
    // The first attempt leaves the answer broken; the validator says so; the second fixes it.
    name: 'validate-once', match: 'answer the question', delay_ms: 0,
    turns: [
      { reasoning: write(1, 'answer.txt', 'broken'), text: 'Answered.' },
      { reasoning: write(2, 'answer.txt', 'fixed'), text: 'Answered again, properly this time.' },
    ],
  },
  {
    name: 'repeat-failure', match: 'read the missing file', delay_ms: 0,
    turns: [1, 2, 3, 4, 5, 6].map((id) => ({ reasoning: `<tf-bash id="${id}" cmd="cat missing.txt" />`, text: '' })),
  },
  {
    name: 'guarded', match: 'touch the guarded file', delay_ms: 0,
    turns: [
      { reasoning: '<tf-touch id="1" path="guarded/ok.txt" />\n<tf-write id="2" path="after.txt">\nafter approval\n</tf-write>', text: 'Touched it.' },
      { reasoning: '', text: 'Nobody answered; I left guarded/ alone.' },
    ],
  },
];

type SseEvent = { event: string; data: Record<string, any> };

/** The job's whole event stream (the server closes it after job_finished). */
async function events(url: string, jobId: string): Promise<SseEvent[]> {
  const text = await (await fetch(`${url}/v1/jobs/${jobId}/events`, { signal: AbortSignal.timeout(30_000) })).text();
  return text.split('\n\n').filter((b) => b.trim()).map((block) => {
    const field = (name: string) => block.split('\n').find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim() ?? '';
    return { event: field('event'), data: JSON.parse(field('data')) };
  });
}

let h: Harness;
// Approvals expire after 2 s here, so the expiry test does not wait 15 minutes.
beforeAll(async () => { h = await startHarness('validation', TRANSCRIPTS, { THINKFLOW_APPROVAL_TTL_S: '2' }); });
afterAll(async () => { await h?.close(); });

describe('validators', () => {
  it('a validator that fails once and then passes: succeeded in 2 rounds, the second model call carries the failure', async () => {
    const before = h.model.requests;
    const { job_id, session_id } = await h.submit({ task: 'answer the question', validate: { cmd: 'grep -q fixed answer.txt' } });
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({
      status: 'succeeded', api_calls: 2, error: null, final_text: 'Answered again, properly this time.',
      validate: { cmd: 'grep -q fixed answer.txt', max_rounds: 3 }, validation: { rounds: 2, passed: true },
    });
    expect(job.commands).toMatchObject({ total: 2, succeeded: 2, failed: 0 });
    const feedback = lastUserMessage(h.model, before + 1);
    expect(feedback).toMatch(/\[THINKFLOW COMMAND LEDGER\][\s\S]*id=validate-1 tool=bash target="grep -q fixed answer.txt" status=failed exit=1/);
    expect(feedback).toContain('[THINKFLOW VALIDATION FAILED]\nRound 1 of 3: the validator `grep -q fixed answer.txt` failed (exit code 1');
    expect(feedback).toContain('2 more failed rounds fail the job.');
    const ledger = await h.ledger(session_id);
    expect(ledger.map((e) => [e.id, e.flow, e.status, e.exit_code])).toEqual([
      ['1', 'reasoning', 'succeeded', null], ['validate-1', 'validator', 'failed', 1], ['2', 'reasoning', 'succeeded', null], ['validate-2', 'validator', 'succeeded', 0],
    ]);
    expect(await h.file(session_id, 'answer.txt')).toBe('fixed\n');
    const validation = (await events(h.url, job_id)).filter((e) => e.event.startsWith('validation_') || e.event === 'job_finished');
    expect(validation.map((e) => [e.event, e.data.round, e.data.passed])).toEqual([
      ['validation_started', 1, undefined], ['validation_finished', 1, false],
      ['validation_started', 2, undefined], ['validation_finished', 2, true], ['job_finished', undefined, undefined],
    ]);
    expect(validation[1]!.data).toMatchObject({ job_id, command_id: 'validate-1', max_rounds: 3, status: 'failed', exit_code: 1 });
  });

  it('a validator that never passes fails the job with validation_failed after 3 rounds', async () => {
    const { job_id, session_id } = await h.submit({ task: 'answer the question', validate: { cmd: 'grep -q never answer.txt' } });
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'failed', api_calls: 3, validation: { rounds: 3, passed: false } });
    expect(job.error).toMatch(/^validation_failed: the validator still failed after 3 rounds \(max_rounds 3; last: exit code 1/);
    expect((await h.ledger(session_id)).filter((e) => e.flow === 'validator').map((e) => e.id)).toEqual(['validate-1', 'validate-2', 'validate-3']);
  });

  it('a validator the policy forbids is refused at submit with a 400 naming the rule', async () => {
    const jobsBefore = (await (await fetch(`${h.url}/v1/jobs?limit=500`)).json()).jobs.length;
    const res = await fetch(`${h.url}/v1/jobs`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task: 'answer the question', validate: { cmd: 'curl -s http://example.com/check' } }),
    });
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error.code).toBe('invalid_validator');
    expect(error.message).toContain('no-network-tools');
    expect(error.details).toMatchObject({ decision: 'forbid', rules: ['no-network-tools'] });
    expect((await (await fetch(`${h.url}/v1/jobs?limit=500`)).json()).jobs.length).toBe(jobsBefore);
  });
});

describe('the watchdog', () => {
  it('stops a model that repeats the same failing command before max_turns, with error stuck', async () => {
    const { job_id, session_id } = await h.submit({ task: 'read the missing file', limits: { max_turns: 6 } });
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'failed', api_calls: 3, limits: { max_turns: 6, max_failed_turns_in_a_row: 3 } });
    expect(job.error).toBe('stuck: 3 model turns in a row failed (limits.max_failed_turns_in_a_row 3); the same failure each time: bash "cat missing.txt" failed with exit code 1');
    expect((await h.ledger(session_id)).map((e) => [e.id, e.status])).toEqual([['1', 'failed'], ['2', 'failed'], ['3', 'failed']]);
  });
});

describe('an approval that expires', () => {
  it('reaches the model as unanswered, never as a refusal by a person; the ledger keeps rejected / expired', async () => {
    const before = h.model.requests;
    const policy = { version: 1, rules: [{ id: 'guarded', tool: 'touch', path: 'guarded/**', decision: 'prompt', justification: 'needs a person' }] };
    const { job_id, session_id } = await h.submit({ task: 'touch the guarded file', approval: 'on-request', policy });
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'succeeded', api_calls: 2 });
    const feedback = lastUserMessage(h.model, before + 1);
    expect(feedback).toContain('id=1 tool=touch target="guarded/ok.txt" status=rejected approval=unanswered error="not run: no operator answered within 2 s');
    expect(feedback).toContain('Command 1 (touch guarded/ok.txt) was not run: no operator answered within 2 s (the approval request expired unanswered; nobody refused it).');
    expect(feedback).not.toMatch(/approval timed out|rejected:|rejected by/);
    const [touched, after] = await h.ledger(session_id);
    expect(touched).toMatchObject({ status: 'rejected', error: 'approval timed out', error_code: 'rejected', approval: { decision: 'expired' } });
    expect(after).toMatchObject({ id: '2', status: 'skipped' });
  });
});
