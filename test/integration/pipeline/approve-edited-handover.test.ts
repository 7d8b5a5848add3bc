import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { answerEdited, editPortsOf, PipelineError } from '../../../services/pipeline/index.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, testConfig, testPrefix } from './helpers.ts';

// approve_edited writes the edited command into the ledger record with the
// answer (one script): a worker that was not waiting when the answer came
// (its predecessor shut down, or died) runs the edited command, never the
// asked one. The policy of helpers.ts: `rm` prompts, `curl` is forbidden.
const prefix = testPrefix('apedit');
const runtimes: Runtime[] = [];
afterAll(async () => {
  for (const r of runtimes) await r.close();
  await cleanupPrefix(prefix);
});

describe('approve_edited with no worker waiting', () => {
  it('the next worker runs the edited command; a forbidden edit changes nothing', async () => {
    const cfg = testConfig(prefix);
    const fakeA = new FakeSandboxes();
    const fakeB = new FakeSandboxes();
    const a = await createRuntime(cfg, { sandboxes: fakeA });
    runtimes.push(a);
    const sid = (await a.pipeline.createSession({ owner: null, approval: 'on-request' })).session_id;
    const turn = await a.pipeline.nextTurn(sid);
    const h1 = await a.pipeline.enqueue(sid, turn, { id: '1', tool: 'bash', cmd: 'rm -f x', need_result: false }, 'api');
    let pending = await a.pipeline.approvals.listPending();
    for (let i = 0; i < 100 && !pending.length; i++) {
      await new Promise((r) => setTimeout(r, 20));
      pending = await a.pipeline.approvals.listPending();
    }
    expect(pending.map((p) => p.session_id)).toEqual([sid]);
    await a.pool!.close();
    const token = pending[0]!.token;
    const ports = editPortsOf(a.pipeline);

    const refused = await answerEdited(ports, token, { cmd: 'curl -s http://example.com' }, null, 'tester').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PipelineError);
    expect(refused).toMatchObject({ code: 'edit_forbidden', details: { rule: 'no-curl' } });
    expect((refused as Error).message).toContain('no-curl');
    expect((await a.pipeline.approvals.get(token))!.status).toBe('pending');
    expect((await a.pipeline.records.get(sid, h1.index))).toMatchObject({ cmd: 'rm -f x', status: 'awaiting_approval' });

    expect(await answerEdited(ports, token, { cmd: 'echo edited' }, 'safer', 'tester')).toBe('ok');
    // Written with the answer, before any worker saw it.
    const stored = await a.pipeline.records.get(sid, h1.index);
    expect(stored).toMatchObject({ cmd: 'echo edited', status: 'awaiting_approval', edited_from: { tool: 'bash', cmd: 'rm -f x' } });
    expect(JSON.parse((await a.pipeline.records.rawCommand(sid, h1.index))!.toString())).toMatchObject({ id: '1', tool: 'bash', cmd: 'echo edited' });

    const b = await createRuntime(cfg, { sandboxes: fakeB });
    runtimes.push(b);
    const r1 = await b.pipeline.awaitResult(h1);
    expect(r1).toMatchObject({ status: 'succeeded', cmd: 'echo edited', stdout: 'edited\n', edited_from: { cmd: 'rm -f x' } });
    expect(r1.approval).toMatchObject({ token, decision: 'approve_edited', decided_by: 'tester', reason: 'safer' });
    expect(fakeA.log).toEqual([]);
    expect(fakeB.log.map((l) => l.id)).toEqual(['1']);
    // A second answer of any kind is refused.
    expect(await answerEdited(ports, token, { cmd: 'echo again' }, null, 'tester')).toBe('answered');
  });
});
