// Two ways of pausing on one engine (frozen-container.ts): a process that writes
// the cgroup freezer (`auto`) beside one that uses `docker pause` (`docker`, or a
// worker that cannot see the host's cgroups). Docker's paused flag and the real
// freezer must never stay apart: every use still answers, files intact.
// (Reproductions of the review of the direct freezer, helper-55.)
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerName, type SandboxManager } from '../../../services/sandbox/index.ts';
import { freezerFileOf, setFrozen } from '../../../services/sandbox/freezer.ts';
import { frozenNow } from '../../../services/sandbox/frozen-container.ts';
import { cmd, docker, newManager, requireImage, sessionId } from './helpers.ts';

const prefix = `tfmix-${randomBytes(3).toString('hex')}-`;
const managers: SandboxManager[] = [];
const mk = (pauseWith: 'auto' | 'docker') => {
  const m = newManager(prefix, { idlePauseMs: 3_600_000, pauseWith, workspaceFs: 'watchdog', startTimeoutMs: 5_000, requestTimeoutMs: 5_000 });
  managers.push(m);
  return m;
};
beforeAll(() => requireImage());
afterAll(async () => {
  await managers[0]?.reap({ liveSessions: new Set() });
  for (const m of managers) await m.close();
});

const inspect = (sid: string) => docker.getContainer(containerName(prefix, sid)).inspect();
const read = (path: string) => cmd({ tool: 'read', path });

describe('two ways of pausing on one engine', () => {
  it("a cgroup thaw after another process paused through Docker: Docker's flag is put right by the next unpause, every use answers", async () => {
    const a = mk('auto');
    const b = mk('docker');
    const sid = sessionId();
    const sa = await a.sandboxFor(sid);
    expect(await sa.execute(cmd({ tool: 'write', path: 'f.txt', content: 'hello' }))).toMatchObject({ ok: true });
    const sb = await b.sandboxFor(sid);
    expect(await a.pause(sid)).toBe(true); // A: through the cgroup
    expect(await sb.execute(read('f.txt'))).toMatchObject({ ok: true, stdout: 'hello' }); // B's late answer thaws it
    expect(await b.pause(sid)).toBe(true); // B: through Docker
    expect((await inspect(sid)).State.Paused).toBe(true);
    // A still holds its own freeze: its next command thaws it through the cgroup, under Docker's flag.
    expect(await sa.execute(read('f.txt'))).toMatchObject({ ok: true, stdout: 'hello' });
    // Every later use: a `docker exec` (the archive), B's next command (its unpause), a fresh opener.
    await expect(a.workspace.archive(sid, 'tar')).resolves.toBeDefined();
    expect(await sb.execute(read('f.txt'))).toMatchObject({ ok: true, stdout: 'hello' });
    expect(await (await mk('auto').sandboxFor(sid)).execute(read('f.txt'))).toMatchObject({ ok: true, stdout: 'hello' });
    const info = await inspect(sid);
    expect([info.State.Paused, await frozenNow(info)]).toEqual([false, false]);
  });

  it('a Docker pause of a container another process froze through its cgroup counts as paused, and its thaw answers', async () => {
    const a = mk('auto');
    const b = mk('docker');
    const sid = sessionId();
    const sa = await a.sandboxFor(sid);
    expect(await sa.execute(cmd({ tool: 'write', path: 'g.txt', content: 'kept' }))).toMatchObject({ ok: true });
    const sb = await b.sandboxFor(sid);
    expect(await sb.execute(read('g.txt'))).toMatchObject({ ok: true });
    expect(await a.pause(sid)).toBe(true);
    expect(await b.pause(sid)).toBe(true); // runc refuses ("container not running"): frozen already
    expect(await sb.execute(read('g.txt'))).toMatchObject({ ok: true, stdout: 'kept' });
    expect(await frozenNow(await inspect(sid))).toBe(false);
    expect(await sa.execute(read('g.txt'))).toMatchObject({ ok: true, stdout: 'kept' });
  });

  it('a Docker unpause refused by runc (the cgroup thawed under Docker\'s flag) is put right by freezing it again first', async () => {
    const b = mk('docker');
    const sid = sessionId();
    const sb = await b.sandboxFor(sid);
    expect(await sb.execute(cmd({ tool: 'write', path: 'h.txt', content: 'here' }))).toMatchObject({ ok: true });
    expect(await b.pause(sid)).toBe(true);
    const info = await inspect(sid);
    await setFrozen((await freezerFileOf(info.Id, info.State.Pid))!, false); // the stale cgroup thaw, from outside
    expect(await sb.execute(read('h.txt'))).toMatchObject({ ok: true, stdout: 'here' });
    const after = await inspect(sid);
    expect([after.State.Paused, await frozenNow(after)]).toEqual([false, false]);
  });
});
