// The job loop with a validator, the watchdog, and an approval that expired,
// over scripted model calls and the in-memory pipeline.
import { describe, expect, it } from 'vitest';
import { feedbackMessage, renderInterruption, renderLedger, type FeedbackRecord } from '../../../services/agent/feedback.ts';
import { runJob } from '../../../services/agent/job-runner.ts';
import { emptyCounts, type JobState, type JobValidate } from '../../../services/agent/job-state.ts';
import type { LedgerRecord } from '../../../services/pipeline/index.ts';
import { FakePipeline, collect, scripted, type Step } from './fakes.ts';

const write = (id: string, path: string) => `<tf-write id="${id}" path="${path}">\nx\n</tf-write>`;
const bash = (id: string, cmd: string) => `<tf-bash id="${id}" cmd="${cmd}" />`;

function newJob(limits: Partial<JobState['limits']> = {}): JobState {
  return {
    job_id: 'job_1', session_id: 'ses_1', flow: 'thinkflow', limits: { max_turns: 8, max_commands: 50, timeout_s: 60, max_failed_turns_in_a_row: 3, ...limits },
    status: 'queued', turns: 0, api_calls: 0, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, commands: emptyCounts(),
    final_text: null, files_seeded: [], validation: null, error: null, started_at: null, finished_at: null,
  };
}

type Results = (r: LedgerRecord) => Partial<Pick<LedgerRecord, 'status' | 'error' | 'stdout' | 'stderr' | 'exit_code'>>;

async function run(calls: Step[][], o: { results?: Results; validate?: JobValidate; limits?: Partial<JobState['limits']> } = {}) {
  const pipeline = new FakePipeline(o.results);
  const model = scripted(...calls);
  const sink = collect();
  const workspace: string[] = [];
  const view = await runJob({ pipeline, stream: model.stream, emit: sink.emit, save: async () => {}, onWorkspace: (s) => workspace.push(s) }, newJob(o.limits),
    { task: 'do it', ...(o.validate ? { validate: o.validate } : {}) }, new AbortController().signal);
  return { view, pipeline, model, events: sink.events, workspace };
}

const lastUser = (messages: readonly { role: string }[]) => ([...messages].reverse().find((m) => m.role === 'user') as unknown as { text: string }).text;
const validatorFails = (rounds: number): Results => (r) =>
  r.flow === 'validator' && Number(r.id.split('-')[1]) <= rounds ? { status: 'failed', exit_code: 1, error: 'exit code 1', stdout: 'FAIL adds', stderr: 'npm ERR!' } : { exit_code: r.tool === 'bash' ? 0 : null };

describe('a job with a validator', () => {
  it('fails once, the model hears [THINKFLOW VALIDATION FAILED], fixes it and the job succeeds in 2 rounds', async () => {
    const { view, model, pipeline, events, workspace } = await run([
      [{ type: 'reasoning', text: write('1', 'a.txt') }, { type: 'text', text: 'done' }],
      [{ type: 'reasoning', text: write('2', 'a.txt') }, { type: 'text', text: 'fixed' }],
    ], { validate: { cmd: 'npm test', max_rounds: 3 }, results: validatorFails(1) });
    // A validator runs commands after the model's last turn: the workspace is never read ahead of the job's end.
    expect(workspace.filter((s) => s === 'settled')).toEqual([]);
    expect(view).toMatchObject({ status: 'succeeded', api_calls: 2, final_text: 'fixed', error: null, validation: { rounds: 2, passed: true } });
    expect(pipeline.records.map((r) => [r.turn, r.id, r.flow, r.status])).toEqual([
      [1, '1', 'reasoning', 'succeeded'], [2, 'validate-1', 'validator', 'failed'], [3, '2', 'reasoning', 'succeeded'], [4, 'validate-2', 'validator', 'succeeded'],
    ]);
    // The model's commands only: the validator's are in `validation`.
    expect(view.commands).toEqual({ ...emptyCounts(), total: 2, succeeded: 2 });
    const feedback = lastUser(model.requests[1]!.messages);
    expect(feedback).toMatch(/^\[THINKFLOW COMMAND LEDGER\]\n- id=1 tool=write target="a.txt" status=succeeded\n- id=validate-1 tool=bash target="npm test" status=failed exit=1/);
    expect(feedback).toContain('[THINKFLOW VALIDATION FAILED]\nRound 1 of 3: the validator `npm test` failed (exit code 1, exit code 1).\nstdout');
    expect(feedback).toContain('FAIL adds');
    expect(model.requests[1]!.messages.at(-2)).toMatchObject({ role: 'assistant', visibleText: 'done', interrupted: false });
    expect(events.filter((e) => e.type.startsWith('validation_'))).toEqual([
      { type: 'validation_started', round: 1, max_rounds: 3, command_id: 'validate-1', cmd: 'npm test' },
      { type: 'validation_finished', round: 1, max_rounds: 3, command_id: 'validate-1', passed: false, status: 'failed', exit_code: 1, error: 'exit code 1' },
      { type: 'validation_started', round: 2, max_rounds: 3, command_id: 'validate-2', cmd: 'npm test' },
      { type: 'validation_finished', round: 2, max_rounds: 3, command_id: 'validate-2', passed: true, status: 'succeeded', exit_code: 0, error: null },
    ]);
  });

  it('one that never passes fails the job with validation_failed after max_rounds', async () => {
    const { view, model } = await run([[{ type: 'text', text: 'done' }]], { validate: { cmd: 'npm test', max_rounds: 3 }, results: validatorFails(99) });
    expect(view).toMatchObject({
      status: 'failed', api_calls: 3, validation: { rounds: 3, passed: false },
      error: 'validation_failed: the validator still failed after 3 rounds (max_rounds 3; last: exit code 1, exit code 1)',
    });
    expect(model.requests).toHaveLength(3);
  });

  it('one the policy refuses at run time ends the job at once', async () => {
    const { view } = await run([[{ type: 'text', text: 'done' }]], {
      validate: { cmd: 'npm test', max_rounds: 3 }, results: (r) => (r.flow === 'validator' ? { status: 'forbidden', error: 'forbid by rule x (session)' } : {}),
    });
    expect(view).toMatchObject({ status: 'failed', api_calls: 1, error: 'validation_failed: the validator did not run in round 1 (forbidden: forbid by rule x (session))' });
  });

  it('without a validator the job ends when the model does', async () => {
    const { view, pipeline } = await run([[{ type: 'text', text: 'done' }]]);
    expect(view).toMatchObject({ status: 'succeeded', validation: null });
    expect(pipeline.records).toEqual([]);
  });
});

describe('the watchdog in the job loop', () => {
  it('stops a model that repeats the same failing command before max_turns', async () => {
    const calls: Step[][] = [1, 2, 3, 4, 5].map((i) => [{ type: 'reasoning', text: bash(String(i), 'npm test') }]);
    const { view, model, pipeline } = await run(calls, { results: (r) => (r.cmd === 'npm test' ? { status: 'failed', exit_code: 1, error: 'exit code 1' } : {}) });
    expect(view).toMatchObject({
      status: 'failed', api_calls: 3,
      error: 'stuck: 3 model turns in a row failed (limits.max_failed_turns_in_a_row 3); the same failure each time: bash "npm test" failed with exit code 1',
    });
    expect(model.requests).toHaveLength(3);
    expect(pipeline.records).toHaveLength(3);
  });

  it('max_failed_turns_in_a_row is the job\'s limit, and a good turn in between resets the count', async () => {
    const fail = (id: string) => [{ type: 'reasoning', text: bash(id, 'false') } as Step];
    const results: Results = (r) => (r.cmd === 'false' ? { status: 'failed', exit_code: 1 } : {});
    const one = await run([fail('1'), fail('2')], { limits: { max_failed_turns_in_a_row: 1 }, results });
    expect(one.view).toMatchObject({ status: 'failed', api_calls: 1 });
    expect(one.view.error).toMatch(/^stuck: 1 model turn in a row failed/);
    const reset = await run([fail('1'), fail('2'), [{ type: 'reasoning', text: `${write('3', 'a')}<tf-read id="4" path="a" need_result="true" />` }], fail('5'), [{ type: 'text', text: 'ok' }]],
      { limits: { max_failed_turns_in_a_row: 3 }, results });
    expect(reset.view).toMatchObject({ status: 'succeeded', api_calls: 5 });
  });
});

describe('an approval that expired', () => {
  const expired = (over: Partial<FeedbackRecord> = {}): FeedbackRecord => ({
    id: '1', tool: 'touch', path: 'guarded/ok.txt', dest: null, cmd: null, status: 'rejected', bytes_written: null, exit_code: null,
    error: 'approval timed out', stdout: null, stderr: null,
    approval: { decision: 'expired', requested_at: '2026-01-01T00:00:00.000Z', expires_at: '2026-01-01T00:15:00.000Z' }, ...over,
  });

  it('reaches the model as unanswered, never as a refusal by a person', () => {
    const text = feedbackMessage([expired()], { kind: 'failure', record: expired(), skipped: ['2'] })!;
    expect(text).toContain('- id=1 tool=touch target="guarded/ok.txt" status=rejected approval=unanswered error="not run: no operator answered within 15 min');
    expect(text).toContain('Command 1 (touch guarded/ok.txt) was not run: no operator answered within 15 min (the approval request expired unanswered; nobody refused it).');
    expect(text).not.toMatch(/approval timed out|rejected:/);
    const short = expired({ approval: { decision: 'expired', requested_at: '2026-01-01T00:00:00.000Z', expires_at: '2026-01-01T00:00:02.000Z' } });
    expect(renderInterruption({ kind: 'failure', record: short, skipped: [] })).toContain('no operator answered within 2 s');
  });

  it('an operator\'s rejection still reads as one', () => {
    const rejected = expired({ error: 'not on Fridays', approval: { decision: 'reject', requested_at: '2026-01-01T00:00:00.000Z', expires_at: '2026-01-01T00:15:00.000Z' } });
    expect(renderInterruption({ kind: 'failure', record: rejected, skipped: [] })).toContain('Command 1 (touch guarded/ok.txt) rejected: not on Fridays.');
    expect(renderLedger([rejected])).not.toContain('unanswered');
  });

  it('a native call whose approval expired is told the same way in its tool message', async () => {
    const pipeline = new FakePipeline((r) => (r.id === 'c1'
      ? { status: 'rejected', error: 'approval timed out', approval: { token: 't', requested_at: '2026-01-01T00:00:00.000Z', expires_at: '2026-01-01T00:15:00.000Z', decided_by: 'system', decision: 'expired', reason: 'approval timed out', decided_at: '2026-01-01T00:15:00.000Z' } } as never
      : {}));
    const model = scripted([{ type: 'tool_call', index: 0, id: 'c1', name: 'bash', arguments: '{"cmd":"npm install x"}' }], [{ type: 'text', text: 'ok' }]);
    await runJob({ pipeline, stream: model.stream, emit: collect().emit, save: async () => {} }, { ...newJob(), flow: 'react' }, { task: 'do it' }, new AbortController().signal);
    expect(model.requests[1]!.messages.find((m) => m.role === 'tool')).toMatchObject({
      text: 'rejected: not run: no operator answered within 15 min (the approval request expired unanswered; nobody refused it)',
    });
  });
});
