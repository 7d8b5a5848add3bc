// Symlinks cannot walk around path rules or the workspace (POLICY.md §1, §7;
// issue 10 point 2, issue 11 points 2 and 3), end to end through REST on
// real Docker: the worker checks the path as it resolves right before the
// side effect, a symlink out of the workspace is `forbidden` with
// `path_outside_workspace` like `..`, and every failure carries its code.
import Docker from 'dockerode';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { suiteService } from '../suite-service.ts';
import { containerName, frozenNow, thawIfPaused } from '../../../services/sandbox/index.ts';
import { client, rawGet } from './helpers.ts';

const svc = suiteService('resolved', {
  THINKFLOW_API_KEYS: 'k-sub:submitter,k-op:operator', THINKFLOW_POLICY_DIR: policies(),
});
const { boxes } = svc;
let api: ReturnType<typeof client>;
let op: ReturnType<typeof client>;

function policies(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tf-policy-'));
  mkdirSync(join(dir, 'global'));
  writeFileSync(join(dir, 'global', 'base.yaml'), [
    'version: 1',
    'defaults: {bash: allow}',
    'rules:',
    '  - id: protect-git-dir',
    '    tool: [write, append, edit, mkdir, touch, copy]',
    '    path: ".git/**"',
    '    decision: forbid',
    '    justification: git internals run code (hooks)',
    '  - id: secrets-ask',
    '    tool: [write, append, edit, read]',
    '    path: "secrets/**"',
    '    decision: prompt',
    '    justification: secrets need a human',
    '',
  ].join('\n'));
  return dir;
}

beforeAll(() => {
  api = client(svc.url!, 'k-sub');
  op = client(svc.url!, 'k-op');
});

type Result = { id: string; status: string; error?: string; code?: string };
async function turn(sid: string, tags: string): Promise<Result[]> {
  const res = await api.text(`/v1/sessions/${sid}/commands`, tags);
  expect(res.status).toBe(200);
  return ((await res.json()) as { results: Result[] }).results;
}
async function session(approval = 'never'): Promise<string> {
  return ((await (await api.json('/v1/sessions', { approval })).json()) as { session_id: string }).session_id;
}
/** The session's pending approval, once the worker has asked for it. */
async function pendingApproval(sid: string): Promise<{ token: string; target: string } | undefined> {
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const list = (await (await op.get('/v1/approvals?status=pending')).json()) as { approvals: { token: string; session_id: string; target: string }[] };
    const found = list.approvals.find((a) => a.session_id === sid);
    if (found) return found;
  }
  return undefined;
}

async function ledger(sid: string) {
  return ((await (await api.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: Record<string, unknown>[] }).entries;
}

describe('paths as they resolve at execution', () => {
  it('a write through g -> .git meets the .git/** rule; the hook is never written', async () => {
    const sid = await session();
    expect((await turn(sid, '<tf-bash id="1" cmd="git init -q && ln -s .git g" />')).map((r) => r.status)).toEqual(['succeeded']);
    const [w] = await turn(sid, '<tf-write id="1" path="g/hooks/pre-commit">#!/bin/sh\necho pwned</tf-write>');
    expect(w).toMatchObject({ status: 'forbidden', code: 'forbidden' });
    expect(w!.error).toMatch(/protect-git-dir|\.git/);
    const check = await turn(sid, '<tf-bash id="1" cmd="test -e .git/hooks/pre-commit && echo EXISTS || echo absent" />');
    expect(check[0]).toMatchObject({ status: 'succeeded' });
    expect((check[0] as { stdout?: string }).stdout).toBe('absent\n');
    const rec = (await ledger(sid)).find((e) => e.tool === 'write')!;
    expect(rec).toMatchObject({ status: 'forbidden', error_code: 'forbidden' });
  });

  it('a redirection through g -> .git meets the .git/** rule too', async () => {
    const sid = await session();
    await turn(sid, '<tf-bash id="1" cmd="git init -q && ln -s .git g" />');
    const [r] = await turn(sid, '<tf-bash id="1" cmd="echo \'[core] hooksPath = x\' >> g/config" />');
    expect(r).toMatchObject({ status: 'forbidden', code: 'forbidden' });
    expect(r!.error).toMatch(/\.git\/config/);
    const [out] = await turn(sid, '<tf-bash id="1" cmd="echo x > e/file" />');
    expect(out!.status).not.toBe('succeeded'); // e does not exist yet: bash fails on its own
    await turn(sid, '<tf-bash id="1" cmd="ln -s /tmp tmplink" />');
    const [leak] = await turn(sid, '<tf-bash id="1" cmd="echo x > tmplink/f" />');
    expect(leak).toMatchObject({ status: 'forbidden', code: 'path_outside_workspace' });
  });

  it('a prompt rule met through a symlink is refused, naming the real path; named directly, it asks an operator', async () => {
    const sid = await session('on-request');
    // Creating `secrets` is itself a write the rule covers (`secrets/**` matches `secrets`): an operator approves the set-up.
    const setup = api.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="1" cmd="mkdir -p secrets && ln -s secrets s" />');
    const first = await pendingApproval(sid);
    expect((await op.json(`/v1/approvals/${first!.token}`, { decision: 'approve' })).status).toBe(200);
    expect(((await (await setup).json()) as { results: Result[] }).results[0]).toMatchObject({ status: 'succeeded' });
    const [viaLink] = await turn(sid, '<tf-write id="1" path="s/key.txt">k</tf-write>');
    expect(viaLink).toMatchObject({ status: 'forbidden', code: 'forbidden' });
    expect(viaLink!.error).toMatch(/secrets\/key\.txt.*needs its own approval/);
    const pending = api.text(`/v1/sessions/${sid}/commands`, '<tf-write id="1" path="secrets/key.txt">k</tf-write>');
    const approval = await pendingApproval(sid);
    expect(approval?.target).toBe('secrets/key.txt');
    expect((await op.json(`/v1/approvals/${approval!.token}`, { decision: 'approve' })).status).toBe(200);
    expect(((await (await pending).json()) as { results: Result[] }).results[0]).toMatchObject({ status: 'succeeded' });
  });

  it('an approved command whose path is swapped for a symlink while it waited is checked again before it runs', async () => {
    const sid = await session('on-request');
    await turn(sid, '<tf-bash id="1" cmd="git init -q" />'); // the sandbox exists
    const pending = api.text(`/v1/sessions/${sid}/commands`, '<tf-write id="1" path="secrets/x">k</tf-write>');
    const approval = await pendingApproval(sid);
    // Nothing of the session runs while it waits; play the swap from outside, as root in the container.
    const { execFileSync } = await import('node:child_process');
    // The sandbox is paused while its command waits for the operator (idle-pause.ts): thawed for the swap, then the
    // service's own unpause finds it running.
    const name = containerName(boxes, sid);
    const box = new Docker().getContainer(name);
    await expect.poll(async () => frozenNow(await box.inspect())).toBe(true);
    expect(await thawIfPaused(new Docker(), name, sid)).toBe(true);
    execFileSync('docker', ['exec', '-u', '1000', name, 'ln', '-s', '.git/hooks', 'secrets'], { stdio: 'ignore' });
    expect((await op.json(`/v1/approvals/${approval!.token}`, { decision: 'approve' })).status).toBe(200);
    const [r] = ((await (await pending).json()) as { results: Result[] }).results;
    expect(r).toMatchObject({ status: 'forbidden', code: 'forbidden' });
    expect(r!.error).toMatch(/\.git\/hooks\/x/);
  });

  it('a symlink out of the workspace is forbidden with path_outside_workspace, for every file tool', async () => {
    const sid = await session();
    await turn(sid, '<tf-bash id="1" cmd="ln -s /etc e && ln -s /etc/passwd p && echo x > inside.txt" />');
    const cases = [
      '<tf-read id="1" path="p" />',
      '<tf-read id="1" path="e/hostname" />',
      '<tf-write id="1" path="e/evil">x</tf-write>',
      '<tf-append id="1" path="p">x</tf-append>',
      '<tf-edit id="1" path="p"><old>root</old><new>toor</new></tf-edit>',
      '<tf-copy id="1" path="inside.txt" dest="e/copied" />',
      '<tf-copy id="1" path="p" dest="stolen.txt" />',
      '<tf-mkdir id="1" path="e/dir" />',
      '<tf-touch id="1" path="e/t" />',
    ];
    for (const tag of cases) {
      const [r] = await turn(sid, tag);
      expect([tag, r!.status, r!.code]).toEqual([tag, 'forbidden', 'path_outside_workspace']);
    }
    // The same answer as for a path that is outside as written.
    const [dotdot] = await turn(sid, '<tf-read id="1" path="../etc/passwd" />');
    expect(dotdot).toMatchObject({ status: 'forbidden', code: 'path_outside_workspace' });
    expect((await rawGet(svc.url!, `/v1/sessions/${sid}/files/p`, 'k-sub')).status).toBe(403);
    expect((await rawGet(svc.url!, `/v1/sessions/${sid}/files/e/passwd`, 'k-sub')).status).toBe(403);
  });

  it('failures carry their code: empty_content, edit_no_match, nonzero_exit, skipped', async () => {
    const sid = await session();
    const results = await turn(sid, '<tf-write id="1" path="a.txt"></tf-write>');
    expect(results[0]).toMatchObject({ status: 'failed', code: 'empty_content' });
    expect((await turn(sid, '<tf-append id="1" path="a.txt"></tf-append>'))[0]).toMatchObject({ status: 'failed', code: 'empty_content' });
    expect((await turn(sid, '<tf-write id="1" path="b.txt" allow_empty="true"></tf-write>'))[0]).toMatchObject({ status: 'succeeded' });
    expect((await turn(sid, '<tf-edit id="1" path="b.txt"><old>zz</old><new>y</new></tf-edit>'))[0]).toMatchObject({ code: 'edit_no_match' });
    const two = await turn(sid, '<tf-bash id="1" cmd="exit 4" />\n<tf-touch id="2" path="c" />');
    expect(two).toMatchObject([{ status: 'failed', code: 'nonzero_exit' }, { status: 'skipped', code: 'skipped' }]);
    const entry = (await ledger(sid)).find((e) => e.tool === 'write')!;
    expect(entry).toMatchObject({ status: 'failed', error_code: 'empty_content' });
  });
});
