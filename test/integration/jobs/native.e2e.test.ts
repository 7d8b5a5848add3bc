// Native tool calls, usage estimation, model errors, limits and roles.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.ts';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';

const TRANSCRIPTS: TranscriptInput[] = [
  {
    name: 'native', match: 'look around first', delay_ms: 0, flow: 'thinkflow',
    turns: [
      { reasoning: '<tf-write id="1" path="seen.txt">\nhere\n</tf-write>', text: 'Let me look.', tool_calls: [{ id: 'call_ls', name: 'list_files', arguments: {} }, { id: 'call_rd', name: 'read', arguments: { path: 'seen.txt' } }] },
      { reasoning: '', text: 'I saw seen.txt.' },
    ],
  },
  {
    name: 'react-one', match: 'react style', delay_ms: 0, flow: 'react',
    turns: [
      { text: 'Writing.', tool_calls: [{ name: 'write', arguments: { path: 'r.txt', content: 'react\n' } }] },
      { text: 'Done with react.' },
    ],
  },
  {
    name: 'no-usage', match: 'provider without usage', delay_ms: 0, usage: false, reasoning_field: 'reasoning',
    turns: [{ reasoning: '<tf-write id="1" path="u.txt">\nno usage\n</tf-write>', text: 'ok' }],
  },
  {
    name: 'slow', match: 'slow job', delay_ms: 200, chunk: 2,
    turns: [{ reasoning: '<tf-write id="1" path="s.txt">\nslow\n</tf-write>'.repeat(3), text: 'late' }],
  },
  { name: 'yaml-policy', match: 'yaml policy', delay_ms: 0, turns: [{ reasoning: '<tf-bash id="1" cmd="echo hi" />', text: 'ran echo' }] },
];

let h: Harness;
beforeAll(async () => {
  h = await startHarness('native', TRANSCRIPTS, { THINKFLOW_API_KEYS: 'k-alice:submitter,k-bob:submitter,k-op:operator,k-admin:admin' }, 'k-alice');
});
afterAll(async () => { await h?.close(); });

const as = (key: string) => ({ authorization: `Bearer ${key}` });

describe('native tools, usage, errors, limits, roles', () => {
  it('thinkflow offers read/bash/list_files/grep natively; results go back as tool messages, the rest as one user message', async () => {
    const before = h.model.requests;
    const { job_id, session_id } = await h.submit({ task: 'look around first' });
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'succeeded', api_calls: 2 });
    expect(h.model.log[before]!.tools.sort()).toEqual(['bash', 'grep', 'list_files', 'read']);
    const ledger = await h.ledger(session_id);
    expect(ledger.map((e) => [e.id, e.tool, e.flow, e.status])).toEqual([
      ['1', 'write', 'reasoning', 'succeeded'],
      ['call_ls', 'bash', 'native', 'succeeded'],
      ['call_rd', 'read', 'native', 'succeeded'],
    ]);
    const second = h.model.log[before + 1]!.messages;
    const tools = second.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.tool_call_id)).toEqual(['call_ls', 'call_rd']);
    expect(String(tools[0]!.content)).toContain('./seen.txt');
    expect(String(tools[1]!.content)).toContain('here');
    // The tag command was not seen yet: it follows the tool messages as one user message.
    expect(second.at(-1)!.role).toBe('user');
    expect(String(second.at(-1)!.content)).toMatch(/\[THINKFLOW COMMAND LEDGER\][\s\S]*id=1 tool=write/);
    expect(String(second.at(-1)!.content)).not.toContain('call_ls');
  });

  it('react offers all ten tools and asks for no tags', async () => {
    const before = h.model.requests;
    const { job_id, session_id } = await h.submit({ task: 'react style please', flow: 'react' });
    expect((await h.waitFinal(job_id))).toMatchObject({ status: 'succeeded', api_calls: 2, flow: 'react' });
    expect(h.model.log[before]!.tools).toHaveLength(10);
    expect(String(h.model.log[before]!.messages[0]!.content)).not.toContain('<tf-write');
    expect(await h.file(session_id, 'r.txt')).toBe('react\n');
  });

  it('without provider usage the figures are estimated with a tokenizer; delta.reasoning is read too', async () => {
    const { job_id, session_id } = await h.submit({ task: 'a provider without usage' });
    const job = await h.waitFinal(job_id);
    expect(job.status).toBe('succeeded');
    expect(job.usage.estimated).toBe(true);
    expect(job.usage.prompt_tokens).toBeGreaterThan(100);
    expect(await h.file(session_id, 'u.txt')).toBe('no usage\n');
  });

  it('timeout_s fails the job with the reason', async () => {
    const { job_id } = await h.submit({ task: 'a slow job', limits: { timeout_s: 1 } });
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'failed' });
    expect(job.error).toMatch(/timeout_s \(1\)/);
  });

  it('max_commands stops a job that issues too many commands', async () => {
    const { job_id } = await h.submit({ task: 'a slow job', limits: { max_commands: 1 } });
    const job = await h.waitFinal(job_id);
    expect(job.status).toBe('failed');
    expect(job.error).toMatch(/max_commands \(1\)/);
  });

  it('accepts a session policy as YAML text', async () => {
    // (A submitter's policy may only tighten, POLICY.md §7: a forbid rule, not an allow.)
    const { job_id, session_id } = await h.submit({ task: 'yaml policy', policy: 'version: 1\nrules:\n  - id: no-make\n    tool: bash\n    command: ["make"]\n    decision: forbid\n' });
    expect((await h.waitFinal(job_id)).status).toBe('succeeded');
    expect((await h.ledger(session_id))[0]).toMatchObject({ status: 'succeeded', stdout: 'hi\n' });
    const bad = await fetch(`${h.url}/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', ...as('k-alice') }, body: JSON.stringify({ task: 'x', policy: { rules: [{ id: 'r', tool: 'bash', decision: 'maybe' }] } }) });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.code).toBe('invalid_policy');
    // Issue 10: a submitter's job policy may not loosen the operator's; an admin's may.
    const loosen = { task: 'yaml policy', policy: { defaults: { complex_command: 'allow' }, rules: [{ id: 'git-config-ok', command: ['git', 'config'], decision: 'allow' }] } };
    const refused = await fetch(`${h.url}/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', ...as('k-alice') }, body: JSON.stringify(loosen) });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error).toMatchObject({ code: 'policy_loosens', message: expect.stringMatching(/rules\[0\] \(git-config-ok\)/) });
    const byAdmin = await fetch(`${h.url}/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', ...as('k-admin') }, body: JSON.stringify(loosen) });
    expect(byAdmin.status).toBe(202);
  });

  it('a submitter sees only its own jobs; operators see all; no key is 401', async () => {
    const { job_id } = await h.submit({ task: 'react style please', flow: 'react' });
    expect((await fetch(`${h.url}/v1/jobs/${job_id}`, { headers: as('k-bob') })).status).toBe(404);
    expect((await fetch(`${h.url}/v1/jobs/${job_id}/events`, { headers: as('k-bob') })).status).toBe(404);
    expect((await fetch(`${h.url}/v1/jobs/${job_id}/cancel`, { method: 'POST', headers: as('k-bob') })).status).toBe(404);
    expect((await fetch(`${h.url}/v1/jobs/${job_id}`, { headers: as('k-op') })).status).toBe(200);
    const mine = (await (await fetch(`${h.url}/v1/jobs?limit=500`, { headers: as('k-alice') })).json()).jobs;
    expect(mine.some((j: { job_id: string }) => j.job_id === job_id)).toBe(true);
    expect((await (await fetch(`${h.url}/v1/jobs`, { headers: as('k-bob') })).json()).jobs).toEqual([]);
    expect((await fetch(`${h.url}/v1/jobs?limit=0`, { headers: as('k-bob') })).status).toBe(400);
    expect((await fetch(`${h.url}/v1/jobs/${job_id}`)).status).toBe(401);
    const opSubmit = await fetch(`${h.url}/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', ...as('k-op') }, body: '{"task":"x"}' });
    expect(opSubmit.status).toBe(403);
    await h.waitFinal(job_id);
    expect((await fetch(`${h.url}/admin/queues`, { headers: as('k-alice') })).status).toBe(403);
    expect((await fetch(`${h.url}/admin/queues`)).status).toBe(401);
    const queues = await fetch(`${h.url}/admin/queues`, { headers: as('k-op') });
    expect(queues.status).toBe(200);
    const row = (await queues.json()).queues.find((q: { job_id: string }) => q.job_id === job_id);
    // Every count BullMQ gives for these states, `paused` included (it always has).
    expect(Object.keys(row).sort()).toEqual(['active', 'approval', 'delayed', 'job_id', 'open_commands', 'paused', 'prioritized', 'session_id', 'waiting']);
  });
});

describe('model errors', () => {
  it('an unreachable model fails the job with the reason', async () => {
    const dead = await startHarness('deadmodel', [], {}, undefined);
    try {
      await dead.model.close(); // the endpoint the service uses is now refusing connections
      const { job_id } = await dead.submit({ task: 'anything' });
      const job = await dead.waitFinal(job_id);
      expect(job.status).toBe('failed');
      expect(job.error).toMatch(/^model error: /);
    } finally {
      await dead.close().catch(() => {});
    }
  });
});
