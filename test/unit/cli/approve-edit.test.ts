// `thinkflow approve TOKEN --edit-cmd CMD | --edit-content-file F` (approve_edited) against a fake API.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeApi, type FakeApi } from './fake-api.ts';
import { run } from './helpers.ts';

let api: FakeApi | undefined;
afterEach(async () => { await api?.close(); api = undefined; });

const answers = (a: FakeApi) => a.requests.filter((r) => r.method === 'POST').map((r) => ({ path: r.path, body: JSON.parse(r.body) as unknown }));

describe('thinkflow approve --edit-cmd / --edit-content-file', () => {
  it('sends approve_edited with the cmd, or with the file content as it is', async () => {
    api = await startFakeApi({ tokens: { t1: 'ok', t2: 'ok' } });
    const dir = mkdtempSync(join(tmpdir(), 'tf-edit-'));
    const file = join(dir, 'notes.md');
    writeFileSync(file, 'line one\nlé ligne deux\n');
    const env = { THINKFLOW_URL: api.url };
    const c = await run(['approve', 't1', '--edit-cmd', 'npm test -- --run'], env);
    const f = await run(['approve', 't2', '--edit-content-file', file], env);
    expect([c.code, f.code], c.stderr + f.stderr).toEqual([0, 0]);
    expect(answers(api)).toEqual([
      { path: '/v1/approvals/t1', body: { decision: 'approve_edited', cmd: 'npm test -- --run' } },
      { path: '/v1/approvals/t2', body: { decision: 'approve_edited', content: 'line one\nlé ligne deux\n' } },
    ]);
    expect(c.stdout).toBe('t1: approved as edited (job job_1, command 3: bash rm -rf build)\n');
  });

  it('a forbidden edit: the API\'s words and the rule, exit 1', async () => {
    api = await startFakeApi({ tokens: { t: 'edit_forbidden' } });
    const r = await run(['approve', 't', '--edit-cmd', 'curl x'], { THINKFLOW_URL: api.url });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('thinkflow approve: t: edit_forbidden: the edited command "curl x" is forbidden by rule no-network-tools (global layer)\n');
  });

  it.each([
    [['approve', 't', '--edit-cmd', 'a', '--edit-content-file', 'f'], '--edit-cmd (bash) or --edit-content-file (write, append), not both'],
    [['approve', 't', '--session', '--edit-cmd', 'a'], 'do not go with --session'],
    [['approve', 't', '--edit-content-file', '/nonexistent/tf-edit'], 'cannot read --edit-content-file /nonexistent/tf-edit'],
    [['reject', 't', '--edit-cmd', 'a'], "Unknown option '--edit-cmd'"],
  ])('bad arguments %j: exit 2, nothing sent', async (args, reason) => {
    api = await startFakeApi({ tokens: { t: 'ok' } });
    const r = await run(args, { THINKFLOW_URL: api.url });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(reason);
    expect(r.stderr).toContain('usage: thinkflow');
    expect(api.requests).toEqual([]);
  });
});
