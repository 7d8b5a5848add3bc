// The executor's control socket (sandbox-image/executor/control-channel.mjs,
// services/sandbox/executor-socket.ts): the worker's requests go over it, not
// dockerd's attach stream. It must be the host service's alone: a command of
// the sandbox that reached it could ask the executor for anything.
import { chownSync, existsSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerName, type Sandbox, type SandboxManager } from '../../../services/sandbox/index.ts';
import { bash, cmd, docker, dockerExecRoot, newManager, reapAll, requireImage, sessionId, testPrefix, EXECUTOR_PID_PY } from './helpers.ts';

const prefix = testPrefix('ctl');
let manager: SandboxManager;
let sid: string;
let sb: Sandbox;

const socketOf = (s: string) => path.join(path.dirname(manager.egressSocketPath(s)), 'executor.sock');

// Every way a command could name the socket: its path, /proc/1/root, the executor's root and descriptors.
const probe = `python3 -c '
import os, socket
tail = "var/lib/thinkflow/egress/executor.sock"
${EXECUTOR_PID_PY}
paths = ["/" + tail, "/proc/1/root/" + tail, "/proc/%s/root/%s" % (pid, tail)]
try:
    fds = os.listdir("/proc/%s/fd" % pid)
except OSError:
    fds = [str(i) for i in range(64)]
paths += ["/proc/%s/fd/%s" % (pid, fd) for fd in fds] + ["/proc/%s/fd/%s/executor.sock" % (pid, fd) for fd in fds]
reached = []
for p in paths:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p)
        s.sendall(b"{\\"rid\\":\\"x\\",\\"op\\":\\"ping\\"}\\n")
        reached.append(p)
    except OSError:
        pass
print(len(paths) > 60, reached)'`;

beforeAll(async () => {
  await requireImage();
  manager = newManager(prefix);
  sid = sessionId();
  sb = await manager.sandboxFor(sid);
  await sb.execute(cmd({ tool: 'write', path: 'keep.txt', content: 'kept' }));
});
afterAll(async () => {
  await reapAll(manager, prefix);
});

describe('the executor control socket', () => {
  it('is in the session\'s directory, a socket of mode 0600 owned by the service\'s uid', () => {
    const st = lstatSync(socketOf(sid));
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    expect(st.uid).toBe(process.geteuid!());
  });

  it('is closed to commands by every path a command can name', async () => {
    const r = await bash(sb, probe);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('True []\n');
  });

  it('while root in the container reaches it (so the refusal above is the permissions, not a wrong path)', async () => {
    const out = await dockerExecRoot(containerName(prefix, sid), probe);
    expect(out).toContain("'/var/lib/thinkflow/egress/executor.sock'");
  });

  it('a stopped container starts again with a fresh socket, and the files are there', async () => {
    await docker.getContainer(containerName(prefix, sid)).stop({ t: 1 });
    expect(await sb.execute(cmd({ tool: 'read', path: 'keep.txt' }))).toMatchObject({ ok: true, stdout: 'kept' });
    // Served over the socket again: output thrown on the container's stdout reaches no request.
    const running = bash(sb, 'sleep 0.5; echo done', { timeout: 5 });
    await dockerExecRoot(containerName(prefix, sid), 'head -c 8M /dev/zero > /proc/1/fd/1');
    expect(await running).toMatchObject({ ok: true, stdout: 'done\n' });
  });

  it('an executor without the socket (an image from before it) is served over the attach stream', async () => {
    const other = sessionId();
    const first = await manager.sandboxFor(other);
    await first.execute(cmd({ tool: 'write', path: 'a.txt', content: 'a' }));
    await dockerExecRoot(containerName(prefix, other), 'rm /var/lib/thinkflow/egress/executor.sock');
    const second = newManager(prefix);
    try {
      const sb2 = await second.sandboxFor(other);
      expect(await sb2.execute(cmd({ tool: 'read', path: 'a.txt' }))).toMatchObject({ ok: true, stdout: 'a' });
    } finally {
      await second.close();
      await manager.remove(other);
    }
  });

  it('a socket replaced from inside the container by a link to another session\'s never serves this session', async () => {
    const a = sessionId();
    const b = sessionId();
    const sbA = await manager.sandboxFor(a);
    const sbB = await manager.sandboxFor(b);
    await sbA.execute(cmd({ tool: 'write', path: 'whoami.txt', content: 'A' }));
    await sbB.execute(cmd({ tool: 'write', path: 'whoami.txt', content: 'B' }));
    // Root in A (an escalation this test grants) can write its host directory: it points its socket at B's.
    const other = path.basename(path.dirname(manager.egressSocketPath(b)));
    await dockerExecRoot(containerName(prefix, a), `ln -sfn ../${other}/executor.sock /var/lib/thinkflow/egress/executor.sock`);
    const worker = newManager(prefix); // the next worker to connect to A (a restart, another process)
    try {
      const again = await worker.sandboxFor(a);
      expect(await bash(again, 'cat whoami.txt')).toMatchObject({ ok: true, stdout: 'A' });
      // and a real socket of B's moved in place of A's: answered by another executor, so dropped too
      await dockerExecRoot(containerName(prefix, a), 'rm /var/lib/thinkflow/egress/executor.sock');
      const worker2 = newManager(prefix);
      try {
        const { renameSync } = await import('node:fs');
        renameSync(socketOf(b), socketOf(a));
        expect(await bash(await worker2.sandboxFor(a), 'cat whoami.txt')).toMatchObject({ ok: true, stdout: 'A' });
      } finally {
        await worker2.close();
      }
    } finally {
      await worker.close();
      await manager.remove(a);
      await manager.remove(b);
    }
  });

  it('is bound as the owner of the session\'s directory (a service that is not root), and not at all in one of the command user\'s', async () => {
    for (const [uid, bound] of [[4242, true], [1000, false]] as const) {
      const s = sessionId();
      await manager.prepareEgress(s);
      chownSync(path.dirname(manager.egressSocketPath(s)), uid, uid);
      try {
        const box = await manager.sandboxFor(s); // served over the attach stream: the socket is not this (root) service's
        expect(await box.execute(cmd({ tool: 'write', path: 'x.txt', content: 'x' }))).toMatchObject({ ok: true });
        expect(existsSync(socketOf(s))).toBe(bound);
        if (bound) expect([lstatSync(socketOf(s)).uid, lstatSync(socketOf(s)).mode & 0o777]).toEqual([uid, 0o600]);
      } finally {
        await manager.remove(s);
      }
    }
  });
});
