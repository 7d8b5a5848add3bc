// A job's opening (job-opening.ts: the running state saved and the session followed, beside the first model call)
// when the job is cancelled during it, or it fails beside another failure of the first turn (review helper-58).
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runJob } from '../../../services/agent/job-runner.ts';
import { emptyCounts, type JobState } from '../../../services/agent/job-state.ts';
import { createLogger, log, setLogger } from '../../../services/log/index.ts';
import { PipelineError } from '../../../services/pipeline/index.ts';
import { FakePipeline, collect, scripted } from './fakes.ts';

function newJob(): JobState {
  return {
    job_id: 'job_1', session_id: 'ses_1', flow: 'thinkflow', limits: { max_turns: 4, max_commands: 50, timeout_s: 60, max_failed_turns_in_a_row: 3 },
    status: 'queued', turns: 0, api_calls: 0, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, commands: emptyCounts(),
    final_text: null, files_seeded: [], validation: null, error: null, started_at: null, finished_at: null,
  };
}

async function withLogs<T>(f: () => Promise<T>): Promise<{ result: T; lines: Array<Record<string, any>> }> {
  const out = new PassThrough();
  const lines: Array<Record<string, any>> = [];
  out.on('data', (d: Buffer) => { for (const l of d.toString().split('\n')) if (l) lines.push(JSON.parse(l)); });
  const before = log();
  setLogger(createLogger({ level: 'warn', destination: out, pretty: false }));
  try {
    const result = await f();
    await new Promise((r) => setTimeout(r, 20));
    return { result, lines };
  } finally {
    setLogger(before);
  }
}

describe('a job\'s opening', () => {
  it('an opening that fails while the first turn fails on its own (quota) is logged: the job ends with the quota', async () => {
    const pipeline = new FakePipeline();
    // The session's events cannot be followed (Redis subscriber gone), reported a moment later...
    pipeline.hub.subscribe = async () => { await new Promise((r) => setTimeout(r, 20)); throw new Error('subscriber is gone'); };
    // ...while the turn's number is refused at once (the key over its storage budget).
    pipeline.nextTurn = async () => { throw new PipelineError('storage_quota_exceeded', 'the key holds 256 MiB'); };
    const model = scripted([{ type: 'text', text: 'never read' }]);
    const { result: view, lines } = await withLogs(() =>
      runJob({ pipeline, stream: model.stream, emit: collect().emit, save: async () => undefined }, newJob(), { task: 'do it' }, new AbortController().signal));
    expect(view).toMatchObject({ status: 'failed' });
    expect(view.error).toMatch(/storage_quota_exceeded/);
    // The opening's failure reached a Promise.all that had already rejected with the quota error: close() logs it.
    const seen = lines.some((l) => JSON.stringify(l).includes('subscriber is gone'));
    expect(seen, JSON.stringify(lines)).toBe(true);
  });

  it('a cancel while the subscription is still on its way: no rejection left unhandled, unsubscribed once it came', async () => {
    const pipeline = new FakePipeline();
    let subscribed = 0;
    let unsubscribed = 0;
    pipeline.hub.subscribe = async () => { await new Promise((r) => setTimeout(r, 50)); subscribed++; return () => { unsubscribed++; }; };
    const abort = new AbortController();
    const model = scripted([{ type: 'text', text: 'x' }]);
    const job = runJob({ pipeline, stream: model.stream, emit: collect().emit, save: async () => undefined }, newJob(), { task: 'do it' }, abort.signal);
    setTimeout(() => abort.abort('cancelled'), 5);
    const view = await job;
    expect(view).toMatchObject({ status: 'cancelled' });
    expect(subscribed).toBeGreaterThan(0);
    expect(unsubscribed).toBe(subscribed);
  });

  it('an opening that fails after a cancel is logged once', async () => {
    const pipeline = new FakePipeline();
    pipeline.hub.subscribe = async () => { await new Promise((r) => setTimeout(r, 50)); throw new Error('subscriber is gone'); };
    const abort = new AbortController();
    abort.abort('cancelled');
    const model = scripted([{ type: 'text', text: 'x' }]);
    const { result: view, lines } = await withLogs(() =>
      runJob({ pipeline, stream: model.stream, emit: collect().emit, save: async () => undefined }, newJob(), { task: 'do it' }, abort.signal));
    expect(view).toMatchObject({ status: 'cancelled' });
    expect(lines.filter((l) => JSON.stringify(l).includes('subscriber is gone'))).toHaveLength(1);
  });

  it('a cancel that arrives while the running state is being saved opens no turn: no turn_started, nothing counted', async () => {
    const pipeline = new FakePipeline();
    const abort = new AbortController();
    const sink = collect();
    let saves = 0;
    // The first save (the running state) takes 50 ms; the cancel comes 5 ms in.
    const save = async () => { if (saves++ === 0) await new Promise((r) => setTimeout(r, 50)); };
    const model = scripted([{ type: 'text', text: 'never read' }]);
    setTimeout(() => abort.abort('cancelled'), 5);
    const view = await runJob({ pipeline, stream: model.stream, emit: sink.emit, save }, newJob(), { task: 'do it' }, abort.signal);
    expect(view).toMatchObject({ status: 'cancelled' });
    // As when the loop saw the cancel before its first call: the call already sent is dropped.
    expect(sink.events.map((e) => e.type)).toEqual([]);
    expect([view.turns, view.api_calls]).toEqual([0, 0]);
    expect(model.aborted).toEqual([true]);
  });
});
