// A turn's drain from the indexes the turn runner enqueued gives exactly the records the turn's list in Redis
// names, in every way a turn ends (review helper-58). Real Redis, in-memory sandboxes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { FLOWS, type Flow } from '../../../services/agent/flows.ts';
import { runTurn } from '../../../services/agent/turn-runner.ts';
import type { ModelEvent } from '../../../services/agent/messages.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, testConfig, testPrefix } from './helpers.ts';
import { collect, scripted, type Step } from '../../unit/agent/fakes.ts';

const prefix = testPrefix('draincmp');
const fake = new FakeSandboxes();
let rt: Runtime;

beforeAll(async () => {
  rt = await createRuntime(testConfig(prefix), { sandboxes: fake });
});
afterAll(async () => {
  await rt?.close();
  await cleanupPrefix(prefix);
});

const write = (id: string, path: string) => `<tf-write id="${id}" path="${path}">\nx\n</tf-write>`;

const ctl: { stop: (() => void) | null } = { stop: null };

async function turnOf(steps: Step[], opts: { flow?: Flow } = {}) {
  const sid = (await rt.pipeline.createSession({ owner: null })).session_id;
  const turn = await rt.pipeline.nextTurn(sid);
  const model = scripted(steps);
  const control = { onInterrupt: (s: () => void) => { ctl.stop = s; return () => { ctl.stop = null; }; } };
  const report = await runTurn({ pipeline: rt.pipeline, stream: model.stream, emit: collect().emit }, {
    flow: opts.flow ?? FLOWS.thinkflow, sessionId: sid, jobId: null, turn, messages: [], commandBudget: 50, burntIds: [], signal: new AbortController().signal,
    control: control as never,
  });
  // Let anything still being recorded land, then compare with the turn's list as Redis holds it.
  await new Promise((r) => setTimeout(r, 300));
  const listed = await (rt.pipeline.records as unknown as { turnIndexes(s: string, t: number): Promise<number[]> }).turnIndexes(sid, turn);
  const all = await rt.pipeline.entries(sid);
  return { report, listed, all, sid, turn };
}

describe('a turn drains what its list names', () => {
  it('a failure and the skipped rest', async () => {
    const { report, listed } = await turnOf([{ type: 'reasoning', text: `${write('1', 'a')}<tf-bash id="2" cmd="false" />${write('3', 'c')}` }, { type: 'text', text: 'done' }]);
    expect(report.records.map((r) => r.status)).toEqual(['succeeded', 'failed', 'skipped']);
    expect(report.records.map((r) => r.index)).toEqual(listed);
  });

  it('a parse error in the middle', async () => {
    const { report, listed } = await turnOf([{ type: 'reasoning', text: `${write('1', 'a')}<tf-write id="x y" path="b">\nb\n</tf-write>${write('3', 'c')}` }]);
    expect(report.records.map((r) => r.index)).toEqual(listed);
  });

  it('need_result (the stream stops after a read)', async () => {
    const { report, listed } = await turnOf([{ type: 'reasoning', text: `${write('1', 'a')}<tf-read id="2" path="a"/>${write('3', 'c')}` }]);
    expect(report.stop.kind).toBe('need_result');
    expect(report.records.map((r) => r.index)).toEqual(listed);
  });

  it('a steering interrupt mid-stream', async () => {
    const steps: Step[] = [{ type: 'reasoning', text: write('1', 'a') }, async () => { ctl.stop?.(); await new Promise((r) => setTimeout(r, 20)); }, { type: 'reasoning', text: write('2', 'b') } as ModelEvent];
    const { report, listed } = await turnOf(steps);
    expect(report.stop.kind).toBe('steered');
    expect(listed).toHaveLength(1);
    expect(report.records.map((r) => r.index)).toEqual(listed);
  });

  it('react: native calls only (none drained, all run after)', async () => {
    const { report, listed, all } = await turnOf([
      { type: 'tool_call', index: 0, id: 'c1', name: 'write', arguments: '{"path":"a","content":"x"}' },
      { type: 'tool_call', index: 1, id: 'c2', name: 'read', arguments: '{"path":"a"}' },
    ], { flow: FLOWS.react });
    expect(report.records).toEqual([]);
    expect(listed).toHaveLength(2); // the native ones are in the turn's list, but run after the drain (as before)
    expect(all.map((r) => r.flow)).toEqual(['native', 'native']);
  });
});
