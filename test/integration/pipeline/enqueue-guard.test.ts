// An enqueue reads nothing before it records the command: it decides under the
// session as this process last read it, and createRecord checks in the same
// write that the session is not deleted and that the job running on it is
// still the one decided under (pipeline.ts, createRecord-13.lua). Two
// processes on one Redis: what one changes, the other's next enqueue obeys.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { FilePolicyGate, type PolicyGate } from '../../../services/pipeline/index.ts';
import { runCommandsTurn } from '../../../services/pipeline/api-turn.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, policyDir, testConfig, testPrefix } from './helpers.ts';

const prefix = testPrefix('enqueue-guard');
const fake = new FakeSandboxes();
let a: Runtime;
let b: Runtime;
let c: Runtime;
/** c's policy gate calls it on every decision (a job that changes between each decision and its write) */
let onDecide: (() => void) | null = null;

beforeAll(async () => {
  a = await createRuntime(testConfig(prefix), { sandboxes: fake });
  b = await createRuntime(testConfig(prefix), { sandboxes: fake, worker: false });
  const real = await FilePolicyGate.load(policyDir());
  const gate = new Proxy(real, {
    get(target, prop) {
      if (prop === 'evaluate') return (...args: Parameters<PolicyGate['evaluate']>) => { onDecide?.(); return target.evaluate(...args); };
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  c = await createRuntime(testConfig(prefix), { sandboxes: fake, worker: false, gate });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await c?.close();
  await cleanupPrefix(prefix);
});

/** The worker asks for the approval once it takes the command: waited for, at most 5 s. */
async function pendingFor(sid: string) {
  for (let i = 0; i < 100; i++) {
    const found = (await a.pipeline.approvals.listPending()).find((p) => p.session_id === sid);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 50));
  }
  return undefined;
}

const job = (approval: 'never' | 'on-request') => ({ job_id: `job_${approval}`, project: null, approval, policy: null });

describe('an enqueue that reads nothing first', () => {
  it("decides under the job another process started on the session since (never: the prompt is refused), and writes nothing under the old one", async () => {
    const sid = (await a.pipeline.createSession({ owner: null, approval: 'on-request' })).session_id;
    const first = await runCommandsTurn(a.pipeline, sid, '<tf-bash id="1" cmd="echo before" />');
    expect(first.results.map((r) => r.status)).toEqual(['succeeded']); // `a` has the session cached, with no job
    await b.pipeline.claims.claimJob(sid, job('never'));
    // The turn is b's: `a` reads nothing of the session before its enqueue.
    const forbidden = await a.pipeline.enqueue(sid, await b.pipeline.nextTurn(sid), { id: '1', tool: 'bash', cmd: 'rm -rf x', need_result: false }, 'api');
    expect(forbidden.status).toBe('forbidden');
    expect((await a.pipeline.awaitResult(forbidden)).error).toContain('never');
    const ledger = await a.pipeline.entries(sid);
    expect(ledger.map((r) => [r.turn, r.status])).toEqual([[1, 'succeeded'], [2, 'forbidden']]);
    // The job ends (in the other process): the prompt asks again, decided without the job.
    await b.pipeline.claims.releaseJob(sid, 'job_never');
    const h = await a.pipeline.enqueue(sid, await b.pipeline.nextTurn(sid), { id: '1', tool: 'bash', cmd: 'rm -rf y', need_result: false }, 'api');
    expect(h.status).toBe('queued');
    const asked = await pendingFor(sid);
    expect(asked).toBeTruthy();
    await a.pipeline.approvals.answer(asked!.token, 'reject', 'test', 'tester');
    expect((await a.pipeline.awaitResult(h)).status).toBe('rejected');
  });

  it('refuses a session another process deleted, and records nothing for it', async () => {
    const sid = (await a.pipeline.createSession({ owner: null })).session_id;
    await runCommandsTurn(a.pipeline, sid, '<tf-bash id="1" cmd="echo cached" />');
    const before = (await a.pipeline.entries(sid)).length;
    await b.pipeline.deleteSession(sid);
    await expect(a.pipeline.enqueue(sid, 9, { id: '1', tool: 'bash', cmd: 'echo after', need_result: false }, 'api'))
      .rejects.toMatchObject({ code: 'session_deleted' });
    expect((await a.pipeline.entries(sid)).length).toBe(before);
    expect(fake.log.filter((l) => l.sid === sid).map((l) => l.id)).toEqual(['1']);
  });

  it('refuses with session_busy, recording nothing, when the job keeps changing between each decision and its write', async () => {
    const sid = (await c.pipeline.createSession({ owner: null, approval: 'on-request' })).session_id;
    const turn = await c.pipeline.nextTurn(sid); // c has it cached now, with no job
    let n = 0;
    // Sent on c's own connection before the write that follows each decision, so Redis has it first.
    onDecide = () => { n++; void c.redis.hset(c.keys.sessionMeta(sid), 'running_job', JSON.stringify(job(n % 2 ? 'never' : 'on-request'))); };
    try {
      await expect(c.pipeline.enqueue(sid, turn, { id: '1', tool: 'bash', cmd: 'echo x', need_result: false }, 'api'))
        .rejects.toMatchObject({ code: 'session_busy' });
    } finally {
      onDecide = null;
    }
    expect(n).toBe(3);
    expect(await c.pipeline.entries(sid)).toEqual([]);
  });
});
