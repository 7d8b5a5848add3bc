// Create, reuse, restart, recover and remove one container per session.
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerName, SandboxManager, volumeName } from '../../../services/sandbox/index.ts';
import path from 'node:path';
import { bash, cmd, docker, dockerExecRoot, hostLeftovers, leftovers, newManager, reapAll, requireImage, sessionId, testPrefix } from './helpers.ts';

const prefix = testPrefix('life');
let manager: SandboxManager;

beforeAll(async () => {
  await requireImage();
  manager = newManager(prefix);
});
afterAll(() => reapAll(manager, prefix));

const inspect = (sid: string) => docker.getContainer(containerName(prefix, sid)).inspect();

describe('one container per session', () => {
  it('is labelled with its session and reused by later calls', async () => {
    const sid = sessionId();
    const [a, b] = await Promise.all([manager.sandboxFor(sid), manager.sandboxFor(sid)]);
    expect(a).toBe(b);
    expect(a.sessionId).toBe(sid);
    const info = await inspect(sid);
    expect(info.Config.Labels).toMatchObject({ 'thinkflow.managed': 'true', 'thinkflow.session': sid });
    const vol = await docker.getVolume(volumeName(prefix, sid)).inspect();
    expect(vol.Labels).toMatchObject({ 'thinkflow.session': sid });
    expect((await leftovers(prefix)).containers.filter((n) => n === containerName(prefix, sid))).toHaveLength(1);
  });

  it('keeps separate workspaces per session', async () => {
    const [s1, s2] = [sessionId(), sessionId()];
    const a = await manager.sandboxFor(s1);
    const b = await manager.sandboxFor(s2);
    await a.execute(cmd({ tool: 'write', path: 'mine.txt', content: 'a' }));
    expect((await b.execute(cmd({ tool: 'read', path: 'mine.txt' }))).error_code).toBe('not_found');
  });

  it('is found again by a new manager after a restart, workspace intact', async () => {
    const sid = sessionId();
    const first = newManager(prefix);
    await (await first.sandboxFor(sid)).execute(cmd({ tool: 'write', path: 'keep.txt', content: 'kept' }));
    const id = (await inspect(sid)).Id;
    await first.close(); // detach only: the container keeps running
    expect((await inspect(sid)).State.Running).toBe(true);
    const second = newManager(prefix);
    const again = await second.sandboxFor(sid);
    expect((await inspect(sid)).Id).toBe(id);
    expect((await again.execute(cmd({ tool: 'read', path: 'keep.txt' }))).stdout).toBe('kept');
    await second.close();
  });

  it('restarts a stopped container and recovers from a killed one', async () => {
    const sid = sessionId();
    const sb = await manager.sandboxFor(sid);
    await sb.execute(cmd({ tool: 'write', path: 'f.txt', content: 'persist' }));
    await manager.stop(sid);
    // A workspace on its own filesystem: container and volume go, the image stays, detached.
    await expect(inspect(sid)).rejects.toMatchObject({ statusCode: 404 });
    const image = (await manager.workspaceImage(sid))!;
    // Other tests of this file keep their sessions: look at this one's image and device only.
    const mine = hostLeftovers(path.basename(image));
    expect(mine).toEqual({ images: [path.basename(image)], loops: [] });
    expect((await (await manager.sandboxFor(sid)).execute(cmd({ tool: 'read', path: 'f.txt' }))).stdout).toBe('persist');
    await docker.getContainer(containerName(prefix, sid)).kill();
    // The same Sandbox object brings its container back on the next command.
    const r = await sb.execute(cmd({ tool: 'read', path: 'f.txt' }));
    expect(r).toMatchObject({ ok: true, stdout: 'persist' });
  });

  it('a container killed from outside mid-command: that command fails clearly, the next gets a fresh container on the same volume', async () => {
    const sid = sessionId();
    const sb = await manager.sandboxFor(sid);
    await sb.execute(cmd({ tool: 'write', path: 'keep.txt', content: 'kept' }));
    const firstStart = (await inspect(sid)).State.StartedAt;
    const started = Date.now();
    const running = bash(sb, 'sleep 30', { timeout: 60 });
    await new Promise((r) => setTimeout(r, 500));
    await docker.getContainer(containerName(prefix, sid)).kill();
    const r = await running;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r).toMatchObject({ ok: false });
    expect({ code: r.error_code, error: r.error }).toEqual({ code: 'sandbox_unavailable', error: 'sandbox executor went away' });
    expect(await sb.execute(cmd({ tool: 'read', path: 'keep.txt' }))).toMatchObject({ ok: true, stdout: 'kept' });
    // Started anew (the same container restarted, or a new one): nothing of the killed one's processes or tmpfs is left.
    expect((await inspect(sid)).State.StartedAt).not.toBe(firstStart);
  });

  it('recovers from an executor that stops answering', async () => {
    const m = newManager(prefix, { requestTimeoutMs: 1_000 });
    const sb = await m.sandboxFor(sessionId());
    await sb.execute(cmd({ tool: 'write', path: 'keep.txt', content: 'kept' }));
    // Commands cannot reach the executor any more; a root `docker exec` plays
    // the fault (a wedged executor) by freezing it mid-command.
    const running = bash(sb, 'sleep 1', { timeout: 1 });
    await new Promise((r) => setTimeout(r, 300));
    await dockerExecRoot(containerName(prefix, sb.sessionId), 'kill -STOP $(pgrep -x node)');
    expect(await running).toMatchObject({ ok: false, error_code: 'sandbox_timeout' });
    expect(await sb.execute(cmd({ tool: 'read', path: 'keep.txt' }))).toMatchObject({ ok: true, stdout: 'kept' });
    await m.close();
  });

  it('an executor that sends an oversized line is declared broken; the next command gets a fresh container on the same volume', async () => {
    // On the attach stream, where root outside the executor can still write; the control socket's client is the same code (executor-client.test.ts).
    const m = newManager(prefix, { maxFrameBytes: 4 * 1024 * 1024, executorChannel: 'attach' });
    const sb = await m.sandboxFor(sessionId());
    const name = containerName(prefix, sb.sessionId);
    await sb.execute(cmd({ tool: 'write', path: 'keep.txt', content: 'kept' }));
    const firstId = (await docker.getContainer(name).inspect()).Id;
    // Only root outside the executor can write to the host channel now; play the fault with it.
    const running = bash(sb, 'sleep 2', { timeout: 5 });
    await new Promise((r) => setTimeout(r, 300));
    await dockerExecRoot(name, 'head -c 40M /dev/zero > /proc/1/fd/1');
    expect(await running).toMatchObject({ ok: false, error_code: 'sandbox_broken' });
    expect(await sb.execute(cmd({ tool: 'read', path: 'keep.txt' }))).toMatchObject({ ok: true, stdout: 'kept' });
    expect((await docker.getContainer(name).inspect()).Id).not.toBe(firstId);
    await m.close();
  });

  it('on the control socket, requests no longer pass the attach stream: 40 MiB on the container stdout touch nothing', async () => {
    const m = newManager(prefix, { maxFrameBytes: 4 * 1024 * 1024 });
    const sb = await m.sandboxFor(sessionId());
    const name = containerName(prefix, sb.sessionId);
    await sb.execute(cmd({ tool: 'write', path: 'keep.txt', content: 'kept' }));
    const firstId = (await docker.getContainer(name).inspect()).Id;
    const running = bash(sb, 'sleep 1; echo done', { timeout: 5 });
    await new Promise((r) => setTimeout(r, 300));
    await dockerExecRoot(name, 'head -c 40M /dev/zero > /proc/1/fd/1');
    expect(await running).toMatchObject({ ok: true, stdout: 'done\n' });
    expect((await docker.getContainer(name).inspect()).Id).toBe(firstId);
    await m.close();
  });

  it('serialises overlapping commands of one session', async () => {
    const sb = await manager.sandboxFor(sessionId());
    const results = await Promise.all([
      bash(sb, 'sleep 0.3; echo first > order.txt'),
      sb.execute(cmd({ tool: 'append', path: 'order.txt', content: 'second\n' })),
    ]);
    expect(results.map((r) => r.ok)).toEqual([true, true]);
    expect((await sb.execute(cmd({ tool: 'read', path: 'order.txt' }))).stdout).toBe('first\nsecond\n');
  });

  it('two managers attached to one container each get their own answers', async () => {
    const sid = sessionId();
    const other = newManager(prefix);
    const [a, b] = await Promise.all([manager.sandboxFor(sid), other.sandboxFor(sid)]);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => bash(i % 2 ? a : b, `echo ${i}`)),
    );
    expect(results.map((r) => r.stdout)).toEqual(Array.from({ length: 10 }, (_, i) => `${i}\n`));
    await other.close();
  });

  it('cancelRunning() stops a command another client started (a dead worker\'s), so the next one runs now', async () => {
    const sid = sessionId();
    const other = newManager(prefix);
    const a = await manager.sandboxFor(sid);
    const b = await other.sandboxFor(sid);
    const t0 = Date.now();
    const orphan = bash(a, 'sleep 30; echo late > late.txt');
    await new Promise((r) => setTimeout(r, 500));
    expect(await b.cancelRunning()).toBe(1);
    const next = await bash(b, 'echo next');
    expect(next.stdout).toBe('next\n');
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await orphan).ok).toBe(false);
    expect((await b.execute(cmd({ tool: 'read', path: 'late.txt' }))).error_code).toBe('not_found');
    expect(await b.cancelRunning()).toBe(0);
    await other.close();
  });

  it('remove() deletes the container, the volume and the workspace image', async () => {
    const sid = sessionId();
    await manager.sandboxFor(sid);
    await manager.remove(sid);
    await expect(inspect(sid)).rejects.toMatchObject({ statusCode: 404 });
    await expect(docker.getVolume(volumeName(prefix, sid)).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect(hostLeftovers(prefix).images.filter((n) => n.includes(sid))).toEqual([]);
    await manager.remove(sid); // idempotent
  });

  it('makes safe names from odd session ids', async () => {
    const sid = 'Ses:With/Odd..Chars';
    const sb = await manager.sandboxFor(sid);
    expect((await bash(sb, 'echo ok')).stdout).toBe('ok\n');
    expect((await inspect(sid)).Config.Labels['thinkflow.session']).toBe(sid);
    await manager.remove(sid);
  });
});

describe('docker reachability and a missing image', () => {
  it('ping() is true with a live engine and false without one', async () => {
    expect(await manager.ping()).toBe(true);
    const Docker = (await import('dockerode')).default;
    const dead = new SandboxManager({ docker: new Docker({ socketPath: '/nonexistent.sock' }), reapIntervalMs: 0 });
    expect(await dead.ping()).toBe(false);
    await expect(dead.sandboxFor(sessionId())).rejects.toThrow(/nonexistent\.sock|ENOENT/);
    expect(dead.status).toBe('idle'); // not stuck: a later call tries again
  });

  it('sandboxFor() names the fix when the image is missing', async () => {
    const m = newManager(prefix, { image: 'thinkflow/no-such-image:none' });
    await expect(m.sandboxFor(sessionId())).rejects.toThrow(/npm run sandbox:image/);
    await m.close();
  });

  it('a closed manager refuses new work but leaves containers running', async () => {
    const m = newManager(prefix);
    const sid = sessionId();
    await m.sandboxFor(sid);
    await m.close();
    expect(m.status).toBe('closed');
    await expect(m.sandboxFor(sid)).rejects.toThrow(/closed/);
    expect((await inspect(sid)).State.Running).toBe(true);
  });
});
