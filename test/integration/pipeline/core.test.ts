import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { runCommandsTurn } from '../../../services/pipeline/api-turn.ts';
import { readEvents } from '../../../services/pipeline/event-reader.ts';
import { Processor } from '../../../services/pipeline/processor.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, testConfig, testPrefix } from './helpers.ts';

// The queue/ledger/turn core on real Redis with an in-memory executor.
const prefix = testPrefix('core');
const fake = new FakeSandboxes();
let rt: Runtime;

beforeAll(async () => {
  rt = await createRuntime(testConfig(prefix), { sandboxes: fake });
});
afterAll(async () => {
  await rt?.close();
  await cleanupPrefix(prefix);
});

const session = async (extra: { approval?: 'never' | 'on-request' } = {}) =>
  (await rt.pipeline.createSession({ owner: null, ...extra })).session_id;

describe('pipeline core (fake sandboxes)', () => {
  it('runs a turn in order and records queued → running → succeeded with events', async () => {
    const sid = await session();
    const body = Array.from({ length: 30 }, (_, i) => `<tf-append id="${i + 1}" path="log.txt">${i + 1},</tf-append>`).join('\n');
    const out = await runCommandsTurn(rt.pipeline, sid, body);
    expect(out.errors).toEqual([]);
    expect(out.results.map((r) => r.status)).toEqual(Array(30).fill('succeeded'));
    expect(fake.files.get(sid)!.get('log.txt')).toBe(Array.from({ length: 30 }, (_, i) => `${i + 1},`).join(''));
    const ledger = await rt.pipeline.entries(sid);
    expect(ledger.map((r) => r.id)).toEqual(Array.from({ length: 30 }, (_, i) => String(i + 1)));
    expect(ledger[0]).toMatchObject({ flow: 'api', tool: 'append', injected: false, content: '1,', content_size: 2, risk: 'medium' });
    expect(ledger[0]!.started_at! >= ledger[0]!.enqueued_at).toBe(true);
    const events = await readEvents(rt.redis, rt.keys, sid);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const forFirst = events.filter((e) => e.index === 1).map((e) => e.type);
    expect(forFirst).toEqual(['command_queued', 'command_started', 'command_finished']);
    expect(events.find((e) => e.type === 'command_finished')!.record!.status).toBe('succeeded');
  });

  it('skips the rest of a turn after a failure, without running it', async () => {
    const sid = await session();
    const out = await runCommandsTurn(rt.pipeline, sid,
      '<tf-bash id="1" cmd="echo one" />\n<tf-bash id="2" cmd="false" />\n<tf-write id="3" path="never.txt">x</tf-write>');
    expect(out.results.map((r) => [r.id, r.status])).toEqual([['1', 'succeeded'], ['2', 'failed'], ['3', 'skipped']]);
    expect(out.results[2]!.error).toBe('skipped: command 2 failed earlier in this turn');
    expect(fake.log.filter((l) => l.sid === sid).map((l) => l.id)).toEqual(['1', '2']);
    expect(fake.files.get(sid)?.has('never.txt') ?? false).toBe(false);
    // The next turn runs normally.
    const next = await runCommandsTurn(rt.pipeline, sid, '<tf-bash id="1" cmd="echo again" />');
    expect(next.results[0]).toMatchObject({ status: 'succeeded', stdout: 'again\n', exit_code: 0 });
  });

  it('a parse error fails the turn at its place: earlier commands run, later ones are skipped', async () => {
    const sid = await session();
    const out = await runCommandsTurn(rt.pipeline, sid,
      '<tf-write id="1" path="a.txt">a</tf-write>\n<tf-write id="x" path="b.txt">b</tf-write>\n<tf-write id="3" path="c.txt">c</tf-write>');
    expect(out.errors.map((e) => e.code)).toEqual(['bad_id']);
    expect(out.results.map((r) => [r.id, r.status])).toEqual([['1', 'succeeded'], ['3', 'skipped']]);
    expect(fake.files.get(sid)!.has('c.txt')).toBe(false);
  });

  it('refuses forbidden commands at once and never-mode prompts with the exact reason', async () => {
    const sid = await session({ approval: 'never' });
    const out = await runCommandsTurn(rt.pipeline, sid,
      '<tf-bash id="1" cmd="sleep 0.3; echo slow" />\n<tf-bash id="2" cmd="rm -rf x" />\n<tf-bash id="3" cmd="echo later" />');
    expect(out.results.map((r) => r.status)).toEqual(['succeeded', 'forbidden', 'skipped']);
    expect(out.results[1]!.error).toBe('approval required by policy, but approval mode is never');
    const curl = await runCommandsTurn(rt.pipeline, sid, '<tf-bash id="1" cmd="curl http://x" />');
    expect(curl.results[0]!.status).toBe('forbidden');
    const [, , , rec] = await rt.pipeline.entries(sid);
    expect(rec).toMatchObject({ decision: 'forbid', matched_rule: 'no-curl', status: 'forbidden' });
  });

  it('await one command (need_result) and drain a turn', async () => {
    const sid = await session();
    const turn = await rt.pipeline.nextTurn(sid);
    const h1 = await rt.pipeline.enqueue(sid, turn, { id: '1', tool: 'bash', cmd: 'sleep 0.2; echo a', need_result: false }, 'reasoning');
    const h2 = await rt.pipeline.enqueue(sid, turn, { id: '2', tool: 'read', path: 'nope', need_result: true }, 'reasoning');
    const h3 = await rt.pipeline.enqueue(sid, turn, { id: '3', tool: 'bash', cmd: 'echo c', need_result: false }, 'text');
    const r2 = await rt.pipeline.awaitResult(h2);
    expect(r2.status).toBe('failed');
    const all = await rt.pipeline.drainTurn(sid, turn);
    expect(all.map((r) => r.status)).toEqual(['succeeded', 'failed', 'skipped']);
    expect([h1.index, h2.index, h3.index]).toEqual(all.map((r) => r.index));
    // A caller that enqueued the whole turn names its indexes (in any order): the same records, in ledger order.
    expect(await rt.pipeline.drainTurn(sid, turn, undefined, undefined, [h3.index, h1.index, h2.index])).toEqual(all);
    await expect(rt.pipeline.enqueue(sid, turn, { id: '2', tool: 'touch', path: 'x', need_result: false }, 'text'))
      .rejects.toMatchObject({ code: 'duplicate_id' });
    const un = await rt.pipeline.uninjected(sid);
    expect(un.map((r) => r.id)).toEqual(['1', '2', '3']);
    await rt.pipeline.markInjected(sid, un.map((r) => r.index));
    expect(await rt.pipeline.uninjected(sid)).toEqual([]);
    expect((await rt.pipeline.entries(sid))[0]!.injected).toBe(true);
  });

  it('a re-delivered job whose record says running is marked interrupted, not run again', async () => {
    const sid = await session();
    const turn = await rt.pipeline.nextTurn(sid);
    const side = rt.pipeline.workerSide();
    const ledger = side.lifecycle.ledger;
    // Write the record as a dead worker would have left it: running, no job in any queue.
    const created = await ledger.create({
      session: sid, turn, command: { id: '1', tool: 'bash', cmd: 'echo side-effect', need_result: false }, flow: 'api',
      evaluation: { decision: 'allow', matched_rules: [], reason: '' }, status: 'queued', jobGuard: '',
    });
    if (created.kind !== 'created') throw new Error('not created');
    expect((await ledger.transition(created.record, { from: ['queued'], to: 'running', events: ['command_started'] })).ok).toBe(true);
    const before = fake.log.length;
    await new Processor(
      { lifecycle: side.lifecycle, sessions: side.sessions, approvals: rt.pipeline.approvals, gate: rt.gate, sandboxes: fake },
      { approvalTtlS: 60 },
    ).process(sid, created.index);
    expect(fake.log.length).toBe(before);
    const rec = await ledger.get(sid, created.index);
    expect(rec).toMatchObject({ status: 'interrupted', error_code: 'interrupted' });
    expect(await ledger.openCount(sid)).toBe(0);
  });
});
