// Network egress end to end (issue 21 acceptance): a service with the real
// worker, proxy, relay and Docker; commands in the sandbox reach test
// upstreams on the host's loopback (127.0.0.2, named by a global rule; no
// packet leaves the machine) through the session's egress proxy, as the
// policy says. A refused connection's 403 names the rule in the command's
// own output; every decision is a network record in the ledger.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../pipeline/helpers.ts';
import { networkPolicyDir } from './policy-dir.ts';
import { PACKUMENT_NAME, startUpstream, type Upstream } from '../sandbox/egress-fixtures.ts';
import { suiteService } from '../suite-service.ts';

const UP = '127.0.0.2';
const ASK = '127.0.0.3';

function policies(): string {
  return networkPolicyDir([
    `{ id: loopback-upstreams, tool: network, cidr: ["${UP}/32", "${ASK}/32"], decision: allow, justification: the test servers on the host's loopback }`,
    `{ id: test-upstream, tool: network, host: ["${UP}"], decision: allow, justification: the test upstream on loopback }`,
    `{ id: ask-upstream, tool: network, host: ["${ASK}"], decision: prompt, justification: a person decides }`,
    '{ id: no-evil, tool: network, host: [evil.test], decision: forbid, justification: known bad host }',
  ]);
}

const svc = suiteService('egress-e2e', {
  THINKFLOW_POLICY_DIR: policies(), THINKFLOW_API_KEYS: 'k-sub:submitter,k-op:operator', THINKFLOW_EGRESS_PROMPT_WAIT_S: '3',
});
let up: Upstream;
let ask: Upstream;
let sub: ReturnType<typeof client>;
let op: ReturnType<typeof client>;
beforeAll(async () => {
  up = await startUpstream(UP);
  ask = await startUpstream(ASK);
  sub = client(svc.url!, 'k-sub');
  op = client(svc.url!, 'k-op');
});
afterAll(async () => {
  await up?.close();
  await ask?.close();
});

async function session(approval: 'never' | 'on-request' = 'on-request'): Promise<string> {
  return ((await (await sub.json('/v1/sessions', { approval })).json()) as { session_id: string }).session_id;
}
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
async function bash(sid: string, cmd: string): Promise<{ status: string; stdout: string; stderr: string; exit_code: number | null }> {
  const res = await sub.text(`/v1/sessions/${sid}/commands`, `<tf-bash id="1" cmd="${esc(cmd)}" timeout="60" />`);
  return ((await res.json()) as { results: any[] }).results[0];
}
const ledger = async (sid: string) => ((await (await sub.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: any[] }).entries;
const py = (url: string) => `python3 -c "import urllib.request,sys
try: print(urllib.request.urlopen('${url}', timeout=20).read().decode())
except Exception as e: print('ERR', e, getattr(e, 'read', lambda: b'')().decode()); sys.exit(3)"`;

describe('network egress through the session proxy', () => {
  it('an allowed host answers python urllib, git clone over HTTP and npm install from a registry stand-in; each is a network record with bytes', async () => {
    const sid = await session();
    const hello = await bash(sid, py(`http://${UP}:${up.port}/hello`));
    expect(hello.stdout.trim()).toBe('hello from upstream');
    const clone = await bash(sid, `git clone -q http://${UP}:${up.port}/repo.git cloned && cat cloned/README`);
    expect(clone.stdout).toContain('cloned through the egress relay');
    const install = await bash(sid, `npm install --no-audit --no-fund --registry http://${UP}:${up.port}/ ${PACKUMENT_NAME} >/dev/null && node -p "require('${PACKUMENT_NAME}')"`);
    expect(install.stdout.trim()).toBe('installed through the egress proxy');
    const net = (await ledger(sid)).filter((e) => e.tool === 'network');
    expect(net.length).toBeGreaterThanOrEqual(3);
    for (const r of net) expect(r).toMatchObject({ target: `${UP}:${up.port}`, decision: 'allow', status: 'succeeded' });
    expect(net.every((r) => r.bytes_in > 0 && r.bytes_out > 0 && r.command_id !== null)).toBe(true);
  }, 120_000);

  it('a forbidden host is refused: the 403 names the rule in the command output, and its record is forbidden', async () => {
    const sid = await session();
    const r = await bash(sid, py('http://evil.test/x'));
    expect(r.stdout).toMatch(/ERR .*403[\s\S]*no-evil/);
    const npm = await bash(sid, `npm install --no-audit --no-fund --registry http://127.0.0.9:${up.port}/ ${PACKUMENT_NAME} 2>&1; ls node_modules 2>&1; true`);
    expect(npm.stdout).toMatch(/403 Forbidden/);
    expect(npm.stdout).toMatch(/No such file or directory/); // nothing was installed
    const rows = (await ledger(sid)).filter((e) => e.tool === 'network');
    expect(rows[0]).toMatchObject({ target: 'evil.test:80', status: 'forbidden', matched_rule: 'no-evil', bytes_in: 0 });
    expect(rows.at(-1)).toMatchObject({ host: '127.0.0.9', status: 'forbidden', matched_rule: null });
  }, 60_000);

  it('a prompted host waits for an operator, then answers; unanswered it is refused after the wait; never mode refuses at once', async () => {
    const sid = await session();
    const waiting = bash(sid, py(`http://${ASK}:${ask.port}/hello`));
    let pending: any;
    for (let i = 0; i < 100 && !pending; i++) {
      pending = ((await (await op.get('/v1/approvals?status=pending')).json()) as { approvals: any[] }).approvals.find((a) => a.session_id === sid);
      if (!pending) await new Promise((r) => setTimeout(r, 100));
    }
    expect(pending).toMatchObject({ tool: 'network', target: `${ASK}:${ask.port}` });
    await op.json(`/v1/approvals/${pending.token}`, { decision: 'approve' });
    expect((await waiting).stdout.trim()).toBe('hello from upstream');
    const unanswered = await bash(sid, py(`http://${ASK}:${ask.port}/hello`));
    expect(unanswered.stdout).toMatch(/ERR .*403[\s\S]*no operator answered within 3 s/);
    const never = await session('never');
    const t0 = Date.now();
    const refused = await bash(never, py(`http://${ASK}:${ask.port}/hello`));
    expect(refused.stdout).toMatch(/approval mode "never"/);
    expect(Date.now() - t0).toBeLessThan(10_000);
  }, 60_000);

  it('a session with no network rule for a host reaches nothing: a raw socket has no route, the proxy refuses by default', async () => {
    const sid = await session();
    const raw = await bash(sid, `env -u HTTP_PROXY -u http_proxy python3 -c "import socket; socket.create_connection(('${UP}', ${up.port}), timeout=3)" 2>&1; true`);
    expect(raw.stdout).toMatch(/Connection refused|unreachable/i); // the container's own loopback: not the host's
    const byDefault = await bash(sid, py(`http://127.0.0.7:${up.port}/hello`));
    expect(byDefault.stdout).toMatch(/403[\s\S]*no rule matched/);
  }, 60_000);
});
