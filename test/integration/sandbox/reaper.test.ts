// The reaper: gone sessions, idle sessions, crash leftovers, and nothing left behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerName, type SandboxManager, volumeName } from '../../../services/sandbox/index.ts';
import { cmd, docker, leftovers, newManager, reapAll, requireImage, sessionId, testPrefix } from './helpers.ts';

const prefix = testPrefix('reap');
let manager: SandboxManager;

beforeAll(async () => {
  await requireImage();
  manager = newManager(prefix);
  // What crashed or interrupted earlier test runs left: idle for an hour means
  // no run is using it (a live run's executors report recent activity).
  const janitor = newManager('tft-', { idleTtlMs: 3_600_000 });
  await janitor.start();
  await janitor.close();
});
afterAll(() => reapAll(manager, prefix));

const exists = (sid: string) =>
  docker.getContainer(containerName(prefix, sid)).inspect().then(() => true, () => false);
const volumeExists = (sid: string) =>
  docker.getVolume(volumeName(prefix, sid)).inspect().then(() => true, () => false);

describe('reap', () => {
  it('removes sessions that are gone and keeps live ones', async () => {
    const [live, gone] = [sessionId(), sessionId()];
    await manager.sandboxFor(live);
    await manager.sandboxFor(gone);
    const r = await manager.reap({ liveSessions: new Set([live]) });
    expect(r).toEqual({ removedContainers: 1, removedVolumes: 1, stoppedContainers: 0, removedImages: 1, failed: 0 });
    expect(await exists(gone)).toBe(false);
    expect(await volumeExists(gone)).toBe(false);
    expect(await exists(live)).toBe(true);
    await manager.remove(live);
  });

  it('removes sessions idle past the TTL, and only those', async () => {
    const [idle, busy] = [sessionId(), sessionId()];
    const sbIdle = await manager.sandboxFor(idle);
    await sbIdle.execute(cmd({ tool: 'touch', path: 'x' }));
    await new Promise((r) => setTimeout(r, 1_500));
    const sbBusy = await manager.sandboxFor(busy);
    await sbBusy.execute(cmd({ tool: 'touch', path: 'x' }));
    const r = await manager.reap({ idleTtlMs: 1_000 });
    expect(r).toEqual({ removedContainers: 1, removedVolumes: 1, stoppedContainers: 0, removedImages: 1, failed: 0 });
    expect(await exists(idle)).toBe(false);
    expect(await exists(busy)).toBe(true);
    // A reaped session comes back empty on its next use.
    const fresh = await manager.sandboxFor(idle);
    expect((await fresh.execute(cmd({ tool: 'read', path: 'x' }))).error_code).toBe('not_found');
    await manager.remove(idle);
    await manager.remove(busy);
  });

  it('on startup, cleans up what a crashed process left, judged by the executor activity', async () => {
    const crashed = newManager(prefix);
    const [stale, recent] = [sessionId(), sessionId()];
    await crashed.sandboxFor(stale);
    // Margins of more than a second on each side of the 3 s TTL: a loaded machine (CI) made the start-up reap take most of a second.
    await new Promise((r) => setTimeout(r, 2_500));
    await (await crashed.sandboxFor(recent)).execute(cmd({ tool: 'touch', path: 'y' }));
    // An orphan volume with no container, as a crash between the two creates leaves it.
    const orphan = sessionId();
    await docker.createVolume({
      Name: volumeName(prefix, orphan),
      Labels: { 'thinkflow.managed': 'true', 'thinkflow.session': orphan, 'thinkflow.kind': 'workspace' },
    });
    await new Promise((r) => setTimeout(r, 1_100));
    // No close(): the process "died". A new one starts with an idle TTL of 3 s.
    const next = newManager(prefix, { idleTtlMs: 3_000 });
    await next.start();
    expect(await exists(stale)).toBe(false);
    expect(await volumeExists(stale)).toBe(false);
    expect(await exists(recent)).toBe(true);
    expect(await volumeExists(orphan)).toBe(true); // created 1 s ago: could be a setup in progress
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await next.reap()).toEqual({ removedContainers: 1, removedVolumes: 2, stoppedContainers: 0, removedImages: 1, failed: 0 });
    expect(await volumeExists(orphan)).toBe(false);
    await next.close();
    await crashed.close();
  });

  it('never takes a session running a long command for idle', async () => {
    const sid = sessionId();
    const sb = await manager.sandboxFor(sid);
    const running = sb.execute(cmd({ tool: 'bash', cmd: 'sleep 2.5' }));
    await new Promise((r) => setTimeout(r, 1_500));
    // Judged locally (in-flight command) and by another process (the executor reports it busy).
    expect(await manager.reap({ idleTtlMs: 500 })).toEqual({ removedContainers: 0, removedVolumes: 0, stoppedContainers: 0, removedImages: 0, failed: 0 });
    const otherProcess = newManager(prefix);
    expect(await otherProcess.reap({ idleTtlMs: 500 })).toEqual({ removedContainers: 0, removedVolumes: 0, stoppedContainers: 0, removedImages: 0, failed: 0 });
    await otherProcess.close();
    expect((await running).ok).toBe(true);
    await manager.remove(sid);
  });

  it('stops a container idle past idleStopMs, keeps it and its workspace, and starts it on the next command', async () => {
    const m = newManager(prefix, { idleStopMs: 300 });
    const sid = sessionId();
    const sb = await m.sandboxFor(sid);
    await sb.execute(cmd({ tool: 'write', path: 'kept.txt', content: 'kept' }));
    // Busy (a command running) is never idle, however long it takes.
    const busy = sb.execute(cmd({ tool: 'bash', cmd: 'sleep 1' }));
    await new Promise((r) => setTimeout(r, 600));
    expect(await m.reap()).toMatchObject({ stoppedContainers: 0 });
    expect((await busy).ok).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    expect(await m.reap()).toEqual({ removedContainers: 0, removedVolumes: 0, stoppedContainers: 1, removedImages: 0, failed: 0 });
    // Stopped: with a filesystem per workspace its container goes and its image is detached (kept).
    expect(await docker.getContainer(containerName(prefix, sid)).inspect().then((i) => i.State.Running, () => false)).toBe(false);
    expect(await sb.execute(cmd({ tool: 'read', path: 'kept.txt' }))).toMatchObject({ ok: true, stdout: 'kept' });
    await m.remove(sid);
    await m.close();
  });

  it('leaves no container or volume of the test suite behind', async () => {
    for (let i = 0; i < 3; i++) await manager.sandboxFor(sessionId());
    expect((await leftovers(prefix)).containers.length).toBeGreaterThanOrEqual(3);
    const r = await manager.reap({ liveSessions: new Set() });
    expect(r.removedContainers).toBeGreaterThanOrEqual(3);
    expect(await leftovers(prefix)).toEqual({ containers: [], volumes: [], images: [], loops: [], egress: [] });
    // Every other test file asserts the same for its own prefix in afterAll (helpers.reapAll).
  });
});
