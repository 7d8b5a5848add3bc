// The job loop over scripted model calls and the in-memory pipeline: what the
// model hears between calls, the job's figures and how it ends.
import { describe, expect, it } from 'vitest';
import { runJob } from '../../../services/agent/job-runner.ts';
import { PipelineError } from '../../../services/pipeline/index.ts';
import { emptyCounts, type JobState } from '../../../services/agent/job-state.ts';
import type { FlowName } from '../../../services/agent/flows.ts';
import { FakePipeline, collect, scripted, type Step } from './fakes.ts';

const write = (id: string, path: string) => `<tf-write id="${id}" path="${path}">\nx\n</tf-write>`;

function newJob(flow: FlowName = 'thinkflow', limits = { max_turns: 4, max_commands: 50, timeout_s: 60, max_failed_turns_in_a_row: 3 }): JobState {
  return {
    job_id: 'job_1', session_id: 'ses_1', flow, limits, status: 'queued', turns: 0, api_calls: 0,
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, commands: emptyCounts(), final_text: null,
    files_seeded: [], validation: null, error: null, started_at: null, finished_at: null,
  };
}

async function run(calls: Step[][], opts: { flow?: FlowName; limits?: JobState['limits']; results?: ConstructorParameters<typeof FakePipeline>[0]; signal?: AbortSignal; files?: Record<string, string> } = {}) {
  const pipeline = new FakePipeline(opts.results);
  const model = scripted(...calls);
  const sink = collect();
  const saved: string[] = [];
  const workspace: string[] = [];
  const view = await runJob({ pipeline, stream: model.stream, emit: sink.emit, save: async (v) => { saved.push(v.status); }, onWorkspace: (s) => { workspace.push(s); sink.events.push({ type: `workspace_${s}` } as never); } },
    newJob(opts.flow, opts.limits), { task: 'do it', ...(opts.files ? { files: opts.files } : {}) }, opts.signal ?? new AbortController().signal);
  return { view, pipeline, model, events: sink.events, saved, workspace };
}

const lastUser = (messages: readonly { role: string }[]) => [...messages].reverse().find((m) => m.role === 'user') as { text: string } | undefined;

describe('runJob', () => {
  it('a failure is fed back as [THINKFLOW ERROR] with the ledger; the next call ends the job', async () => {
    const { view, model, events, workspace } = await run([
      [{ type: 'reasoning', text: write('1', 'a.txt') }, { type: 'text', text: 'trying' }],
      [{ type: 'text', text: 'fixed it' }],
    ], { results: (c) => (c.id === '1' ? { status: 'failed', error: 'disk full' } : {}) });
    // The workspace may be read ahead once the turn that ends the job has its commands final, not before.
    expect(workspace).toEqual(['changing', 'changing', 'settled']);
    // ...and before that turn's own end is written, so the two overlap.
    const types = events.map((e) => e.type as string);
    expect(types.indexOf('workspace_settled')).toBeLessThan(types.lastIndexOf('turn_ended'));
    expect(view).toMatchObject({ status: 'succeeded', turns: 2, api_calls: 2, final_text: 'fixed it', error: null });
    expect(view.commands).toEqual({ ...emptyCounts(), total: 1, failed: 1 });
    const second = model.requests[1]!.messages;
    expect(second.at(-2)).toMatchObject({ role: 'assistant', interrupted: true });
    expect(lastUser(second)!.text).toMatch(/^\[THINKFLOW COMMAND LEDGER\][\s\S]*\[THINKFLOW ERROR\][\s\S]*Command 1 \(write a\.txt\) failed: disk full/);
    expect(events.filter((e) => e.type === 'turn_started' || e.type === 'turn_ended')).toEqual([
      { type: 'turn_started', turn: 1, api_call: 1 }, { type: 'turn_ended', turn: 1, api_call: 1, outcome: 'failure' },
      { type: 'turn_started', turn: 2, api_call: 2 }, { type: 'turn_ended', turn: 2, api_call: 2, outcome: 'done' },
    ]);
  });

  it('a stream broken off mid-turn gets one more call, told what ran and where it was cut; the job then ends normally', async () => {
    const drop = () => { throw new Error('socket hang up'); };
    const { view, model, events } = await run([
      [{ type: 'reasoning', text: `${write('1', 'a.txt')} <tf-write id="2" path="b.txt">\nhal` }, drop],
      [{ type: 'reasoning', text: write('3', 'b.txt') }, { type: 'text', text: 'all written' }],
    ]);
    expect(view).toMatchObject({ status: 'succeeded', turns: 2, api_calls: 2, final_text: 'all written', error: null });
    expect(view.commands).toEqual({ ...emptyCounts(), total: 2, succeeded: 2 });
    const told = lastUser(model.requests[1]!.messages)!.text;
    expect(told).toMatch(/^\[THINKFLOW COMMAND LEDGER\][\s\S]*tool=write target="a\.txt" status=succeeded[\s\S]*\[THINKFLOW ERROR\]\nYour previous response was cut off: the model stream broke \(socket hang up\)\./);
    expect(told).toContain('A command whose closing tag had not arrived did not run.');
    expect(events.filter((e) => e.type === 'turn_ended')).toEqual([
      { type: 'turn_ended', turn: 1, api_call: 1, outcome: 'stream_broken' }, { type: 'turn_ended', turn: 2, api_call: 2, outcome: 'done' },
    ]);
  });

  it('a stream broken off twice in a row fails the job with the reason (never a hang, never a third call)', async () => {
    const drop = () => { throw new Error('ECONNRESET'); };
    const { view, model } = await run([
      [{ type: 'text', text: 'start' }, drop],
      [{ type: 'text', text: 'again' }, drop],
      [{ type: 'text', text: 'never asked' }],
    ]);
    expect(view).toMatchObject({ status: 'failed', error: 'model error: the stream broke off twice in a row (ECONNRESET)' });
    expect(model.requests).toHaveLength(2);
  });

  it('ids of failed commands are burnt: reusing one is a duplicate_id parse error', async () => {
    const { view, events } = await run([
      [{ type: 'reasoning', text: write('1', 'a.txt') }],
      [{ type: 'reasoning', text: write('1', 'b.txt') }],
      [{ type: 'text', text: 'ok' }],
    ], { results: (c) => (c.path === 'a.txt' ? { status: 'failed' } : {}) });
    expect(view.status).toBe('succeeded');
    expect(events.find((e) => e.type === 'parse_error')).toMatchObject({ turn: 2, error: { code: 'duplicate_id', id: '1' } });
  });

  it('react: native results go back as tool messages, not in the feedback block', async () => {
    const { view, model } = await run([
      [{ type: 'tool_call', index: 0, id: 'c1', name: 'read', arguments: '{"path":"a.txt"}' }],
      [{ type: 'text', text: 'read it' }],
    ], { flow: 'react', results: () => ({ stdout: 'content of a' }) });
    expect(view.status).toBe('succeeded');
    const second = model.requests[1]!.messages;
    expect(second.slice(2)).toEqual([
      { role: 'assistant', visibleText: '', toolCalls: [{ id: 'c1', name: 'read', arguments: '{"path":"a.txt"}' }], interrupted: false },
      { role: 'tool', toolCallId: 'c1', text: 'succeeded\ncontent of a' },
    ]);
  });

  it('max_turns ends the job as failed with the reason', async () => {
    const { view } = await run([[{ type: 'reasoning', text: write('1', 'a') }, { type: 'tool_call', index: 0, id: 'c', name: 'read', arguments: '{"path":"a"}' }]],
      { limits: { max_turns: 1, max_commands: 50, timeout_s: 60, max_failed_turns_in_a_row: 3 } });
    expect(view).toMatchObject({ status: 'failed', error: 'max_turns (1) reached before the model finished', turns: 1 });
  });

  it('max_commands fails the turn and the job', async () => {
    const { view, pipeline } = await run([[{ type: 'reasoning', text: `${write('1', 'a')}${write('2', 'b')}` }]], { limits: { max_turns: 4, max_commands: 1, timeout_s: 60, max_failed_turns_in_a_row: 3 } });
    expect(view).toMatchObject({ status: 'failed', error: 'max_commands (1) exceeded' });
    expect(pipeline.failTurnCalls).toContainEqual({ turn: 1, label: 'max_commands reached' });
  });

  it('THINKFLOW_MAX_COMMANDS_PER_TURN: a model call past it is cut there, its turn failed and the job failed with too_many_commands', async () => {
    const pipeline = new FakePipeline();
    Object.assign(pipeline, { maxCommandsPerTurn: 2 });
    const model = scripted([{ type: 'text', text: [1, 2, 3, 4, 5].map((i) => write(String(i), `f${i}`)).join('') }]);
    const view = await runJob({ pipeline, stream: model.stream, emit: collect().emit, save: async () => {} }, newJob(), { task: 'do it' }, new AbortController().signal);
    expect(view).toMatchObject({ status: 'failed', error: 'too_many_commands: a model call issued more than 2 commands (THINKFLOW_MAX_COMMANDS_PER_TURN)' });
    expect(pipeline.failTurnCalls).toContainEqual({ turn: 1, label: 'too_many_commands' });
    expect(pipeline.records.map((r) => r.id)).toEqual(['1', '2']);
  });

  it('cancel and model errors end the job with their reasons; seeded files are listed for the model', async () => {
    const job = new AbortController();
    const cancelled = await run([[{ type: 'text', text: 'a' }, () => job.abort('cancelled'), { type: 'text', text: 'b' }]], { signal: job.signal, files: { 'in.txt': 'abc' } });
    expect(cancelled.view).toMatchObject({ status: 'cancelled', error: 'cancelled by request', files_seeded: [{ path: 'in.txt', bytes: 3 }] });
    expect(lastUser(cancelled.model.requests[0]!.messages)!.text).toBe('do it\n\nFiles already in the workspace: in.txt');
    const broken = await run([[() => { throw new Error('HTTP 500'); }]]);
    expect(broken.view).toMatchObject({ status: 'failed', error: 'model error: HTTP 500' });
    expect(broken.view.finished_at).not.toBeNull();
    expect(broken.saved[0]).toBe('running');
  });

  it('reads the ledger twice per model call (burnt ids, then counts) and not again at a successful end; a failed end counts once more', async () => {
    const reads = (p: { entries: () => Promise<unknown> }) => {
      let n = 0;
      const orig = p.entries.bind(p);
      p.entries = async () => { n++; return orig(); };
      return () => n;
    };
    const pipeline = new FakePipeline();
    const count = reads(pipeline);
    const ok = await runJob({ pipeline, stream: scripted([{ type: 'reasoning', text: `${write('1', 'a')}${write('2', 'b')}` }, { type: 'text', text: 'done' }]).stream, emit: collect().emit, save: async () => undefined },
      newJob(), { task: 'do it' }, new AbortController().signal);
    expect([ok.status, ok.commands.total, count()]).toEqual(['succeeded', 2, 2]);

    const failing = new FakePipeline(() => ({ status: 'failed', error: 'disk full' }));
    const countFailing = reads(failing);
    const failed = await runJob({ pipeline: failing, stream: scripted([{ type: 'reasoning', text: write('1', 'a') }]).stream, emit: collect().emit, save: async () => undefined },
      newJob('thinkflow', { max_turns: 1, max_commands: 50, timeout_s: 60, max_failed_turns_in_a_row: 3 }), { task: 'do it' }, new AbortController().signal);
    // One call whose write failed (its ledger goes into the feedback: a third read), then max_turns: its counts are read again as it fails.
    expect([failed.status, failed.commands.total, countFailing()]).toEqual(['failed', 1, 4]);
  });

  it('sends the model call while the turn opens, and reads nothing of it before turn_started', async () => {
    const pipeline = new FakePipeline();
    let open!: () => void;
    const opened = new Promise<void>((r) => { open = r; });
    const nextTurn = pipeline.nextTurn.bind(pipeline);
    pipeline.nextTurn = async () => { await opened; return nextTurn(); };
    const model = scripted([{ type: 'reasoning', text: write('1', 'a.txt') }, { type: 'text', text: 'done' }]);
    const sink = collect();
    const job = runJob({ pipeline, stream: model.stream, emit: sink.emit, save: async () => undefined }, newJob(), { task: 'do it' }, new AbortController().signal);
    for (let i = 0; i < 20 && model.requests.length === 0; i++) await new Promise((r) => setImmediate(r));
    expect(model.requests).toHaveLength(1); // on its way while the turn's number is still being taken
    expect(sink.events).toEqual([]);
    expect(pipeline.records).toEqual([]);
    open();
    const view = await job;
    expect(view).toMatchObject({ status: 'succeeded', api_calls: 1 });
    expect(sink.events[0]).toEqual({ type: 'turn_started', turn: 1, api_call: 1 });
    expect(pipeline.records.map((r) => [r.turn, r.id])).toEqual([[1, '1']]);
  });

  it('sends the first model call while the running state is saved; its turn opens (turn_started) only once it is', async () => {
    const pipeline = new FakePipeline();
    let saveRunning!: () => void;
    const savedRunning = new Promise<void>((r) => { saveRunning = r; });
    const model = scripted([{ type: 'reasoning', text: write('1', 'a.txt') }, { type: 'text', text: 'done' }]);
    const sink = collect();
    const saves: string[] = [];
    const save = async (v: JobState) => { saves.push(v.status); if (saves.length === 1) await savedRunning; };
    const job = runJob({ pipeline, stream: model.stream, emit: sink.emit, save }, newJob(), { task: 'do it' }, new AbortController().signal);
    for (let i = 0; i < 20 && model.requests.length === 0; i++) await new Promise((r) => setImmediate(r));
    expect(model.requests).toHaveLength(1); // sent while `running` is still being saved
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(sink.events).toEqual([]); // no turn_started before the running state
    expect(pipeline.records).toEqual([]);
    saveRunning();
    expect(await job).toMatchObject({ status: 'succeeded', api_calls: 1 });
    expect(sink.events[0]).toEqual({ type: 'turn_started', turn: 1, api_call: 1 });
  });

  it('an opening that fails (the session\'s events cannot be followed) drops the call already sent and fails the job', async () => {
    const pipeline = new FakePipeline();
    pipeline.hub.subscribe = async () => { throw new Error('Redis is gone'); };
    const model = scripted([{ type: 'reasoning', text: write('1', 'a.txt') }]);
    const view = await runJob({ pipeline, stream: model.stream, emit: collect().emit, save: async () => undefined }, newJob(), { task: 'do it' }, new AbortController().signal);
    expect(view).toMatchObject({ status: 'failed', error: 'infrastructure error: Redis is gone' });
    expect(model.aborted).toEqual([true]);
    expect(pipeline.records).toEqual([]);
  });

  it('a turn that cannot open (the key over its storage budget) aborts the call already sent, and the job fails with the code', async () => {
    const pipeline = new FakePipeline();
    pipeline.nextTurn = async () => { throw new PipelineError('storage_quota_exceeded', 'the key holds 256 MiB'); };
    const model = scripted([{ type: 'reasoning', text: write('1', 'a.txt') }]);
    const view = await runJob({ pipeline, stream: model.stream, emit: collect().emit, save: async () => undefined }, newJob(), { task: 'do it' }, new AbortController().signal);
    expect(view).toMatchObject({ status: 'failed', error: 'storage_quota_exceeded: the key holds 256 MiB' });
    expect(model.requests).toHaveLength(1);
    expect(model.aborted).toEqual([true]);
    expect(pipeline.records).toEqual([]);
  });
});
