// `thinkflow approvals`, `approve` and `reject` against a fake API: the table,
// the raw JSON, the decision each command sends, and 409/404/401 answers.
import { afterEach, describe, expect, it } from 'vitest';
import { expiresIn } from '../../../services/cli/commands/approvals.ts';
import { startFakeApi, type FakeApi } from './fake-api.ts';
import { run } from './helpers.ts';

let api: FakeApi | undefined;
afterEach(async () => { await api?.close(); api = undefined; });

const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();
const pending = () => [
  {
    token: 'tok-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', session_id: 'ses_1', job_id: 'job_1', command_id: '2', tool: 'bash',
    target: 'rm -rf build', matched_rules: [{ id: 'rm-anything', layer: 'global', decision: 'prompt', justification: 'deletes' }, { id: 'net', layer: 'project', decision: 'prompt', justification: 'x' }],
    justification: 'deletes', created_at: new Date().toISOString(), expires_at: inMinutes(14.5),
  },
  {
    token: 'tok-b', session_id: 'ses_2', job_id: null, command_id: '7', tool: 'copy', target: 'a.txt -> .env',
    matched_rules: [], justification: null, created_at: new Date().toISOString(), expires_at: inMinutes(-1),
  },
];

const answers = (a: FakeApi) => a.requests.filter((r) => r.method === 'POST').map((r) => ({ path: r.path, body: JSON.parse(r.body) as unknown }));

describe('thinkflow approvals', () => {
  it('lists pending approvals as a table with whole tokens', async () => {
    api = await startFakeApi({ approvals: pending(), key: 'ops' });
    const r = await run(['approvals'], { THINKFLOW_URL: api.url, THINKFLOW_API_KEY: 'ops' });
    expect(r.code, r.stderr).toBe(0);
    expect(api.requests[0]?.path).toBe('/v1/approvals?status=pending');
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^TOKEN +JOB +CMD +TOOL +TARGET +MATCHED RULES +EXPIRES IN$/);
    expect(lines[1]).toMatch(/^tok-a{40} +job_1 +2 +bash +rm -rf build +rm-anything,net +14m [23]\ds$/);
    expect(lines[2]).toMatch(/^tok-b +- +7 +copy +a\.txt -> \.env +- +expired$/);
    // Columns line up: every row has TARGET at the same offset.
    expect(new Set(lines.map((l, i) => l.indexOf(i === 0 ? 'TARGET' : i === 1 ? 'rm -rf' : 'a.txt'))).size).toBe(1);
  });

  it('--json prints the API answer as is', async () => {
    const list = pending();
    api = await startFakeApi({ approvals: list });
    const r = await run(['approvals', '--json'], { THINKFLOW_URL: api.url });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ approvals: list });
  });

  it('says so when nothing is pending', async () => {
    api = await startFakeApi({ approvals: [] });
    const r = await run(['approvals'], { THINKFLOW_URL: api.url });
    expect([r.code, r.stdout]).toEqual([0, 'no pending approvals\n']);
  });

  it('401 and bad arguments', async () => {
    api = await startFakeApi({ key: 'ops' });
    const denied = await run(['approvals'], { THINKFLOW_URL: api.url });
    expect([denied.code, denied.stderr]).toEqual([1, 'thinkflow approvals: unauthorized: unknown API key\n']);
    const bad = await run(['approvals', 'extra'], { THINKFLOW_URL: api.url });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("unexpected argument 'extra'");
    expect(bad.stderr).toContain('usage: thinkflow approvals');
  });

  it('--status decided lists who decided, when and the outcome; a bad --status is a usage error', async () => {
    const decided = [
      { ...pending()[0], status: 'approve', decision: 'approve', decided_by: 'alice', decided_at: '2026-12-01T10:00:00.000Z', outcome: { status: 'failed', exit_code: 1, error: 'exit code 1' } },
      { ...pending()[1], status: 'reject', decision: 'reject', decided_by: 'bob', decided_at: '2026-12-01T09:00:00.000Z', reason: 'no' },
    ];
    api = await startFakeApi({ decided });
    const r = await run(['approvals', '--status', 'decided'], { THINKFLOW_URL: api.url });
    expect(r.code, r.stderr).toBe(0);
    expect(api.requests[0]?.path).toBe('/v1/approvals?status=decided');
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^TOKEN +JOB +CMD +TOOL +TARGET +STATUS +BY +AT +OUTCOME$/);
    expect(lines[1]).toMatch(/^tok-a{40} +job_1 +2 +bash +rm -rf build +approve +alice +2026-12-01T10:00:00\.000Z +failed \(exit 1\): exit code 1$/);
    expect(lines[2]).toMatch(/^tok-b +- +7 +copy +a\.txt -> \.env +reject +bob +2026-12-01T09:00:00\.000Z +-$/);
    const none = await run(['approvals', '--status', 'expired'], { THINKFLOW_URL: api.url });
    expect([none.code, none.stdout]).toEqual([0, 'no expired approvals\n']);
    const bad = await run(['approvals', '--status', 'done'], { THINKFLOW_URL: api.url });
    expect([bad.code, bad.stderr.split('\n')[0]]).toEqual([2, "thinkflow approvals: --status must be one of pending, decided, expired, all, got 'done'"]);
  });

  it('expiresIn formats the time left', () => {
    const now = Date.parse('2026-11-29T22:00:00Z');
    expect(expiresIn('2026-11-29T22:00:42Z', now)).toBe('42s');
    expect(expiresIn('2026-11-29T22:14:05Z', now)).toBe('14m 05s');
    expect(expiresIn('2026-11-29T23:30:00Z', now)).toBe('1h 30m');
    expect(expiresIn('2026-11-29T21:59:59Z', now)).toBe('expired');
    expect(expiresIn('not a date', now)).toBe('?');
  });
});

describe('thinkflow approve / reject', () => {
  it('approve sends decision approve, --session approve_for_session, reject sends its reason', async () => {
    api = await startFakeApi({ tokens: { 't1': 'ok', 't2': 'ok', 't3': 'ok', 't4': 'ok' } });
    const env = { THINKFLOW_URL: api.url };
    const a = await run(['approve', 't1'], env);
    const s = await run(['approve', 't2', '--session'], env);
    const j = await run(['reject', 't3', '--reason', 'not on main'], env);
    const p = await run(['approve', 't4', '--session', '--prefix'], env);
    expect([a.code, s.code, j.code, p.code]).toEqual([0, 0, 0, 0]);
    expect(answers(api)).toEqual([
      { path: '/v1/approvals/t1', body: { decision: 'approve' } },
      { path: '/v1/approvals/t2', body: { decision: 'approve_for_session' } },
      { path: '/v1/approvals/t3', body: { decision: 'reject', reason: 'not on main' } },
      { path: '/v1/approvals/t4', body: { decision: 'approve_for_session', scope: 'prefix' } },
    ]);
    expect(a.stdout).toBe('t1: approved (job job_1, command 3: bash rm -rf build)\n');
    expect(s.stdout).toBe('t2: approved for the rest of the session (job job_1, command 3: bash rm -rf build)\n');
    expect(j.stdout).toBe('t3: rejected (job job_1, command 3: bash rm -rf build)\n');
  });

  it('409: already answered or expired, exit 1', async () => {
    api = await startFakeApi({ tokens: { done: 'closed' } });
    const r = await run(['approve', 'done'], { THINKFLOW_URL: api.url });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('thinkflow approve: done: already answered or expired (reject by key-ops)\n');
  });

  it('404: unknown token, exit 1', async () => {
    api = await startFakeApi({ tokens: {} });
    const r = await run(['reject', 'nope'], { THINKFLOW_URL: api.url });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('thinkflow reject: nope: unknown token\n');
  });

  it.each([
    [['approve'], 'a TOKEN is required', 'usage: thinkflow approve TOKEN'],
    [['approve', 'a', 'b'], "one TOKEN only; unexpected 'b'", 'usage: thinkflow approve TOKEN'],
    [['approve', 't', '--reason', 'x'], "Unknown option '--reason'", 'usage: thinkflow approve TOKEN'],
    [['reject', 't', '--session'], "Unknown option '--session'", 'usage: thinkflow reject TOKEN'],
    [['approve', 't', '--prefix'], '--prefix goes with --session', 'usage: thinkflow approve TOKEN'],
    [['reject', 't', '--reason'], "Option '--reason <value>' argument missing", 'usage: thinkflow reject TOKEN'],
  ])('bad arguments %j: exit 2', async (args, reason, usage) => {
    api = await startFakeApi({ tokens: { t: 'ok' } });
    const r = await run(args, { THINKFLOW_URL: api.url });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(reason);
    expect(r.stderr).toContain(usage);
    expect(api.requests).toEqual([]);
  });
});
