// runTurn driven with scripted model streams and an in-memory pipeline: the
// dispatcher's decisions as a job sees them (PROTOCOL.md §5), without Redis or HTTP.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, log, setLogger } from '../../../services/log/index.ts';
import { FLOWS, type Flow } from '../../../services/agent/flows.ts';
import { ModelError, runTurn, type TurnInput } from '../../../services/agent/turn-runner.ts';
import { decideTurnOutcome } from '../../../services/agent/turn-outcome.ts';
import { FakePipeline, chunks, collect, scripted, type Step } from './fakes.ts';

const SID = 'ses_test';
const write = (id: string, path: string, body = 'x\n') => `<tf-write id="${id}" path="${path}">\n${body}</tf-write>`;

function setup(script: Step[][], opts: { flow?: Flow; budget?: number; results?: ConstructorParameters<typeof FakePipeline>[0]; signal?: AbortSignal } = {}) {
  const pipeline = new FakePipeline(opts.results);
  const model = scripted(...script);
  const sink = collect();
  const input: TurnInput = {
    flow: opts.flow ?? FLOWS.thinkflow, sessionId: SID, jobId: 'job_test', turn: 1,
    messages: [{ role: 'system', text: 's' }, { role: 'user', kind: 'task', text: 'do it' }],
    commandBudget: opts.budget ?? 100, burntIds: [], signal: opts.signal ?? new AbortController().signal,
  };
  const run = () => runTurn({ pipeline, stream: model.stream, emit: sink.emit }, input);
  return { pipeline, model, sink, input, run };
}

const types = (events: { type: string }[]) => events.map((e) => e.type);
const outcomeOf = (r: Awaited<ReturnType<ReturnType<typeof setup>['run']>>) =>
  decideTurnOutcome({ records: r.records, stop: r.stop, nativeCalls: r.toolCalls.length });

describe('runTurn: all commands succeed', () => {
  it.each([1, 7, 1000])('enqueues each command as it completes, in stream order (deltas of %i characters)', async (size) => {
    const reasoning = `plan ${write('1', 'a.txt')} then ${write('2', 'b.txt')}`;
    const t = setup([[...chunks('reasoning', reasoning, size), ...chunks('text', 'Done: `<tf-mkdir id="9" path="x"/>` is inert.', size),
      { type: 'usage', prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 }]]);
    const r = await t.run();
    expect(t.pipeline.records.map((x) => [x.id, x.path, x.flow, x.status])).toEqual([['1', 'a.txt', 'reasoning', 'succeeded'], ['2', 'b.txt', 'reasoning', 'succeeded']]);
    expect(r.stop).toEqual({ kind: 'completed' });
    expect(r.commandsIssued).toBe(2);
    expect(r.records.map((x) => x.id)).toEqual(['1', '2']);
    expect(r.visibleText).toBe('Done: `<tf-mkdir id="9" path="x"/>` is inert.');
    expect(r.reasoningText).toBe(reasoning);
    expect(r.usage).toEqual({ prompt_tokens: 10, completion_tokens: 20, total_tokens: 30, estimated: false });
    expect(t.model.aborted).toEqual([false]);
    expect(outcomeOf(r)).toEqual({ kind: 'done' });
    // Deltas are coalesced, and every other event flushes the pending text first: order = stream order.
    const parsed = t.sink.events.filter((e) => e.type === 'command_parsed');
    expect(parsed).toEqual([
      { type: 'command_parsed', turn: 1, stream: 'reasoning', command: { id: '1', tool: 'write', path: 'a.txt', content: 'x\n', need_result: false } },
      { type: 'command_parsed', turn: 1, stream: 'reasoning', command: { id: '2', tool: 'write', path: 'b.txt', content: 'x\n', need_result: false } },
    ]);
    expect(types(t.sink.events).at(-1)).toBe('text_delta');
    const reasoningOut = t.sink.events.flatMap((e) => (e.type === 'reasoning_delta' ? [e.text] : [])).join('');
    expect(reasoningOut).toBe(reasoning);
  });

  it('estimates usage with a tokenizer when the provider sends none', async () => {
    const t = setup([[...chunks('text', 'hello there')]]);
    const r = await t.run();
    expect(r.usage.estimated).toBe(true);
    expect(r.usage.prompt_tokens).toBeGreaterThan(0);
    expect(r.usage.total_tokens).toBe(r.usage.prompt_tokens + r.usage.completion_tokens);
  });
});

describe('runTurn: a failure mid-stream interrupts the model', () => {
  it('stops the stream when the worker reports the failure; later commands are skipped or never parsed', async () => {
    let t: ReturnType<typeof setup>;
    t = setup([[
      { type: 'reasoning', text: `${write('1', 'bad.txt')}${write('2', 'b.txt')}` },
      async () => { await t.pipeline.finished('1'); },
      { type: 'reasoning', text: write('3', 'c.txt') },
      { type: 'text', text: 'never seen' },
    ]], { results: (c) => (c.id === '1' ? { status: 'failed', error: 'disk full' } : {}) });
    const r = await t.run();
    expect(t.model.aborted).toEqual([true]);
    expect(r.stop).toEqual({ kind: 'command_failed', commandId: '1' });
    expect(t.pipeline.records.map((x) => [x.id, x.status])).toEqual([['1', 'failed'], ['2', 'skipped']]);
    expect(r.visibleText).toBe('');
    expect(outcomeOf(r)).toMatchObject({ kind: 'interrupt', failed: true, interruption: { kind: 'failure', record: { id: '1' }, skipped: ['2'] } });
  });
});

describe('runTurn: need_result', () => {
  it('stops the stream after the command, waits for its result and feeds it back', async () => {
    const t = setup([[
      { type: 'reasoning', text: `${write('1', 'a.txt')}<tf-read id="2" path="a.txt"/>` },
      { type: 'reasoning', text: write('3', 'later.txt') },
    ]], { results: (c) => (c.tool === 'read' ? { stdout: 'x\n' } : {}) });
    const r = await t.run();
    expect(t.model.aborted).toEqual([true]);
    expect(r.stop).toEqual({ kind: 'need_result', commandId: '2' });
    expect(t.pipeline.records.map((x) => x.id)).toEqual(['1', '2']);
    expect(outcomeOf(r)).toMatchObject({ kind: 'interrupt', failed: false, interruption: { kind: 'result', record: { id: '2', stdout: 'x\n' } } });
  });
});

describe('runTurn: a parse error', () => {
  it('reports it, fails the rest of the turn and stops the stream', async () => {
    const t = setup([[
      { type: 'reasoning', text: `${write('1', 'a.txt')}<tf-write id="x" path="b.txt">y</tf-write>` },
      { type: 'reasoning', text: write('3', 'c.txt') },
    ]]);
    const r = await t.run();
    expect(t.model.aborted).toEqual([true]);
    expect(r.stop).toMatchObject({ kind: 'parse_error', stream: 'reasoning', error: { code: 'bad_id' }, commandsBefore: 1 });
    expect(t.pipeline.failTurnCalls).toEqual([{ turn: 1, label: 'parse error (bad_id)' }]);
    expect(t.pipeline.records.map((x) => x.id)).toEqual(['1']);
    expect(types(t.sink.events).filter((x) => x !== 'reasoning_delta')).toEqual(['command_parsed', 'parse_error']);
    expect(outcomeOf(r)).toMatchObject({ kind: 'interrupt', interruption: { kind: 'parse_error', skipped: [] } });
  });

  it('a tag left open when the stream ends by itself is unclosed_tag, with its id', async () => {
    const t = setup([[{ type: 'text', text: 'ok <tf-write id="4" path="a.txt">unfinished' }]]);
    const r = await t.run();
    expect(r.stop).toMatchObject({ kind: 'parse_error', stream: 'text', error: { code: 'unclosed_tag', id: '4' }, commandsBefore: 0 });
    expect(t.pipeline.failTurnCalls).toEqual([{ turn: 1, label: 'parse error (unclosed_tag in tag 4)' }]);
    expect(r.visibleText).toBe('ok ');
  });
});

describe('runTurn: native tool calls (react)', () => {
  it('assembles fragmented calls, runs them after the stream through the pipeline, and returns their results', async () => {
    const t = setup([[
      { type: 'text', text: 'Writing <tf-write id="1" path="a">not a tag in react</tf-write>' },
      { type: 'tool_call', index: 0, id: 'call_a', name: 'write', arguments: '{"path":"a.txt",' },
      { type: 'tool_call', index: 0, arguments: '"content":"hi"}' },
      { type: 'tool_call', index: 1, name: 'read', arguments: '{"path":"a.txt"}' },
      { type: 'tool_call', index: 2, id: 'call_c', name: 'format_disk', arguments: '{}' },
    ]], { flow: FLOWS.react, results: (c) => (c.tool === 'read' ? { stdout: 'hi' } : {}) });
    const r = await t.run();
    expect(t.model.requests[0]!.tools.map((x) => x.name)).toEqual(FLOWS.react.nativeTools);
    expect(r.visibleText).toBe('Writing <tf-write id="1" path="a">not a tag in react</tf-write>');
    expect(r.toolCalls.map((c) => c.id)).toEqual(['call_a', 'call_1_1', 'call_c']);
    expect(t.pipeline.records.map((x) => [x.id, x.tool, x.flow, x.status])).toEqual([['call_a', 'write', 'native', 'succeeded'], ['call_1_1', 'read', 'native', 'succeeded']]);
    expect(r.nativeResults.map((n) => [n.call.id, n.record?.status ?? null, n.error])).toEqual([
      ['call_a', 'succeeded', null], ['call_1_1', 'succeeded', null], ['call_c', null, expect.stringMatching(/not offered/)],
    ]);
    expect(t.sink.events.filter((e) => e.type === 'command_parsed').map((e) => 'stream' in e && e.stream)).toEqual(['native', 'native']);
    expect(outcomeOf(r)).toEqual({ kind: 'tools' });
  });
});

describe('runTurn: cancel and errors', () => {
  it('cancel (the job signal) stops the stream; nothing is drained and no tool call runs', async () => {
    const job = new AbortController();
    const t = setup([[
      { type: 'reasoning', text: write('1', 'a.txt') },
      { type: 'tool_call', index: 0, id: 'c1', name: 'read', arguments: '{"path":"a.txt"}' },
      () => job.abort('cancelled'),
      { type: 'reasoning', text: write('2', 'b.txt') },
    ]], { signal: job.signal });
    const r = await t.run();
    expect(t.model.aborted).toEqual([true]);
    expect(r.stop).toEqual({ kind: 'aborted', reason: 'cancelled' });
    expect(t.pipeline.records.map((x) => x.id)).toEqual(['1']);
    expect(t.pipeline.drained).toEqual([]);
    expect(r.toolCalls).toEqual([]);
  });

  it('a job aborted before the call starts never streams a delta', async () => {
    const job = new AbortController();
    job.abort('timeout');
    const t = setup([[{ type: 'reasoning', text: write('1', 'a.txt') }]], { signal: job.signal });
    const r = await t.run();
    expect(r.stop).toEqual({ kind: 'aborted', reason: 'timeout' });
    expect(t.pipeline.records).toEqual([]);
  });

  it('a model call that fails before sending anything is a ModelError with the reason', async () => {
    const t = setup([[() => { throw new Error('401 invalid api key'); }]]);
    const err = await t.run().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as Error).message).toBe('401 invalid api key');
  });

  it('a stream broken off mid-turn: the commands parsed before the cut run, the half-written one does not, and the turn says why', async () => {
    const t = setup([[{ type: 'reasoning', text: `${write('1', 'a.txt')} then <tf-write id="2" path="b.txt">\nhalf` }, () => { throw new Error('socket hang up'); }]]);
    const r = await t.run();
    expect(r.stop).toEqual({ kind: 'stream_broken', error: 'socket hang up' });
    expect(t.pipeline.records.map((x) => [x.id, x.status])).toEqual([['1', 'succeeded']]);
    expect(r.records.map((x) => x.id)).toEqual(['1']);
    expect(outcomeOf(r)).toEqual({ kind: 'interrupt', failed: false, interruption: { kind: 'stream_broken', error: 'socket hang up' } });
  });

  it('a pipeline that refuses a command fails the turn as infrastructure, not as the model', async () => {
    const t = setup([[{ type: 'reasoning', text: write('1', 'a.txt') }]]);
    t.pipeline.enqueue = async () => { throw new Error('session deleted'); };
    const err = await t.run().catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(ModelError);
    expect((err as Error).message).toBe('session deleted');
  });

  it('max_commands: the command past the budget is not enqueued and the stream stops', async () => {
    const t = setup([[{ type: 'reasoning', text: `${write('1', 'a')}${write('2', 'b')}${write('3', 'c')}` }]], { budget: 2 });
    const r = await t.run();
    expect(r.stop).toEqual({ kind: 'budget_exceeded', budget: 2 });
    expect(t.pipeline.records.map((x) => x.id)).toEqual(['1', '2']);
    expect(r.commandsIssued).toBe(2);
  });

  it('a native call the pipeline cannot take is told to the model, and logged with its three ids', async () => {
    const out = new PassThrough();
    const lines: Record<string, unknown>[] = [];
    out.on('data', (d: Buffer) => { for (const l of d.toString().split('\n')) if (l) lines.push(JSON.parse(l)); });
    const before = log();
    setLogger(createLogger({ level: 'warn', destination: out, pretty: false }));
    try {
      const t = setup([[{ type: 'tool_call', index: 0, id: 'call_x', name: 'read', arguments: '{"path":"a"}' }]], { flow: FLOWS.react });
      t.pipeline.enqueue = async () => { throw new Error('Redis is down'); };
      const r = await t.run();
      expect(r.nativeResults).toMatchObject([{ call: { id: 'call_x' }, record: null, error: 'Redis is down' }]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(lines).toContainEqual(expect.objectContaining({ job_id: 'job_test', session_id: SID, command_id: 'call_x', err: expect.objectContaining({ message: 'Redis is down' }) }));
    } finally {
      setLogger(before);
    }
  });
});
