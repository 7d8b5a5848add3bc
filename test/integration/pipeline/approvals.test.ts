import Docker from 'dockerode';
import { beforeAll, describe, expect, it } from 'vitest';
import { suiteService } from '../suite-service.ts';
import { principalId } from '../../../services/api/middleware/auth.ts';
import { containerName, frozenNow } from '../../../services/sandbox/index.ts';
import { client } from './helpers.ts';

// Approvals of POLICY.md §5 through the REST API, real Redis and Docker.
// The policy of helpers.ts: bash `rm` prompts, `curl` is forbidden, bash otherwise allowed.
const svc = suiteService('appr', {
  THINKFLOW_API_KEYS: 'k-sub:submitter,k-op:operator,k-admin:admin', THINKFLOW_APPROVAL_TTL_S: '4',
});
let sub: ReturnType<typeof client>;
let op: ReturnType<typeof client>;

type Result = { id: string; status: string; error?: string; stdout?: string };
type Pending = {
  token: string; session_id: string; command_id: string; tool: string; target: string; matched_rules: { id: string }[]; justification: string;
  created_at: string; expires_at: string; job_id: null; grant_options: { scope: string; covers: string | null; unavailable?: string }[];
};

beforeAll(() => {
  sub = client(svc.url!, 'k-sub');
  op = client(svc.url!, 'k-op');
});

async function session(approval: 'never' | 'on-request' = 'on-request'): Promise<string> {
  const res = await sub.json('/v1/sessions', { approval });
  return ((await res.json()) as { session_id: string }).session_id;
}

/** Starts a turn without waiting for it (it blocks until approvals are answered). */
function turn(sid: string, body: string): Promise<{ results: Result[] }> {
  return sub.text(`/v1/sessions/${sid}/commands`, body).then((r) => r.json() as Promise<{ results: Result[] }>);
}

// Generous: the first command of a session also creates its container, which a loaded CI machine makes slow.
async function pendingFor(sid: string, timeoutMs = 30_000): Promise<Pending> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const list = ((await (await op.get('/v1/approvals?status=pending')).json()) as { approvals: Pending[] }).approvals;
    const hit = list.find((a) => a.session_id === sid);
    if (hit) return hit;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no pending approval for ${sid}`);
}

const answer = (token: string, decision: string, reason?: string, scope?: string) =>
  op.json(`/v1/approvals/${token}`, { decision, ...(reason ? { reason } : {}), ...(scope ? { scope } : {}) });

describe('approvals (real Redis and Docker)', () => {
  it('approve: the queue waits at the command, later commands stay queued in order, then all run', async () => {
    const sid = await session();
    const running = turn(sid, '<tf-write id="1" path="x">x</tf-write>\n<tf-bash id="2" cmd="rm -f x" />\n<tf-bash id="3" cmd="ls" />');
    const p = await pendingFor(sid);
    expect(p).toMatchObject({ command_id: '2', tool: 'bash', target: 'rm -f x', job_id: null, matched_rules: [{ id: 'rm-asks' }] });
    expect(p.justification).toContain('deleting needs a human');
    expect(Date.parse(p.expires_at) - Date.parse(p.created_at)).toBe(4000);
    expect(p.token).toMatch(/^[A-Za-z0-9_-]{43}$/); // 256 bits, base64url
    const ledger = ((await (await sub.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: { status: string }[] }).entries;
    expect(ledger.map((e) => e.status)).toEqual(['succeeded', 'awaiting_approval', 'queued']);
    expect((await answer(p.token, 'approve')).status).toBe(200);
    const { results } = await running;
    expect(results.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(results[2]!.stdout).toBe('');
    const rec = ((await (await sub.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: { approval: unknown }[] }).entries[1]!;
    expect(rec.approval).toMatchObject({ token: p.token, decision: 'approve', decided_by: principalId('k-op') });
    // Answering twice changes nothing: 409.
    const again = await answer(p.token, 'reject');
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe('approval_closed');
    expect((await answer('A'.repeat(43), 'approve')).status).toBe(404);
  });

  it('the sandbox is paused while its command waits for an operator, and unpaused to run it once approved', async () => {
    const sid = await session();
    const running = turn(sid, '<tf-write id="1" path="p.txt">kept</tf-write>\n<tf-bash id="2" cmd="cat p.txt; rm -f p.txt" />');
    const p = await pendingFor(sid);
    const box = new Docker().getContainer(containerName(svc.boxes, sid));
    const until = Date.now() + 3_000;
    while (!(await frozenNow(await box.inspect()))) {
      if (Date.now() > until) throw new Error('the sandbox was not paused during the approval wait');
      await new Promise((r) => setTimeout(r, 25));
    }
    expect((await answer(p.token, 'approve')).status).toBe(200);
    const { results } = await running;
    expect(results.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    expect(results[1]!.stdout).toBe('kept');
    expect((await box.inspect()).State).toMatchObject({ Running: true, Paused: false });
    expect(await frozenNow(await box.inspect())).toBe(false);
  });

  it('approve_for_session grants the exact command; the rule prefix only when the operator picks scope prefix', async () => {
    const sid = await session();
    const first = turn(sid, '<tf-bash id="1" cmd="rm -f a" />');
    const p = await pendingFor(sid);
    expect(p.grant_options).toEqual([
      { scope: 'exact', covers: 'exactly `rm -f a`' },
      { scope: 'prefix', covers: 'any bash command starting with `rm`' },
    ]);
    expect((await answer(p.token, 'approve_for_session')).status).toBe(200);
    expect((await first).results[0]!.status).toBe('succeeded');
    expect((await turn(sid, '<tf-bash id="1" cmd="rm -f a" />')).results[0]!.status).toBe('succeeded'); // the same argv
    // A different rm asks again; this time the operator grants the prefix.
    const wider = turn(sid, '<tf-bash id="1" cmd="rm -rf b" />');
    const q = await pendingFor(sid);
    expect((await answer(q.token, 'approve_for_session', undefined, 'prefix')).status).toBe(200);
    expect((await wider).results[0]!.status).toBe('succeeded');
    const third = await turn(sid, '<tf-bash id="1" cmd="rm -f c d" />');
    expect(third.results[0]!.status).toBe('succeeded');
    const ledger = ((await (await sub.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: { approval: unknown; status: string }[] }).entries;
    expect(ledger.map((e) => e.approval === null)).toEqual([false, true, false, true]);
    // Another session does not inherit the grant.
    const other = await session();
    const asks = turn(other, '<tf-bash id="1" cmd="rm -f c" />');
    const r = await pendingFor(other);
    await answer(r.token, 'reject');
    expect((await asks).results[0]!.status).toBe('rejected');
  });

  it('issue 10: a grant of `bash build.sh` does not let `bash -c "git push --force"` run, nor `git push origin main` cover `git push --force --mirror`', async () => {
    const policy = { version: 1, rules: [
      { id: 'shells-ask', tool: 'bash', command: [['bash', 'sh']], decision: 'prompt' },
      { id: 'push-asks', tool: 'bash', command: ['git', 'push'], decision: 'prompt' },
    ] };
    const res = await sub.json('/v1/sessions', { approval: 'on-request', policy });
    expect(res.status).toBe(201);
    const sid = ((await res.json()) as { session_id: string }).session_id;
    const build = turn(sid, '<tf-write id="1" path="build.sh">echo built</tf-write>\n<tf-bash id="2" cmd="bash build.sh" />');
    const p = await pendingFor(sid);
    expect(p.grant_options).toEqual([
      { scope: 'exact', covers: 'exactly `bash build.sh`' },
      { scope: 'prefix', covers: null, unavailable: expect.stringMatching(/`bash` names a shell, interpreter or wrapper/) },
    ]);
    // The wider grant is never given for a shell: a clear 400, and nothing changes.
    const refused = await answer(p.token, 'approve_for_session', undefined, 'prefix');
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('grant_scope_unavailable');
    expect((await answer(p.token, 'approve_for_session')).status).toBe(200);
    expect((await build).results.map((r) => [r.status, r.stdout])).toEqual([['succeeded', undefined], ['succeeded', 'built\n']]);

    const push = turn(sid, '<tf-bash id="1" cmd="bash -c &quot;git push --force&quot;" />');
    const q = await pendingFor(sid);
    expect(q.target).toBe('bash -c "git push --force"');
    await answer(q.token, 'reject', 'no');
    expect((await push).results[0]!.status).toBe('rejected');

    const main = turn(sid, '<tf-bash id="1" cmd="git push origin main" />');
    await answer((await pendingFor(sid)).token, 'approve_for_session');
    expect((await main).results[0]!.status).not.toBe('rejected'); // ran (no remote in the sandbox: git fails)
    const mirror = turn(sid, '<tf-bash id="1" cmd="git push --force --mirror" />');
    const m = await pendingFor(sid);
    expect(m.target).toBe('git push --force --mirror');
    await answer(m.token, 'reject');
    expect((await mirror).results[0]!.status).toBe('rejected');
  });

  it('issue 10: a submitter policy can only tighten (400 policy_loosens naming the rule); an admin may send any', async () => {
    const allow = await sub.json('/v1/sessions', { policy: { rules: [{ id: 'curl-ok', tool: 'bash', command: ['curl'], decision: 'allow' }] } });
    expect(allow.status).toBe(400);
    const body = (await allow.json()) as { error: { code: string; message: string; details: { id: string } } };
    expect(body.error.code).toBe('policy_loosens');
    expect(body.error.message).toMatch(/rules\[0\] \(curl-ok\): an allow rule would loosen/);
    expect(body.error.details).toMatchObject({ id: 'curl-ok', index: 0 });
    const looser = await sub.json('/v1/sessions', { policy: { defaults: { bash: 'allow', complex_command: 'allow' } } });
    expect(looser.status).toBe(400);
    expect(((await looser.json()) as { error: { message: string } }).error.message).toMatch(/defaults\.complex_command: allow is looser than prompt \(built-in\)/);
    // Tightening is fine; an admin may loosen.
    expect((await sub.json('/v1/sessions', { policy: { defaults: { bash: 'prompt' }, rules: [{ id: 'no-make', command: ['make'], decision: 'forbid' }] } })).status).toBe(201);
    expect((await client(svc.url!, 'k-admin').json('/v1/sessions', { policy: { rules: [{ id: 'curl-ok', command: ['curl'], decision: 'allow' }] } })).status).toBe(201);
  });

  it('reject fails the command with the reason and skips the rest of the turn', async () => {
    const sid = await session();
    const running = turn(sid, '<tf-bash id="1" cmd="rm -f x" />\n<tf-touch id="2" path="after" />');
    const p = await pendingFor(sid);
    expect((await answer(p.token, 'reject', 'not on a Friday')).status).toBe(200);
    const { results } = await running;
    expect(results).toMatchObject([{ status: 'rejected', error: 'not on a Friday' }, { status: 'skipped' }]);
    expect((await sub.get(`/v1/sessions/${sid}/files/after`)).status).toBe(404);
  });

  it('deleting the session withdraws its pending approval: a later approve is 409 and nothing runs', async () => {
    const sid = await session();
    const running = turn(sid, '<tf-bash id="1" cmd="rm -f x" />\n<tf-touch id="2" path="after" />');
    const p = await pendingFor(sid);
    expect((await sub.del(`/v1/sessions/${sid}`)).status).toBe(204);
    const { results } = await running;
    expect(results).toMatchObject([{ status: 'rejected', error: 'withdrawn: the session was deleted' }, { status: 'skipped' }]);
    expect((await answer(p.token, 'approve')).status).toBe(409);
    const list = ((await (await op.get('/v1/approvals')).json()) as { approvals: Pending[] }).approvals;
    expect(list.find((a) => a.token === p.token)).toBeUndefined();
  });

  it('no answer before expires_at = reject with "approval timed out"; a late answer is 409', async () => {
    const sid = await session();
    const t0 = Date.now();
    const running = turn(sid, '<tf-bash id="1" cmd="rm -f x" />');
    const p = await pendingFor(sid);
    const { results } = await running;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3500);
    expect(results[0]).toMatchObject({ status: 'rejected', error: 'approval timed out' });
    const late = await answer(p.token, 'approve');
    expect(late.status).toBe(409);
    const rec = ((await (await sub.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: { approval: unknown }[] }).entries[0]!;
    expect(rec.approval).toMatchObject({ token: p.token, decision: 'expired', decided_by: 'system' });
    const list = ((await (await op.get('/v1/approvals')).json()) as { approvals: Pending[] }).approvals;
    expect(list.find((a) => a.token === p.token)).toBeUndefined();
  });

  it('never mode refuses a prompt at once with the exact reason, and creates no approval', async () => {
    const sid = await session('never');
    const t0 = Date.now();
    const { results } = await turn(sid, '<tf-bash id="1" cmd="rm -f x" />\n<tf-bash id="2" cmd="curl http://example.com" />');
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(results).toMatchObject([
      { status: 'forbidden', error: 'approval required by policy, but approval mode is never' },
      { status: 'skipped' },
    ]);
    const list = ((await (await op.get('/v1/approvals')).json()) as { approvals: Pending[] }).approvals;
    expect(list.filter((a) => a.session_id === sid)).toEqual([]);
  });
});
