// `GET /v1/approvals?status=pending|decided|expired|all` (API.md additions
// 2026-12-01, issue 24 "History and outcomes"): answered and expired
// approvals with who decided, when and why, and the command's outcome once it
// ran; every filter, the limit and bad values. Real Redis and Docker; the job
// is driven by the replay model. The test policy (helpers.ts): bash `rm` prompts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../jobs/harness.ts';
import { client, policyDir } from '../pipeline/helpers.ts';

const ALICE = 'op-alice-hist-01';
const BOB = 'op-bob-hist-0002';
const SUB = 'sub-hist-key-003';
const KEYS = `${ALICE}:operator:alice,${BOB}:operator:bob,${SUB}:submitter:sam`;
const TTL_S = 8;

type Outcome = { status: string; exit_code?: number; error?: string };
type Listed = {
  token: string; session_id: string; job_id: string | null; command_id: string; tool: string; target: string; status: string;
  created_at: string; decision?: string; decided_by?: string; decided_at?: string; reason?: string; outcome?: Outcome;
};

let h: Harness;
let sub: ReturnType<typeof client>;
const ops = () => ({ alice: client(h.url, ALICE), bob: client(h.url, BOB) });

beforeAll(async () => {
  h = await startHarness('apphist', [{
    name: 'history', match: 'history check', flow: 'thinkflow',
    turns: [{ reasoning: 'Old logs go first.\n<tf-bash id="1" cmd="rm -f old.log" />\n', text: '' }, { reasoning: '', text: 'Cleaned up.' }],
  }], { THINKFLOW_API_KEYS: KEYS, THINKFLOW_POLICY_DIR: policyDir(), THINKFLOW_APPROVAL_TTL_S: String(TTL_S) }, SUB);
  sub = client(h.url, SUB);
}, 120_000);
afterAll(async () => { await h?.close(); }, 60_000);

async function list(query: string, key = ALICE): Promise<Listed[]> {
  const res = await client(h.url, key).get(`/v1/approvals?${query}`);
  if (res.status !== 200) throw new Error(`GET /v1/approvals?${query}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { approvals: Listed[] }).approvals;
}

async function session(): Promise<string> {
  const res = await sub.json('/v1/sessions', { approval: 'on-request' });
  expect(res.status).toBe(201);
  return ((await res.json()) as { session_id: string }).session_id;
}

/** Starts a one-command turn without waiting for it (it waits for the approval). */
function turn(sid: string, cmd: string): Promise<{ results: { status: string }[] }> {
  return sub.text(`/v1/sessions/${sid}/commands`, `<tf-bash id="1" cmd="${cmd}" />`).then((r) => r.json() as Promise<{ results: { status: string }[] }>);
}

async function pendingOf(query: string): Promise<Listed> {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    const [hit] = await list(`status=pending&${query}`);
    if (hit) return hit;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no pending approval for ${query}`);
}

async function answer(key: string, token: string, decision: string, reason?: string): Promise<void> {
  const res = await client(h.url, key).json(`/v1/approvals/${token}`, { decision, ...(reason ? { reason } : {}) });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** Asks `cmd` in a new session and answers it as `key` says; resolves when the turn is over. */
async function decided(cmd: string, key: string, decision: string, reason?: string): Promise<{ sid: string; pending: Listed }> {
  const sid = await session();
  const running = turn(sid, cmd);
  const pending = await pendingOf(`session_id=${sid}`);
  await answer(key, pending.token, decision, reason);
  await running;
  return { sid, pending };
}

const s: Record<string, { sid: string; pending: Listed }> = {};

describe('GET /v1/approvals: history and outcomes', () => {
  it('an approved command carries its outcome once it ran: succeeded with exit 0, failed with its exit code and error', async () => {
    s.ok = await decided('rm -f a.txt', ALICE, 'approve');
    const [ok] = await list(`status=decided&session_id=${s.ok.sid}`);
    expect(ok).toMatchObject({
      token: s.ok.pending.token, status: 'approve', decision: 'approve', decided_by: 'alice', command_id: '1', tool: 'bash', target: 'rm -f a.txt',
      outcome: { status: 'succeeded', exit_code: 0 },
    });
    expect(Date.parse(ok!.decided_at!)).toBeGreaterThanOrEqual(Date.parse(ok!.created_at));
    expect(ok!.reason).toBeUndefined();
    expect(ok!.outcome!.error).toBeUndefined();

    s.failed = await decided('rm nosuch.txt', BOB, 'approve');
    const failed = await list(`status=decided&session_id=${s.failed.sid}`);
    expect(failed).toEqual([expect.objectContaining({ decided_by: 'bob', outcome: { status: 'failed', exit_code: 1, error: expect.stringMatching(/exit code 1/) } })]);
  }, 90_000);

  it('no outcome while the approved command runs; it appears when the command is final', async () => {
    const sid = await session();
    const running = turn(sid, 'rm -f c.txt && sleep 3');
    const p = await pendingOf(`session_id=${sid}`);
    await answer(ALICE, p.token, 'approve');
    const [during] = await list(`status=decided&session_id=${sid}`);
    expect(during).toMatchObject({ token: p.token, decision: 'approve', decided_by: 'alice' });
    expect(during!.outcome).toBeUndefined();
    const entries = ((await (await sub.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: { status: string }[] }).entries;
    expect(['queued', 'running']).toContain(entries[0]!.status);
    expect((await running).results[0]!.status).toBe('succeeded');
    expect((await list(`status=decided&session_id=${sid}`))[0]!.outcome).toEqual({ status: 'succeeded', exit_code: 0 });
    s.slow = { sid, pending: p };
  }, 60_000);

  it('a rejection carries its reason and no outcome; an expired approval is listed under expired, not decided', async () => {
    s.rejected = await decided('rm -f d.txt', BOB, 'reject', 'not now');
    const [rej] = await list(`status=decided&session_id=${s.rejected.sid}`);
    expect(rej).toMatchObject({ status: 'reject', decision: 'reject', decided_by: 'bob', reason: 'not now' });
    expect(rej!.outcome).toBeUndefined();

    const sid = await session();
    const waited = await turn(sid, 'rm -f e.txt'); // nobody answers: it returns once the approval expired
    expect(waited.results[0]!.status).toBe('rejected');
    const expired = await list(`status=expired&session_id=${sid}`);
    expect(expired).toEqual([expect.objectContaining({ status: 'expired', decision: 'expired', decided_by: 'system', reason: 'approval timed out' })]);
    expect(expired[0]!.outcome).toBeUndefined();
    expect(await list(`status=decided&session_id=${sid}`)).toEqual([]);
    expect(await list(`status=pending&session_id=${sid}`)).toEqual([]);
    s.expired = { sid, pending: expired[0]! };
  }, 60_000);

  it('pending stays oldest first and carries status pending; all lists pending and answered ones newest first', async () => {
    const sid = await session();
    const running = turn(sid, 'rm -f f.txt');
    const p = await pendingOf(`session_id=${sid}`);
    expect(p).toMatchObject({ status: 'pending', session_id: sid });
    expect(p.decided_by).toBeUndefined();
    const all = await list('status=all');
    expect(all[0]).toMatchObject({ token: p.token, status: 'pending' });
    expect(all.map((a) => a.token)).toEqual(expect.arrayContaining(Object.values(s).map((x) => x.pending.token)));
    expect(all.map((a) => a.created_at)).toEqual([...all.map((a) => a.created_at)].sort().reverse());
    expect((await list('status=decided')).map((a) => a.token)).not.toContain(p.token);
    await answer(ALICE, p.token, 'reject', 'done here');
    await running;
    expect(await list(`status=pending&session_id=${sid}`)).toEqual([]);
  }, 60_000);

  it('filters: job_id, session_id, decided_by, since; limit keeps the newest', async () => {
    const job = await h.submit({ task: 'history check: clean the old logs', approval: 'on-request' });
    const p = await pendingOf(`job_id=${job.job_id}`);
    await answer(ALICE, p.token, 'approve');
    await h.waitFinal(job.job_id);
    expect(await list(`status=decided&job_id=${job.job_id}`)).toEqual([expect.objectContaining({
      token: p.token, job_id: job.job_id, session_id: job.session_id, decided_by: 'alice', target: 'rm -f old.log', outcome: { status: 'succeeded', exit_code: 0 },
    })]);
    expect((await list(`status=all&session_id=${s.ok!.sid}`)).map((a) => a.token)).toEqual([s.ok!.pending.token]);

    const decided = await list('status=decided');
    expect(decided.map((a) => a.created_at)).toEqual([...decided.map((a) => a.created_at)].sort().reverse());
    const byBob = await list('status=decided&decided_by=bob');
    expect(byBob.map((a) => a.token)).toEqual([s.rejected!.pending.token, s.failed!.pending.token]);
    expect(await list('status=decided&decided_by=nobody')).toEqual([]);
    expect(await list(`status=decided&decided_by=bob&job_id=${job.job_id}`)).toEqual([]);

    const since = s.slow!.pending.created_at;
    const recent = await list(`status=decided&since=${encodeURIComponent(since)}`);
    expect(recent.length).toBeGreaterThanOrEqual(3);
    for (const a of recent) expect(Date.parse(a.created_at)).toBeGreaterThanOrEqual(Date.parse(since));
    expect(recent.map((a) => a.token)).not.toContain(s.ok!.pending.token);
    expect(recent.map((a) => a.token)).toContain(s.slow!.pending.token);

    expect((await list('status=decided&limit=1')).map((a) => a.token)).toEqual([decided[0]!.token]);
    expect((await list('status=decided&limit=2')).map((a) => a.token)).toEqual(decided.slice(0, 2).map((a) => a.token));
    expect((await list('status=all&limit=1000')).length).toBe(7);
  }, 90_000);

  it('bad values are a 400 naming the field; a submitter is refused', async () => {
    const bad = async (query: string) => {
      const res = await ops().alice.get(`/v1/approvals?${query}`);
      return [res.status, ((await res.json()) as { error: { code: string; message: string; details: unknown } }).error];
    };
    expect(await bad('status=done')).toEqual([400, expect.objectContaining({ code: 'invalid_query', details: [expect.objectContaining({ path: 'status' })] })]);
    expect(await bad('status=decided&since=last-week')).toEqual([400, expect.objectContaining({ code: 'invalid_query', details: [expect.objectContaining({ path: 'since' })] })]);
    expect(await bad('decided_by=')).toEqual([400, expect.objectContaining({ code: 'invalid_query', details: [expect.objectContaining({ path: 'decided_by' })] })]);
    expect(await bad('status=all&operator=alice')).toEqual([400, expect.objectContaining({ code: 'invalid_query', details: [{ path: '(root)', message: 'Unrecognized key: "operator"' }] })]);
    for (const limit of ['0', '1001', 'abc', '2.5']) {
      expect(await bad(`status=decided&limit=${limit}`)).toEqual([400, { code: 'invalid_query', message: `limit must be a whole number from 1 to 1000, got '${limit}'`, details: null }]);
    }
    expect((await sub.get('/v1/approvals?status=decided')).status).toBe(403);
  });

  it('a deleted session\'s approvals leave the history', async () => {
    expect((await sub.del(`/v1/sessions/${s.ok!.sid}`)).status).toBe(204);
    expect(await list(`status=all&session_id=${s.ok!.sid}`)).toEqual([]);
    expect((await list('status=decided')).map((a) => a.token)).not.toContain(s.ok!.pending.token);
  });
});
