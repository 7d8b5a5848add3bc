// Every tool of PROTOCOL.md §2, executed by the in-container executor.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox, SandboxManager } from '../../../services/sandbox/index.ts';
import { bash, cmd, newManager, reapAll, requireImage, sessionId, testPrefix } from './helpers.ts';

const prefix = testPrefix('tools');
let manager: SandboxManager;
let sb: Sandbox;

beforeAll(async () => {
  await requireImage();
  manager = newManager(prefix, { readCapBytes: 1000 });
  sb = await manager.sandboxFor(sessionId());
});
afterAll(() => reapAll(manager, prefix));

const cat = async (p: string) => (await bash(sb, `cat ${p}`)).stdout;

describe('write', () => {
  it('creates missing parents and reports bytes written', async () => {
    const r = await sb.execute(cmd({ tool: 'write', path: 'src/deep/app.py', content: 'print("héllo")\n' }));
    expect(r).toMatchObject({ ok: true, tool: 'write', path: 'src/deep/app.py', bytes_written: 16 });
    expect(r.duration_ms).toBeGreaterThan(0);
    expect(await cat('src/deep/app.py')).toBe('print("héllo")\n');
  });

  it('replaces the file by rename (new inode, mode kept, no temp file left)', async () => {
    await sb.execute(cmd({ tool: 'write', path: 'w.sh', content: 'old\n' }));
    await bash(sb, 'chmod 750 w.sh');
    const before = (await bash(sb, 'stat -c %i w.sh')).stdout;
    const r = await sb.execute(cmd({ tool: 'write', path: 'w.sh', content: 'new\n' }));
    expect(r.ok).toBe(true);
    const after = await bash(sb, 'stat -c "%i %a" w.sh; ls -a | grep -c tf- || true');
    const [inode, mode] = after.stdout!.split('\n')[0]!.split(' ');
    expect(inode).not.toBe(before!.trim());
    expect(mode).toBe('750');
    expect(after.stdout!.split('\n')[1]).toBe('0');
    expect(await cat('w.sh')).toBe('new\n');
  });

  it('refuses empty content unless allow_empty', async () => {
    const r = await sb.execute(cmd({ tool: 'write', path: 'empty.txt', content: '' }));
    expect(r).toMatchObject({ ok: false, error_code: 'empty_content' });
    expect((await bash(sb, 'test -e empty.txt')).exit_code).toBe(1);
    const ok = await sb.execute(cmd({ tool: 'write', path: 'empty.txt', content: '', allow_empty: true }));
    expect(ok).toMatchObject({ ok: true, bytes_written: 0 });
    expect((await bash(sb, 'test -f empty.txt && test ! -s empty.txt')).exit_code).toBe(0);
  });

  it('fails on a directory', async () => {
    await sb.execute(cmd({ tool: 'mkdir', path: 'adir' }));
    const r = await sb.execute(cmd({ tool: 'write', path: 'adir', content: 'x' }));
    expect(r).toMatchObject({ ok: false, error_code: 'is_directory' });
  });
});

describe('append', () => {
  it('creates then appends', async () => {
    expect(await sb.execute(cmd({ tool: 'append', path: 'log/a.txt', content: 'one\n' }))).toMatchObject({ ok: true, bytes_written: 4 });
    expect(await sb.execute(cmd({ tool: 'append', path: 'log/a.txt', content: 'two\n' }))).toMatchObject({ ok: true });
    expect(await cat('log/a.txt')).toBe('one\ntwo\n');
  });

  it('fails on empty content', async () => {
    const r = await sb.execute(cmd({ tool: 'append', path: 'log/a.txt', content: '' }));
    expect(r).toMatchObject({ ok: false, error_code: 'empty_content' });
    expect(await cat('log/a.txt')).toBe('one\ntwo\n');
  });
});

describe('mkdir, touch, copy', () => {
  it('mkdir -p is recursive and idempotent, and fails over a file', async () => {
    expect((await sb.execute(cmd({ tool: 'mkdir', path: 'm/n/o' }))).ok).toBe(true);
    expect((await sb.execute(cmd({ tool: 'mkdir', path: 'm/n/o' }))).ok).toBe(true);
    expect((await bash(sb, 'test -d m/n/o')).exit_code).toBe(0);
    await sb.execute(cmd({ tool: 'write', path: 'm/file', content: 'x' }));
    expect((await sb.execute(cmd({ tool: 'mkdir', path: 'm/file' }))).ok).toBe(false);
  });

  it('touch creates an empty file and updates the mtime of an existing one', async () => {
    expect((await sb.execute(cmd({ tool: 'touch', path: 't/new.txt' }))).ok).toBe(true);
    expect((await bash(sb, 'stat -c %s t/new.txt')).stdout).toBe('0\n');
    await bash(sb, 'echo data > t/old.txt && touch -d 2001-01-01 t/old.txt');
    expect((await sb.execute(cmd({ tool: 'touch', path: 't/old.txt' }))).ok).toBe(true);
    const r = await bash(sb, 'stat -c %Y t/old.txt; cat t/old.txt');
    const [mtime, content] = r.stdout!.split('\n');
    expect(Number(mtime)).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(content).toBe('data');
  });

  it('copy copies a file, into an existing directory, and a directory tree', async () => {
    await sb.execute(cmd({ tool: 'write', path: 'c/src.txt', content: 'copy me' }));
    expect(await sb.execute(cmd({ tool: 'copy', path: 'c/src.txt', dest: 'c2/dst.txt' }))).toMatchObject({ ok: true, bytes_written: 7 });
    expect(await cat('c2/dst.txt')).toBe('copy me');
    await sb.execute(cmd({ tool: 'mkdir', path: 'c3' }));
    expect((await sb.execute(cmd({ tool: 'copy', path: 'c/src.txt', dest: 'c3' }))).ok).toBe(true);
    expect(await cat('c3/src.txt')).toBe('copy me');
    expect((await sb.execute(cmd({ tool: 'copy', path: 'c', dest: 'ctree' }))).ok).toBe(true);
    expect(await cat('ctree/src.txt')).toBe('copy me');
  });

  it('copy of a missing source fails', async () => {
    const r = await sb.execute(cmd({ tool: 'copy', path: 'nope.txt', dest: 'x.txt' }));
    expect(r).toMatchObject({ ok: false, error_code: 'not_found' });
  });
});

describe('edit', () => {
  it('replaces exactly one occurrence', async () => {
    await sb.execute(cmd({ tool: 'write', path: 'e.py', content: 'a = 1\nb = 2\n' }));
    const r = await sb.execute(cmd({ tool: 'edit', path: 'e.py', old_text: 'b = 2', new_text: 'b = 3' }));
    expect(r).toMatchObject({ ok: true, bytes_written: 12 });
    expect(await cat('e.py')).toBe('a = 1\nb = 3\n');
  });

  it('fails on zero or several occurrences and leaves the file alone', async () => {
    await sb.execute(cmd({ tool: 'write', path: 'e2.txt', content: 'x x\n' }));
    expect(await sb.execute(cmd({ tool: 'edit', path: 'e2.txt', old_text: 'y', new_text: 'z' }))).toMatchObject({
      ok: false,
      error_code: 'edit_no_match',
    });
    expect(await sb.execute(cmd({ tool: 'edit', path: 'e2.txt', old_text: 'x', new_text: 'z' }))).toMatchObject({
      ok: false,
      error_code: 'edit_ambiguous',
    });
    await sb.execute(cmd({ tool: 'write', path: 'e3.txt', content: 'aaa' }));
    // overlapping occurrences count as several
    expect((await sb.execute(cmd({ tool: 'edit', path: 'e3.txt', old_text: 'aa', new_text: 'b' }))).error_code).toBe('edit_ambiguous');
    expect(await cat('e2.txt')).toBe('x x\n');
  });

  it('fails on a missing file', async () => {
    expect((await sb.execute(cmd({ tool: 'edit', path: 'missing.txt', old_text: 'a', new_text: 'b' }))).error_code).toBe('not_found');
  });
});

describe('read', () => {
  it('returns the content in stdout', async () => {
    await sb.execute(cmd({ tool: 'write', path: 'r.txt', content: 'line1\nline2\n' }));
    expect(await sb.execute(cmd({ tool: 'read', path: 'r.txt', need_result: true }))).toMatchObject({
      ok: true,
      stdout: 'line1\nline2\n',
      stdout_truncated: false,
    });
  });

  it('caps large files and marks them truncated', async () => {
    await sb.execute(cmd({ tool: 'write', path: 'big.txt', content: 'z'.repeat(5000) }));
    const r = await sb.execute(cmd({ tool: 'read', path: 'big.txt' }));
    expect(r.stdout).toHaveLength(1000);
    expect(r.stdout_truncated).toBe(true);
  });

  it('fails on missing files and directories', async () => {
    expect((await sb.execute(cmd({ tool: 'read', path: 'nothing.txt' }))).error_code).toBe('not_found');
    expect((await sb.execute(cmd({ tool: 'read', path: 'm' }))).error_code).toBe('is_directory');
  });

  it('refuses to open a FIFO instead of blocking the session', async () => {
    await bash(sb, 'mkfifo pipe');
    for (const c of [
      cmd({ tool: 'read', path: 'pipe' }),
      cmd({ tool: 'append', path: 'pipe', content: 'x' }),
      cmd({ tool: 'edit', path: 'pipe', old_text: 'a', new_text: 'b' }),
      cmd({ tool: 'copy', path: 'pipe', dest: 'pipe2' }),
    ]) {
      expect(await sb.execute(c), c.tool).toMatchObject({ ok: false, error_code: 'not_a_regular_file' });
    }
    expect(await sb.readPath('pipe')).toEqual({ kind: 'file', bytes: Buffer.alloc(0) });
    await bash(sb, 'rm pipe');
  });
});

describe('bash', () => {
  it('runs bash (no login shell, no start-up files) in /workspace with stdout, stderr and exit code', async () => {
    const r = await bash(sb, 'pwd; shopt -q login_shell && echo login; echo err >&2; exit 3');
    expect(r).toMatchObject({ ok: false, exit_code: 3, stdout: '/workspace\n', stderr: 'err\n', error_code: 'nonzero_exit' });
    expect(await bash(sb, 'echo ok')).toMatchObject({ ok: true, exit_code: 0, stdout: 'ok\n' });
  });

  it('has the tools of the image', async () => {
    const r = await bash(sb, 'for t in git python3 node npm gawk sed grep find diff patch ps; do command -v $t >/dev/null || echo missing $t; done');
    expect(r).toMatchObject({ ok: true, stdout: '' });
  });
});

describe('paths stay inside /workspace', () => {
  it.each([
    ['../escape.txt'],
    ['a/../../escape.txt'],
    ['/etc/passwd'],
    ['/tmp/x'],
    ['/workspace/../etc/x'],
  ])('refuses %s', async (p) => {
    for (const c of [
      cmd({ tool: 'write', path: p, content: 'x' }),
      cmd({ tool: 'read', path: p }),
      cmd({ tool: 'copy', path: 'r.txt', dest: p }),
    ]) {
      expect(await sb.execute(c)).toMatchObject({ ok: false, error_code: 'path_outside_workspace' });
    }
    expect(await sb.readPath(p)).toEqual({ kind: 'outside' });
  });

  it('accepts absolute paths inside the workspace and harmless ..', async () => {
    expect((await sb.execute(cmd({ tool: 'write', path: '/workspace/abs.txt', content: 'abs' }))).ok).toBe(true);
    expect((await sb.execute(cmd({ tool: 'read', path: 'src/../abs.txt' }))).stdout).toBe('abs');
  });

  it('refuses symlinks that lead out, even dangling ones', async () => {
    await bash(sb, 'ln -s /etc etclink && ln -s /etc/hostname hostlink && ln -s /nonexistent/x dangling && ln -s ../.. up');
    for (const p of ['etclink/evil', 'hostlink', 'dangling', 'up/etc/x']) {
      const r = await sb.execute(cmd({ tool: 'write', path: p, content: 'x' }));
      expect(r, p).toMatchObject({ ok: false, error_code: 'path_outside_workspace' });
    }
    expect((await sb.execute(cmd({ tool: 'read', path: 'hostlink' }))).error_code).toBe('path_outside_workspace');
    expect((await sb.execute(cmd({ tool: 'copy', path: 'hostlink', dest: 'stolen' }))).error_code).toBe('path_outside_workspace');
    expect((await bash(sb, 'test -e stolen')).exit_code).toBe(1);
  });

  it('follows symlinks that stay inside', async () => {
    await bash(sb, 'mkdir -p real && ln -s real inlink');
    expect((await sb.execute(cmd({ tool: 'write', path: 'inlink/f.txt', content: 'in' }))).ok).toBe(true);
    expect(await cat('real/f.txt')).toBe('in');
  });
});

describe('large content', () => {
  it('writes and reads back 8 MiB through the executor channel intact', async () => {
    const big = Array.from({ length: 8 * 1024 }, (_, i) => `${String(i).padStart(6, '0')}:${'é'.repeat(508)}\n`).join('');
    const w = await sb.execute(cmd({ tool: 'write', path: 'large.txt', content: big }));
    expect(w).toMatchObject({ ok: true, bytes_written: Buffer.byteLength(big) });
    const f = await sb.readPath('large.txt');
    expect(f.kind === 'file' && f.bytes.equals(Buffer.from(big))).toBe(true);
    expect((await bash(sb, 'sha256sum < large.txt')).stdout!.split(' ')[0]).toBe(
      (await import('node:crypto')).createHash('sha256').update(big).digest('hex'),
    );
  });
});

describe('readPath', () => {
  it('returns file bytes, directory entries and missing', async () => {
    const f = await sb.readPath('r.txt');
    expect(f.kind === 'file' && f.bytes.toString()).toBe('line1\nline2\n');
    const d = await sb.readPath('src');
    expect(d).toEqual({ kind: 'dir', entries: [{ name: 'deep', type: 'dir', size: expect.any(Number) }] });
    const root = await sb.readPath('.');
    expect(root.kind === 'dir' && root.entries.find((e) => e.name === 'etclink')?.type).toBe('symlink');
    expect(await sb.readPath('no/such')).toEqual({ kind: 'missing' });
  });
});
