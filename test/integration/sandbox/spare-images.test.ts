// Spare workspace images (spare-images.ts): template copies made ahead and
// attached to a loop device, so a new session's first attach is a rename.
// A spare goes to exactly one session, a spare whose device went away is
// never handed over by number, and nothing of them outlives close or the reaper.
import { execFileSync } from 'node:child_process';
import { readdirSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxManager } from '../../../services/sandbox/index.ts';
import { bash, hostLeftovers, newManager, reapAll, requireImage, sessionId, testPrefix, WORKSPACE_DIR } from './helpers.ts';

const MiB = 1024 ** 2;
const prefix = testPrefix('spare');
let manager: SandboxManager;

beforeAll(async () => {
  await requireImage();
  manager = newManager(prefix, { workspaceQuotaBytes: 64 * MiB, workspaceInodes: 4096, workspaceSpares: 2 });
  expect(await manager.workspaceMode()).toBe('loop');
});
afterAll(() => reapAll(manager, prefix));

const spares = (p = prefix) => readdirSync(WORKSPACE_DIR).filter((n) => n.startsWith(`${p}spare-`) && n.endsWith('.spare')).map((n) => path.join(WORKSPACE_DIR, n));
const loopsOf = (file: string) => execFileSync('losetup', ['-n', '-O', 'NAME', '-j', file], { encoding: 'utf8' }).split('\n').filter(Boolean);

async function until(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
  for (const end = Date.now() + ms; !ok(); await new Promise((r) => setTimeout(r, 50))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
  }
}

describe('spare workspace images', () => {
  it('are made at start, each on its own loop device; a new session takes one (its device with it) and the pool refills', async () => {
    await manager.start();
    await until('2 spares', () => spares().length === 2);
    const before = new Map(spares().map((f) => [f, loopsOf(f)]));
    for (const devs of before.values()) expect(devs).toEqual([expect.stringMatching(/^\/dev\/loop\d+$/)]);
    const held = new Set([...before.values()].flat());

    const sid = sessionId();
    const sb = await manager.sandboxFor(sid);
    const image = (await manager.workspaceImage(sid))!;
    const [dev, ...more] = loopsOf(image);
    expect(more).toEqual([]);
    expect(held.has(dev!)).toBe(true); // a spare's device, not a new attachment
    expect(spares().filter((f) => before.has(f))).toHaveLength(1);
    // A full, private filesystem of the quota's size, owned by the command user.
    const r = await bash(sb, 'echo hi > f && cat f && stat -c %u . && df -B1M --output=size . | tail -1');
    const [hi, owner, size] = (r.stdout ?? '').split('\n').map((l) => l.trim());
    expect([r.ok, hi, owner]).toEqual([true, 'hi', '1000']);
    expect(Number(size)).toBeGreaterThan(48);
    expect(Number(size)).toBeLessThanOrEqual(64);
    await until('the pool refilled', () => spares().length === 2);
    await manager.remove(sid);
    expect(loopsOf(spares()[0]!)).toHaveLength(1);
  });

  it('a spare whose loop device was detached outside is not handed over by number: the session gets a device of its own', async () => {
    await until('2 spares', () => spares().length === 2);
    for (const f of spares()) for (const d of loopsOf(f)) execFileSync('losetup', ['-d', d]);
    const sid = sessionId();
    const sb = await manager.sandboxFor(sid);
    const image = (await manager.workspaceImage(sid))!;
    expect(loopsOf(image)).toHaveLength(1);
    expect(await bash(sb, 'echo ok > g && cat g')).toMatchObject({ ok: true, stdout: 'ok\n' });
    await manager.remove(sid);
    expect(hostLeftovers(prefix).images.filter((n) => n.endsWith('.img'))).toEqual([]);
  });

  it('the reaper removes spares left by a process gone (old ones) with their devices; close removes its own', async () => {
    const other = `${prefix}x-`;
    const gone = newManager(other, { workspaceQuotaBytes: 64 * MiB, workspaceInodes: 4096, workspaceSpares: 1 });
    await gone.start();
    await until('a spare of the other process', () => spares(other).length === 1);
    const [left] = spares(other);
    const old = new Date(Date.now() - 2 * 86_400_000);
    utimesSync(left!, old, old);
    const reaper = newManager(other, { workspaceQuotaBytes: 64 * MiB, workspaceInodes: 4096 });
    expect(await reaper.reap({ idleTtlMs: 86_400_000 })).toMatchObject({ failed: 0 });
    expect(spares(other)).toEqual([]);
    expect(hostLeftovers(other)).toEqual({ images: [], loops: [] });
    await gone.close(); // its spare was reaped meanwhile: nothing to do, no error
    await reaper.close();

    await until('2 spares', () => spares().length === 2);
    const own = spares();
    await manager.close();
    expect(spares()).toEqual([]);
    for (const f of own) expect(hostLeftovers(prefix).loops.filter((l) => l.includes(path.basename(f)))).toEqual([]);
    manager = newManager(prefix); // for afterAll's reap
  });
});
