// The egress gate (pipeline/egress/egress-gate.ts) on real Redis, as the
// worker's proxy asks it: the layered network policy, `never` as forbidden,
// an operator's answer over REST for a prompt (and a grant for the session),
// no answer as a refusal after THINKFLOW_EGRESS_PROMPT_WAIT_S, the special
// address check, and every decision as a network record in the ledger.
// Nothing is dialled here: the gate only decides.
import { beforeAll, describe, expect, it } from 'vitest';
import type { EgressGate } from '../../../services/pipeline/index.ts';
import { client } from '../pipeline/helpers.ts';
import { networkPolicyDir } from './policy-dir.ts';
import { suiteService } from '../suite-service.ts';

function policies(): string {
  return networkPolicyDir([
    '{ id: registry, tool: network, host: [registry.test], port: [443], decision: allow, justification: the mirror }',
    '{ id: ask-api, tool: network, host: ["*.api.test"], decision: prompt, justification: internal APIs need a person }',
    '{ id: no-evil, tool: network, host: [evil.test], decision: forbid, justification: known bad }',
    '{ id: local-upstream, tool: network, host: [127.0.0.1], cidr: [127.0.0.0/30], decision: allow, justification: test servers }',
  ]);
}

const svc = suiteService('egress-gate', {
  THINKFLOW_POLICY_DIR: policies(), THINKFLOW_API_KEYS: 'k-sub:submitter,k-op:operator', THINKFLOW_EGRESS_PROMPT_WAIT_S: '2',
});
let sub: ReturnType<typeof client>;
let op: ReturnType<typeof client>;
let gate: EgressGate;
beforeAll(() => {
  sub = client(svc.url!, 'k-sub');
  op = client(svc.url!, 'k-op');
  gate = svc.handle.runtime.egress!;
});

async function session(approval: 'never' | 'on-request' = 'on-request'): Promise<string> {
  return ((await (await sub.json('/v1/sessions', { approval })).json()) as { session_id: string }).session_id;
}
const ledger = async (sid: string) => ((await (await sub.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: any[] }).entries;

async function pending(sid: string): Promise<{ token: string; tool: string; target: string; command_id: string }> {
  for (let i = 0; i < 100; i++) {
    const list = ((await (await op.get('/v1/approvals?status=pending')).json()) as { approvals: any[] }).approvals;
    const hit = list.find((a) => a.session_id === sid);
    if (hit) return hit;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no pending approval');
}

describe('the egress gate', () => {
  it('allows by rule and completes the record with its bytes; forbids by rule and by default, naming the rule', async () => {
    const sid = await session();
    const ok = await gate.decide(sid, { host: 'registry.test', port: 443 });
    expect(ok.allow).toBe(true);
    if (ok.allow) ok.finish({ bytes_in: 5000, bytes_out: 300, duration_ms: 12, address: '203.0.113.9' });
    const evil = await gate.decide(sid, { host: 'evil.test', port: 443 });
    expect(evil).toMatchObject({ allow: false, status: 403 });
    expect(!evil.allow && evil.message).toContain('no-evil');
    const other = await gate.decide(sid, { host: 'registry.test', port: 80 });
    expect(!other.allow && other.message).toMatch(/no rule matched `registry.test:80`.*forbid/);
    await new Promise((r) => setTimeout(r, 100)); // finish() saves in the background
    const net = (await ledger(sid)).filter((e) => e.tool === 'network');
    expect(net.map((e) => [e.id, e.target, e.status, e.matched_rule])).toEqual([
      ['net-1', 'registry.test:443', 'succeeded', 'registry'], ['net-2', 'evil.test:443', 'forbidden', 'no-evil'], ['net-3', 'registry.test:80', 'forbidden', null],
    ]);
    expect(net[0]).toMatchObject({ bytes_in: 5000, bytes_out: 300, address: '203.0.113.9', decision: 'allow' });
    // Timings as a command record's: the allowed one started when dialled; a refused one never started.
    const t0 = net[0]!.timings as Record<string, string>;
    expect(Object.keys(t0)).toEqual(['admitted_at', 'queued_at', 'started_at', 'finished_at']);
    expect([t0.admitted_at, t0.queued_at, t0.started_at, t0.finished_at]).toEqual([t0.admitted_at, t0.queued_at, t0.started_at, t0.finished_at].sort());
    expect(t0.finished_at).toBe(net[0]!.finished_at);
    expect(net[1]!.timings).toEqual({ admitted_at: net[1]!.enqueued_at, queued_at: net[1]!.enqueued_at, finished_at: net[1]!.finished_at });
  });

  it('a prompt in never mode is refused at once, with no approval asked', async () => {
    const sid = await session('never');
    const t0 = Date.now();
    const r = await gate.decide(sid, { host: 'db.api.test', port: 8443 });
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(!r.allow && r.message).toMatch(/approval mode "never"/);
    expect((await ledger(sid)).at(-1)).toMatchObject({ tool: 'network', status: 'forbidden', decision: 'prompt', approval: null });
  });

  it('a prompt waits for an operator: approve_for_session lets it through and grants the host:port for the session', async () => {
    const sid = await session();
    const waiting = gate.decide(sid, { host: 'db.api.test', port: 8443 });
    const a = await pending(sid);
    expect(a).toMatchObject({ tool: 'network', target: 'db.api.test:8443' });
    expect((await op.json(`/v1/approvals/${a.token}`, { decision: 'approve_for_session' })).status).toBe(200);
    expect((await waiting).allow).toBe(true);
    // Granted: the next connection to it is not asked again; another port still is.
    expect((await gate.decide(sid, { host: 'db.api.test', port: 8443 })).allow).toBe(true);
    const again = gate.decide(sid, { host: 'db.api.test', port: 9000 });
    const b = await pending(sid);
    await op.json(`/v1/approvals/${b.token}`, { decision: 'reject', reason: 'not that one' });
    const refused = await again;
    expect(!refused.allow && refused.message).toMatch(/rejected by .*: not that one/);
    const rows = (await ledger(sid)).filter((e) => e.tool === 'network');
    expect(rows.map((e) => [e.status, e.approval?.decision ?? null])).toEqual([['running', 'approve_for_session'], ['running', null], ['rejected', 'reject']]);
  });

  it('no answer within THINKFLOW_EGRESS_PROMPT_WAIT_S refuses the connection', async () => {
    const sid = await session();
    const r = await gate.decide(sid, { host: 'slow.api.test', port: 443 });
    expect(!r.allow && r.message).toMatch(/no operator answered within 2 s/);
  }, 15_000);

  it('checks the dialled address: loopback only where a global rule names it', async () => {
    const sid = await session();
    await gate.decide(sid, { host: 'registry.test', port: 443 });
    expect(gate.checkAddress(sid, '127.0.0.1', 443)).toEqual({ allowed: true });
    const rebound = gate.checkAddress(sid, '169.254.169.254', 443);
    expect(rebound.allowed).toBe(false);
    expect(!rebound.allowed && rebound.message).toMatch(/metadata/);
    expect(gate.checkAddress(sid, '10.0.0.5', 443).allowed).toBe(false);
    expect(gate.checkAddress(sid, '127.0.0.9', 443).allowed).toBe(false);
    expect(gate.checkAddress('ses_unknown', '127.0.0.1', 443).allowed).toBe(false);
  });
});
