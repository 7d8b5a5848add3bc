import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, testConfig, testPrefix } from './helpers.ts';

// A worker that shuts down while a command waits for approval hands the job
// back (at the head of the queue); another worker resumes the same wait.
const prefix = testPrefix('handover');
const runtimes: Runtime[] = [];
afterAll(async () => {
  for (const r of runtimes) await r.close();
  await cleanupPrefix(prefix);
});

describe('graceful shutdown during an approval wait', () => {
  it('does not hold shutdown, keeps the token, and the next worker runs the command once', async () => {
    const cfg = testConfig(prefix);
    const fakeA = new FakeSandboxes();
    const fakeB = new FakeSandboxes();
    const a = await createRuntime(cfg, { sandboxes: fakeA });
    runtimes.push(a);
    const sid = (await a.pipeline.createSession({ owner: null, approval: 'on-request' })).session_id;
    const turn = await a.pipeline.nextTurn(sid);
    const h1 = await a.pipeline.enqueue(sid, turn, { id: '1', tool: 'bash', cmd: 'rm -f x', need_result: false }, 'api');
    const h2 = await a.pipeline.enqueue(sid, turn, { id: '2', tool: 'bash', cmd: 'echo after', need_result: false }, 'api');
    let pending = await a.pipeline.approvals.listPending();
    for (let i = 0; i < 100 && !pending.length; i++) {
      await new Promise((r) => setTimeout(r, 20));
      pending = await a.pipeline.approvals.listPending();
    }
    expect(pending.map((p) => p.session_id)).toEqual([sid]);
    const t0 = Date.now();
    await a.pool!.close();
    expect(Date.now() - t0).toBeLessThan(3000);
    expect((await a.pipeline.records.get(sid, h1.index))!.status).toBe('awaiting_approval');

    const b = await createRuntime(cfg, { sandboxes: fakeB });
    runtimes.push(b);
    expect(await b.pipeline.approvals.answer(pending[0]!.token, 'approve', null, 'tester')).toBe('ok');
    const [r1, r2] = await Promise.all([b.pipeline.awaitResult(h1), b.pipeline.awaitResult(h2)]);
    expect([r1.status, r2.status, r1.error]).toEqual(['succeeded', 'succeeded', null]);
    expect(r1.approval).toMatchObject({ token: pending[0]!.token, decision: 'approve', decided_by: 'tester' });
    expect(fakeA.log).toEqual([]);
    expect(fakeB.log.map((l) => l.id)).toEqual(['1', '2']);
  });

  async function orphans(rt: Runtime): Promise<{ sid: string; turn: number }> {
    const sid = (await rt.pipeline.createSession({ owner: null })).session_id;
    const turn = await rt.pipeline.nextTurn(sid);
    // What an API process that died between "write queued" and "start a run job" leaves behind:
    for (const id of ['1', '2']) {
      const made = await rt.pipeline.workerSide().lifecycle.ledger.create({
        session: sid, turn, command: { id, tool: 'bash', cmd: `echo ${id}`, need_result: false }, flow: 'api',
        evaluation: { decision: 'allow', matched_rules: [], reason: '' }, status: 'queued', jobGuard: '',
      });
      if (made.kind !== 'created') throw new Error('not created');
    }
    await rt.redis.zadd(rt.keys.busy(), Date.now(), sid);
    return { sid, turn };
  }

  it('runs, in order, the commands a dead enqueuer left in the run list (queued, no run job started)', async () => {
    const fake = new FakeSandboxes();
    const rt = await createRuntime(testConfig(prefix), { sandboxes: fake, poolOptions: { reconcileMs: 200, lostAfterMs: 300 } });
    runtimes.push(rt);
    const { sid, turn } = await orphans(rt);
    const t0 = Date.now();
    const [a, b] = await rt.pipeline.drainTurn(sid, turn);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect([a!.status, b!.status]).toEqual(['succeeded', 'succeeded']);
    expect(fake.log.map((l) => l.id)).toEqual(['1', '2']);
    expect(await rt.pipeline.records.openCount(sid)).toBe(0);
    expect(await rt.pipeline.queues.pendingRuns(sid)).toBe(0);
  });

  it('closes open records outside any run list (data of the layout before run lists) and never runs them', async () => {
    const fake = new FakeSandboxes();
    const rt = await createRuntime(testConfig(prefix), { sandboxes: fake, poolOptions: { reconcileMs: 200, lostAfterMs: 300 } });
    runtimes.push(rt);
    const { sid, turn } = await orphans(rt);
    await rt.redis.del(rt.keys.runList(sid));
    const t0 = Date.now();
    const [a, b] = await rt.pipeline.drainTurn(sid, turn);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(a).toMatchObject({ status: 'failed', error_code: 'lost_before_queue' });
    expect(b).toMatchObject({ status: 'skipped' });
    expect(fake.log).toEqual([]);
    expect(await rt.pipeline.records.openCount(sid)).toBe(0);
  });
});
