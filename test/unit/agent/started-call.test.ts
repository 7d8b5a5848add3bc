// The model call sent before its turn opens (services/agent/started-call.ts): an abort
// around the send ends the request at once, and nothing of it is read after a cancel.
// (Reproductions of the review of the early send, helper-56; each failed before the fix.)
import { describe, expect, it } from 'vitest';
import { runJob } from '../../../services/agent/job-runner.ts';
import { runTurn, type TurnInput } from '../../../services/agent/turn-runner.ts';
import { FLOWS } from '../../../services/agent/flows.ts';
import { emptyCounts, type JobState } from '../../../services/agent/job-state.ts';
import { FakePipeline, collect, scripted } from './fakes.ts';

const write = (id: string, path: string) => `<tf-write id="${id}" path="${path}">\nx\n</tf-write>`;
const ticks = async (n = 20) => { for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r)); };

function newJob(): JobState {
  return {
    job_id: 'job_1', session_id: 'ses_1', flow: 'thinkflow', limits: { max_turns: 4, max_commands: 50, timeout_s: 60, max_failed_turns_in_a_row: 3 },
    status: 'queued', turns: 0, api_calls: 0, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, commands: emptyCounts(),
    final_text: null, files_seeded: [], validation: null, error: null, started_at: null, finished_at: null,
  };
}

/** A job whose turn opening (nextTurn) waits until released; the model answers at once. */
function slowOpening() {
  const pipeline = new FakePipeline();
  let release!: () => void;
  const opened = new Promise<void>((r) => { release = r; });
  const nextTurn = pipeline.nextTurn.bind(pipeline);
  pipeline.nextTurn = async () => { await opened; return nextTurn(); };
  const model = scripted([{ type: 'reasoning', text: `thinking ${write('1', 'a.txt')}` }, { type: 'text', text: 'done' }]);
  const sink = collect();
  const job = new AbortController();
  const done = runJob({ pipeline, stream: model.stream, emit: sink.emit, save: async () => undefined }, newJob(), { task: 'do it' }, job.signal);
  return { pipeline, model, sink, job, release, done };
}

describe('a cancel between the send and the turn opening', () => {
  it('a cancel while the turn opens aborts the request already sent, without waiting for the opening', async () => {
    const t = slowOpening();
    await ticks();
    expect(t.model.requests).toHaveLength(1);
    t.job.abort('cancelled');
    await ticks();
    const abortedBeforeOpen = t.model.aborted[0];
    t.release();
    const view = await t.done;
    expect(view.status).toBe('cancelled');
    expect(abortedBeforeOpen).toBe(true);
  });

  it('a job cancelled while its turn opens streams no model output afterwards', async () => {
    const t = slowOpening();
    await ticks();
    t.job.abort('cancelled');
    await ticks();
    t.release();
    const view = await t.done;
    expect(view.status).toBe('cancelled');
    // The first event, already held by the call, is not read after the abort.
    expect(t.sink.events.filter((e) => e.type === 'reasoning_delta' || e.type === 'text_delta')).toEqual([]);
  });
});

describe('runTurn with a signal aborted before it starts', () => {
  it('sends no request and streams no delta', async () => {
    const pipeline = new FakePipeline();
    const model = scripted([{ type: 'reasoning', text: `thinking ${write('1', 'a.txt')}` }]);
    const sink = collect();
    const job = new AbortController();
    job.abort('timeout');
    const input: TurnInput = {
      flow: FLOWS.thinkflow, sessionId: 'ses_t', jobId: 'job_t', turn: 1, messages: [{ role: 'user', kind: 'task', text: 'do it' }],
      commandBudget: 10, burntIds: [], signal: job.signal,
    };
    const r = await runTurn({ pipeline, stream: model.stream, emit: sink.emit }, input);
    expect(r.stop).toEqual({ kind: 'aborted', reason: 'timeout' });
    expect(pipeline.records).toEqual([]);
    expect(model.requests).toEqual([]); // no request at all
    expect(sink.events.map((e) => e.type)).toEqual([]);
  });
});
