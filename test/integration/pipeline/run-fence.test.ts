// A run job whose session list a re-delivered run took over (a takeover of a
// process that only looked dead, worker-liveness.ts) starts nothing more: the
// start transition is refused unless the run holds the list (`run_owner`,
// transition-7.lua). Without it, the stale run and the new one could each
// start a command of the session at once: the stale one the command both
// runs read at the head, the new one the next (its own start lost the race).
// Real Redis; the sandboxes are fakes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { readEvents } from '../../../services/pipeline/event-reader.ts';
import { Processor } from '../../../services/pipeline/processor.ts';
import { closeFailedCommand } from '../../../services/pipeline/session-run.ts';
import type { RunStep } from '../../../services/pipeline/queues.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, testConfig, testPrefix } from './helpers.ts';

const prefix = testPrefix('fence');
const fake = new FakeSandboxes();
let rt: Runtime;

beforeAll(async () => {
  rt = await createRuntime(testConfig(prefix, { THINKFLOW_RUN_LINGER_MS: '0' }), { sandboxes: fake });
});
afterAll(async () => {
  await rt?.close();
  await cleanupPrefix(prefix);
});

/** A session with `n` queued bash commands in its run list, written by the ledger alone: no run job starts. */
async function sessionWithCommands(n: number, first: { cmd: string; decision: 'allow' | 'prompt' } = { cmd: 'echo 1', decision: 'allow' }): Promise<{ sid: string; indexes: number[] }> {
  const sid = (await rt.pipeline.createSession({ owner: null, approval: 'on-request' })).session_id;
  const turn = await rt.pipeline.nextTurn(sid);
  const ledger = rt.pipeline.workerSide().lifecycle.ledger;
  const indexes: number[] = [];
  for (let i = 1; i <= n; i++) {
    const created = await ledger.create({
      session: sid, turn, command: { id: String(i), tool: 'bash', cmd: i === 1 ? first.cmd : `echo ${i}`, need_result: false }, flow: 'api',
      evaluation: { decision: i === 1 ? first.decision : 'allow', matched_rules: [], reason: '' }, status: 'queued', jobGuard: '',
    });
    if (created.kind !== 'created') throw new Error(`not created: ${created.kind}`);
    indexes.push(created.index);
  }
  return { sid, indexes };
}

function processor(): Processor {
  const side = rt.pipeline.workerSide();
  return new Processor(
    { lifecycle: side.lifecycle, sessions: side.sessions, approvals: rt.pipeline.approvals, gate: rt.gate, sandboxes: fake },
    { approvalTtlS: 60 },
  );
}

const commandOf = (step: RunStep) => {
  if (step.kind !== 'command') throw new Error(`expected a command, got ${step.kind}`);
  return step;
};

describe('a run that lost its list to a re-delivered run', () => {
  it('starts nothing more: the command stays for the run that holds the list, which runs it once', async () => {
    const { sid, indexes } = await sessionWithCommands(2);
    const ran = () => fake.log.filter((l) => l.sid === sid).map((l) => l.id);
    const stale = commandOf(await rt.pipeline.queues.next(sid, { id: 'run-stale', start: true, lingerMs: 0 }, null));
    const taker = commandOf(await rt.pipeline.queues.next(sid, { id: 'run-taker', start: true, lingerMs: 0 }, null));
    expect([stale.index, taker.index]).toEqual([indexes[0], indexes[0]]);

    // The stale run goes on with what it read before the takeover.
    await processor().process(sid, stale.index, { load: stale.load(), run: 'run-stale' });
    expect(ran()).toEqual([]);
    const ledger = rt.pipeline.workerSide().lifecycle.ledger;
    expect((await ledger.get(sid, stale.index))!.status).toBe('queued');
    expect((await readEvents(rt.redis, rt.keys, sid)).filter((e) => e.type === 'command_started')).toEqual([]);
    // Its next step ends it, touching nothing.
    expect((await rt.pipeline.queues.next(sid, { id: 'run-stale', lingerMs: 0 }, stale.index)).kind).toBe('empty');
    expect(await rt.redis.lrange(rt.keys.runList(sid), 0, -1)).toEqual(indexes.map(String));

    // The run holding the list runs both, in order, once each.
    await processor().process(sid, taker.index, { load: taker.load(), run: 'run-taker' });
    const second = commandOf(await rt.pipeline.queues.next(sid, { id: 'run-taker', lingerMs: 0 }, taker.index));
    expect(second.index).toBe(indexes[1]);
    await processor().process(sid, second.index, { load: second.load(), run: 'run-taker' });
    expect(ran()).toEqual(['1', '2']);
    expect((await ledger.get(sid, second.index))!.status).toBe('succeeded');
  });

  it('is told which run holds the list, and nothing of the record or its events is written', async () => {
    const { sid, indexes } = await sessionWithCommands(1);
    await rt.pipeline.queues.next(sid, { id: 'run-holder', start: true, lingerMs: 0 }, null);
    const ledger = rt.pipeline.workerSide().lifecycle.ledger;
    const rec = (await ledger.get(sid, indexes[0]!))!;
    const seq = await rt.redis.get(rt.keys.eventSeq(sid));
    const refused = await ledger.transition(rec, {
      from: ['queued'], to: 'running', events: ['command_started'], runOwner: 'run-other', fields: { started_at: new Date().toISOString() },
    });
    expect(refused).toEqual({ ok: false, notOwner: 'run-holder' });
    expect(await ledger.get(sid, indexes[0]!)).toEqual(rec);
    expect(await rt.redis.get(rt.keys.eventSeq(sid))).toBe(seq);
    // Without a run id (a recovery's transition, a one-command job of the old layout) nothing is checked.
    expect((await ledger.transition(rec, { from: ['queued'], to: 'running', events: ['command_started'] })).ok).toBe(true);
  });

  it('does not ask an operator for it either: the run holding the list asks, and runs it once approved (reviewer helper-52, F1)', async () => {
    const { sid, indexes } = await sessionWithCommands(2, { cmd: 'rm -rf x', decision: 'prompt' });
    const ledger = rt.pipeline.workerSide().lifecycle.ledger;
    const stale = commandOf(await rt.pipeline.queues.next(sid, { id: 'run-stale', start: true, lingerMs: 0 }, null));
    const taker = commandOf(await rt.pipeline.queues.next(sid, { id: 'run-taker', start: true, lingerMs: 0 }, null));
    // The stale run's ask lands first. Unfenced, it won, the taker's lost and moved on, and the approved command
    // then waited forever: the stale run may not start it, and the taker had left it.
    const staleDone = processor().process(sid, stale.index, { load: stale.load(), run: 'run-stale' });
    const stepped = await Promise.race([staleDone.then(() => 'returned'), sleep(1000).then(() => 'waits for an operator')]);
    expect(stepped).toBe('returned');
    expect((await ledger.get(sid, stale.index))!.status).toBe('queued');
    const takerDone = processor().process(sid, taker.index, { load: taker.load(), run: 'run-taker' });
    const waiting = await until(async () => {
      const rec = await ledger.get(sid, taker.index);
      return rec?.status === 'awaiting_approval' ? rec : null;
    });
    expect(await rt.pipeline.approvals.answer(waiting.approval!.token, 'approve', null, 'operator')).toBe('ok');
    await takerDone;
    expect((await ledger.get(sid, indexes[0]!))!.status).toBe('succeeded');
    expect(fake.log.filter((l) => l.sid === sid).map((l) => l.id)).toEqual(['1']);
  });

  it('does not close a command the run holding the list now runs, when its own processing threw (reviewer helper-52, F2)', async () => {
    const { sid, indexes } = await sessionWithCommands(1);
    const ledger = rt.pipeline.workerSide().lifecycle.ledger;
    await rt.pipeline.queues.next(sid, { id: 'run-stale', start: true, lingerMs: 0 }, null);
    await rt.pipeline.queues.next(sid, { id: 'run-taker', start: true, lingerMs: 0 }, null);
    const rec = (await ledger.get(sid, indexes[0]!))!;
    const started = await ledger.transition(rec, {
      from: ['queued'], to: 'running', events: ['command_started'], runOwner: 'run-taker', fields: { started_at: new Date().toISOString() },
    });
    expect(started.ok).toBe(true);
    await closeFailedCommand(rt.pipeline.workerSide().lifecycle, sid, indexes[0]!, new Error('the stale run threw'), 'run-stale');
    expect((await ledger.get(sid, indexes[0]!))!.status).toBe('running');
    expect(fake.cancelled).not.toContain(sid);
  });

  it('through a real run job: an approval answered after a takeover is run by the run holding the list, not by the waiting one', async () => {
    const sid = (await rt.pipeline.createSession({ owner: null, approval: 'on-request' })).session_id;
    const turn = await rt.pipeline.nextTurn(sid);
    const handle = await rt.pipeline.enqueue(sid, turn, { id: '1', tool: 'bash', cmd: 'rm -rf x', need_result: false }, 'text');
    const ledger = rt.pipeline.workerSide().lifecycle.ledger;
    const waiting = await until(async () => {
      const rec = await ledger.get(sid, handle.index);
      return rec?.status === 'awaiting_approval' ? rec : null;
    });
    // A re-delivered run takes the list over while the first one waits for the operator.
    expect((await rt.pipeline.queues.next(sid, { id: 'run-redelivered', start: true, lingerMs: 0 }, null)).kind).toBe('command');
    expect(await rt.pipeline.approvals.answer(waiting.approval!.token, 'approve', null, 'operator')).toBe('ok');
    const q = rt.pipeline.queues.queue(sid);
    await until(async () => ((await q.getActiveCount()) === 0 ? true : null));
    expect(fake.log.filter((l) => l.sid === sid)).toEqual([]);
    expect((await ledger.get(sid, handle.index))!.status).toBe('awaiting_approval');
    // The run holding the list (here a new run job, as the re-delivered one would) runs it, once.
    await rt.pipeline.queues.startRun(sid, 0, '-redelivered');
    expect((await rt.pipeline.awaitResult(handle)).status).toBe('succeeded');
    expect(fake.log.filter((l) => l.sid === sid).map((l) => l.id)).toEqual(['1']);
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `read` (bounded: 5 s) until it gives a value. */
async function until<T>(read: () => Promise<T | null>): Promise<T> {
  for (const end = Date.now() + 5000; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) {
    const v = await read();
    if (v !== null) return v;
  }
  throw new Error('not within 5 s');
}
