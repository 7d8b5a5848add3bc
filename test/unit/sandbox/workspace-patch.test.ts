// The in-container workspace-out program (sandbox-image/executor/workspace-out.mjs)
// run on a scratch tree: its change list and patch, checked by git itself —
// `git apply` on a copy of the baseline must give the workspace back, byte
// for byte, for every kind of change git can carry.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const SCRIPT = new URL('../../../sandbox-image/executor/workspace-out.mjs', import.meta.url).pathname;
const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }); });

function scratch(): { ws: string; priv: string; base: string } {
  const root = mkdtempSync(join(tmpdir(), 'tf-patch-'));
  dirs.push(root);
  for (const d of ['ws', 'priv']) mkdirSync(join(root, d));
  return { ws: join(root, 'ws'), priv: join(root, 'priv'), base: join(root, 'base') };
}

function run(t: { ws: string; priv: string }, op: string): { stdout: Buffer; stderr: string; status: number | null } {
  const r = spawnSync(process.execPath, [SCRIPT, op], { env: { THINKFLOW_WORKSPACE: t.ws, THINKFLOW_PRIVATE_ROOT: t.priv }, maxBuffer: 1 << 30 });
  return { stdout: r.stdout, stderr: r.stderr.toString(), status: r.status };
}

/** Raw-byte snapshot of a tree (names as latin1): file content, `-> target`, and the executable bit. */
function snapshot(dir: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of readdirSync(Buffer.from(join(dir, prefix)), { encoding: 'buffer' })) {
    const name = raw.toString('latin1');
    if (name === '.git') continue;
    const rel = prefix ? `${prefix}/${name}` : name;
    const abs = Buffer.concat([Buffer.from(`${dir}/`), Buffer.from(rel, 'latin1')]);
    const st = lstatSync(abs);
    if (st.isDirectory()) Object.assign(out, snapshot(dir, rel));
    else if (st.isSymbolicLink()) out[rel] = `-> ${readlinkSync(abs, { encoding: 'buffer' }).toString('latin1')}`;
    else out[rel] = `${st.mode & 0o100 ? 'x ' : ''}${readFileSync(abs).toString('latin1')}`;
  }
  return out;
}

/** Baseline of the tree `before` made, then `after` applied to the workspace; the patch applied to a copy of the baseline. */
function roundTrip(before: (ws: string) => void, after: (ws: string) => void) {
  const t = scratch();
  before(t.ws);
  cpSync(t.ws, t.base, { recursive: true, verbatimSymlinks: true });
  const set = run(t, 'baseline-set');
  expect(set.status, set.stderr).toBe(0);
  after(t.ws);
  const changes = run(t, 'changes');
  expect(changes.status, changes.stderr).toBe(0);
  const patch = run(t, 'patch');
  expect(patch.status, patch.stderr).toBe(0);
  execFileSync('git', ['init', '-q'], { cwd: t.base });
  if (patch.stdout.length) execFileSync('git', ['apply', '-'], { cwd: t.base, input: patch.stdout });
  expect(snapshot(t.base)).toEqual(snapshot(t.ws));
  return { list: JSON.parse(changes.stdout.toString()).changes as { path: string; change: string; bytes: number }[], patch: patch.stdout.toString('latin1') };
}

const write = (ws: string, p: string, data: string | Buffer) => {
  mkdirSync(join(ws, p, '..'), { recursive: true });
  writeFileSync(join(ws, p), data);
};

describe('workspace-out.mjs patch', () => {
  it('carries text edits, additions, deletions, modes, empty files and a missing final newline', () => {
    const lines = Array.from({ length: 200 }, (_, i) => `line ${i}\n`);
    const { list, patch } = roundTrip((ws) => {
      write(ws, 'long.txt', lines.join(''));
      write(ws, 'gone.txt', 'bye\n');
      write(ws, 'empty', '');
      write(ws, 'run.sh', '#!/bin/sh\n');
      write(ws, 'noeol', 'x');
      write(ws, 'same.txt', 'same\n');
    }, (ws) => {
      const edited = [...lines];
      edited[10] = 'changed 10\n';
      edited.splice(100, 3);
      edited.push('appended\n');
      write(ws, 'long.txt', edited.join(''));
      unlinkSync(join(ws, 'gone.txt'));
      unlinkSync(join(ws, 'empty'));
      write(ws, 'new/empty', '');
      chmodSync(join(ws, 'run.sh'), 0o755);
      write(ws, 'noeol', 'y\n');
      write(ws, 'same.txt', 'same\n'); // rewritten, same bytes: not a change
    });
    expect(list.map((c) => `${c.change} ${c.path}`)).toEqual([
      'deleted empty', 'deleted gone.txt', 'modified long.txt', 'added new/empty', 'modified noeol', 'modified run.sh',
    ]);
    expect(patch).toContain('diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n');
    expect(patch.match(/^@@ /gm)).toHaveLength(3 + 1 + 1); // long.txt in three hunks; gone.txt; noeol
  });

  it('carries binary files as git binary patches, including one larger than the text limit', () => {
    const big = Buffer.alloc(9 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4096) big.writeUInt32LE(i * 2654435761 >>> 0, i);
    const { list, patch } = roundTrip((ws) => {
      write(ws, 'img.bin', Buffer.from([0, 1, 2, 3, 255, 0, 10]));
      write(ws, 'big.bin', big);
    }, (ws) => {
      write(ws, 'img.bin', Buffer.from([0, 9, 9, 10, 0]));
      big[12345] = 7;
      write(ws, 'big.bin', big);
      write(ws, 'added.bin', Buffer.from([0, 0, 0]));
    });
    expect(list).toEqual([
      { path: 'added.bin', change: 'added', bytes: 3 },
      { path: 'big.bin', change: 'modified', bytes: big.length },
      { path: 'img.bin', change: 'modified', bytes: 5 },
    ]);
    expect(patch.match(/^GIT binary patch$/gm)).toHaveLength(3);
  });

  it('carries symlinks as symlinks (also to outside, also turning into a file), and names that need quoting or are not UTF-8', () => {
    const odd = Buffer.concat([Buffer.from('dir/caf'), Buffer.from([0xe9]), Buffer.from(' "q"\t.txt')]).toString('latin1');
    const { list, patch } = roundTrip((ws) => {
      write(ws, 'target.txt', 't\n');
      symlinkSync('target.txt', join(ws, 'link'));
      write(ws, 'becomes-link', 'file\n');
    }, (ws) => {
      unlinkSync(join(ws, 'link'));
      symlinkSync('/etc/passwd', join(ws, 'link'));
      unlinkSync(join(ws, 'becomes-link'));
      symlinkSync('target.txt', join(ws, 'becomes-link'));
      mkdirSync(join(ws, 'dir'));
      writeFileSync(Buffer.concat([Buffer.from(`${ws}/`), Buffer.from(odd, 'latin1')]), 'odd\n');
    });
    expect(list.map((c) => `${c.change} ${c.path}`)).toEqual(['modified becomes-link', `added dir/caf\ufffd "q"\t.txt`, 'modified link']);
    expect(patch).toContain('diff --git "a/dir/caf\\351 \\"q\\"\\t.txt" "b/dir/caf\\351 \\"q\\"\\t.txt"');
    expect(patch).toContain('deleted file mode 100644');
    expect(patch).toContain('new file mode 120000');
    expect(patch).not.toContain('root:');
  });

  it('without a baseline: changes and patch say so (exit 3), a recorded failure is named (exit 6)', () => {
    const t = scratch();
    const r = run(t, 'changes');
    expect(r.status).toBe(3);
    expect(JSON.parse(r.stderr)).toMatchObject({ code: 'no_baseline' });
    mkdirSync(join(t.priv, 'baseline'));
    writeFileSync(join(t.priv, 'baseline', 'failed.json'), JSON.stringify({ at: 'then', reason: 'ENOSPC: no space left' }));
    const failed = run(t, 'patch');
    expect(failed.status).toBe(6);
    expect(JSON.parse(failed.stderr)).toMatchObject({ code: 'baseline_failed', message: expect.stringContaining('ENOSPC') });
    expect(JSON.parse(run(t, 'baseline-ensure').stdout.toString())).toEqual({ taken: false });
  });
});
