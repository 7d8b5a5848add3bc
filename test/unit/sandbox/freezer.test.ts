// A container's freezer file, found from its init's /proc entry (services/sandbox/freezer.ts),
// against a directory laid out as /proc and /sys/fs/cgroup are: v1 (hybrid), v2 (unified),
// and the cases where it must not be used.
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freezerFileOf, isFrozen, setFrozen, type FreezerRoots } from '../../../services/sandbox/freezer.ts';

const ID = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const dirs: string[] = [];
afterEach(async () => { for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true }); });

async function host(o: { unified: boolean; procCgroup: string; files: Record<string, string> }): Promise<FreezerRoots> {
  const root = await mkdtemp(join(tmpdir(), 'tf-freezer-'));
  dirs.push(root);
  const roots = { cgroup: join(root, 'cgroup'), proc: join(root, 'proc') };
  await mkdir(join(roots.proc, '42'), { recursive: true });
  await writeFile(join(roots.proc, '42', 'cgroup'), o.procCgroup);
  await mkdir(roots.cgroup, { recursive: true });
  if (o.unified) await writeFile(join(roots.cgroup, 'cgroup.controllers'), 'cpu memory pids\n');
  for (const [path, text] of Object.entries(o.files)) {
    await mkdir(join(roots.cgroup, path, '..'), { recursive: true });
    await writeFile(join(roots.cgroup, path), text);
  }
  return roots;
}

const v1Lines = (id: string) => `12:pids:/docker/${id}\n6:freezer:/docker/${id}\n1:name=systemd:/docker/${id}\n0::/docker/${id}\n`;

describe('freezerFileOf', () => {
  it('finds the v1 freezer of a hybrid host through the freezer line, and freezes and thaws it', async () => {
    const roots = await host({ unified: false, procCgroup: v1Lines(ID), files: { [`freezer/docker/${ID}/freezer.state`]: 'THAWED\n', [`unified/docker/${ID}/cgroup.freeze`]: '0\n' } });
    const f = await freezerFileOf(ID, 42, roots);
    expect(f).toEqual({ path: join(roots.cgroup, 'freezer/docker', ID, 'freezer.state'), version: 1 });
    expect(await isFrozen(f!)).toBe(false);
    await setFrozen(f!, true);
    expect((await readFile(f!.path, 'utf8')).trim()).toBe('FROZEN');
    expect(await isFrozen(f!)).toBe(true);
    await writeFile(f!.path, 'FREEZING\n'); // the kernel's state while tasks are still being frozen
    expect(await isFrozen(f!)).toBe(true);
    await writeFile(f!.path, 'FROZEN\n'); // (a cgroup file has no length; a test file keeps the longer text's tail)
    await setFrozen(f!, false);
    expect((await readFile(f!.path, 'utf8')).trim()).toBe('THAWED');
  });

  it('finds cgroup.freeze on a unified (v2) host, systemd driver', async () => {
    const path = `system.slice/docker-${ID}.scope/cgroup.freeze`;
    const roots = await host({ unified: true, procCgroup: `0::/system.slice/docker-${ID}.scope\n`, files: { [path]: '0\n' } });
    const f = await freezerFileOf(ID, 42, roots);
    expect(f).toEqual({ path: join(roots.cgroup, path), version: 2 });
    await setFrozen(f!, true);
    expect((await readFile(f!.path, 'utf8')).trim()).toBe('1');
    expect(await isFrozen(f!)).toBe(true);
    await setFrozen(f!, false);
    expect(await isFrozen(f!)).toBe(false);
  });

  it('refuses a pid whose cgroup is not the container\'s (another pid namespace, or a pid reused after the container died)', async () => {
    const roots = await host({ unified: false, procCgroup: v1Lines(OTHER), files: { [`freezer/docker/${OTHER}/freezer.state`]: 'THAWED\n' } });
    expect(await freezerFileOf(ID, 42, roots)).toBeUndefined();
    const host2 = await host({ unified: false, procCgroup: '6:freezer:/user.slice\n', files: { 'freezer/user.slice/freezer.state': 'THAWED\n' } });
    expect(await freezerFileOf(ID, 42, host2)).toBeUndefined();
  });

  it('gives nothing when the pid is gone, malformed, or the id is not a container id', async () => {
    const roots = await host({ unified: false, procCgroup: v1Lines(ID), files: { [`freezer/docker/${ID}/freezer.state`]: 'THAWED\n' } });
    expect(await freezerFileOf(ID, 43, roots)).toBeUndefined();
    expect(await freezerFileOf(ID, 0, roots)).toBeUndefined();
    expect(await freezerFileOf(ID, -1, roots)).toBeUndefined();
    expect(await freezerFileOf('../../etc', 42, roots)).toBeUndefined();
    expect(await freezerFileOf(ID.toUpperCase(), 42, roots)).toBeUndefined();
  });

  it('gives nothing when the file is missing (no freezer controller mounted) or cannot be written', async () => {
    const missing = await host({ unified: false, procCgroup: v1Lines(ID), files: {} });
    expect(await freezerFileOf(ID, 42, missing)).toBeUndefined();
    if (process.getuid?.() === 0) return; // root writes a 0444 file: the read-only case is a mount then (EROFS), not a mode
    const ro = await host({ unified: false, procCgroup: v1Lines(ID), files: { [`freezer/docker/${ID}/freezer.state`]: 'THAWED\n' } });
    await chmod(join(ro.cgroup, 'freezer/docker', ID, 'freezer.state'), 0o444);
    expect(await freezerFileOf(ID, 42, ro)).toBeUndefined();
  });

  it('never leaves the cgroup root, whatever the /proc line says', async () => {
    const roots = await host({ unified: true, procCgroup: `0::/../../${ID}\n`, files: {} });
    await mkdir(join(roots.cgroup, '..', ID), { recursive: true });
    await writeFile(join(roots.cgroup, '..', ID, 'cgroup.freeze'), '0\n');
    expect(await freezerFileOf(ID, 42, roots)).toBeUndefined();
  });

  it('a v1 host ignores the 0:: line; a unified host ignores v1 lines', async () => {
    const v1 = await host({ unified: false, procCgroup: `0::/docker/${ID}\n`, files: { [`docker/${ID}/cgroup.freeze`]: '0\n' } });
    expect(await freezerFileOf(ID, 42, v1)).toBeUndefined();
    const v2 = await host({ unified: true, procCgroup: `6:freezer:/docker/${ID}\n`, files: { [`freezer/docker/${ID}/freezer.state`]: 'THAWED\n' } });
    expect(await freezerFileOf(ID, 42, v2)).toBeUndefined();
  });

  it('a write to a freezer gone with its container fails (the caller opens the container again)', async () => {
    const roots = await host({ unified: false, procCgroup: v1Lines(ID), files: { [`freezer/docker/${ID}/freezer.state`]: 'THAWED\n' } });
    const f = (await freezerFileOf(ID, 42, roots))!;
    await rm(join(roots.cgroup, 'freezer/docker', ID), { recursive: true });
    await expect(setFrozen(f, false)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
