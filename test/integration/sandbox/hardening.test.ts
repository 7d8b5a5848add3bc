// Every hardening default, proven from inside the container, and each one
// shown to be an option (a second container with the options loosened).
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerName, type Sandbox, type SandboxManager } from '../../../services/sandbox/index.ts';
import { CGROUP_LIMITS, parseLimits } from './cgroup.ts';
import { bash, docker, newManager, reapAll, requireImage, sessionId, testPrefix } from './helpers.ts';
import { SANDBOX_SOURCES, sandboxFrom } from './sandbox-source.ts';

const prefix = testPrefix('hard');
let manager: SandboxManager;
let sb: Sandbox;

beforeAll(async () => {
  await requireImage();
  manager = newManager(prefix);
});
afterAll(() => reapAll(manager, prefix));

const out = async (script: string) => {
  const r = await bash(sb, script);
  expect(r.stderr, script).toBe('');
  return r.stdout!.trim();
};
const procStatus = async (field: string) => (await out(`grep '^${field}:' /proc/self/status`)).split(/\s+/)[1];

/** Resolves true when something accepts TCP connections on the host's 127.0.0.1:port. */
function hostPortOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

describe.each(SANDBOX_SOURCES)('on a %s sandbox', (source) => {
  let closeSource = async () => {};
  beforeAll(async () => {
    ({ sb, close: closeSource } = await sandboxFrom(source, manager, prefix));
  });
  afterAll(() => closeSource());

  describe('default hardening, seen from inside', () => {
    it('runs as a non-root user', async () => {
      expect(await out('id -u')).toBe('1000');
      expect(await out('id -g')).toBe('1000');
    });

    it('has no network interface but loopback and cannot reach the host Redis', async () => {
      expect(await out('ls /sys/class/net')).toBe('lo');
      // The port is open on the host, so a refusal inside proves isolation, not a dead Redis.
      expect(await hostPortOpen(6379)).toBe(true);
      const r = await bash(sb, 'timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/6379" && echo connected');
      expect(r.ok).toBe(false);
      expect(r.stdout).not.toContain('connected');
      expect(r.stderr).toMatch(/Connection refused|Network is unreachable/);
    });

    it('drops every capability and sets no-new-privileges', async () => {
      expect(await procStatus('CapEff')).toBe('0000000000000000');
      expect(await procStatus('CapBnd')).toBe('0000000000000000');
      expect(await procStatus('NoNewPrivs')).toBe('1');
    });

    it('has a read-only root filesystem with a writable tmpfs /tmp', async () => {
      for (const target of ['/etc/evil', '/usr/bin/evil', '/opt/thinkflow/executor/main.mjs']) {
        const r = await bash(sb, `echo x > ${target}`);
        expect(r.ok, target).toBe(false);
        expect(r.stderr).toMatch(/Read-only file system|Permission denied/);
      }
      expect(await out('echo hi > /tmp/t && cat /tmp/t && stat -f -c %T /tmp')).toBe('hi\ntmpfs');
    });

    it('has no Docker socket and no host path mounted but its own egress directory', async () => {
      expect((await bash(sb, 'test -e /var/run/docker.sock || test -e /run/docker.sock')).exit_code).toBe(1);
      const info = await docker.getContainer(containerName(prefix, sb.sessionId)).inspect();
      const volume = info.Mounts.find((m) => m.Type === 'volume')!.Name;
      // The workspace volume, once more under a root-only directory (its private area: baseline-private.test.ts),
      // and the session's egress directory below that root-only directory too (egress-relay.test.ts).
      expect(info.Mounts.map((m) => [m.Type, m.Destination, m.Type === 'bind' ? m.Source : m.Name]).sort()).toEqual([
        ['bind', '/var/lib/thinkflow/egress', `/var/lib/thinkflow/egress/${containerName(prefix, sb.sessionId)}`],
        ['volume', '/var/lib/thinkflow/ws', volume], ['volume', '/workspace', volume],
      ]);
      expect(info.HostConfig.Binds ?? []).toEqual([]);
      expect(info.HostConfig.Privileged).toBe(false);
    });

    it('sets pids, memory (no swap), cpu and nofile limits', async () => {
      expect(parseLimits(await out(CGROUP_LIMITS))).toMatchObject({ pidsMax: 256, memBytes: 1024 ** 3, swapBytes: 0, cpuMillis: 1000 });
      expect(await out('ulimit -Sn; ulimit -Hn')).toBe('4096\n4096');
    });
  });

  describe('limits under attack', () => {
    it('a fork loop hits the pids limit; the sandbox and the host stay healthy', async () => {
      const r = await bash(sb, `python3 -c "
import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as e:
    print(n, e.errno)
"`, { timeout: 30 });
      const [forked, errno] = r.stdout!.trim().split(' ').map(Number);
      expect(errno).toBe(11); // EAGAIN from the pids cgroup
      expect(forked).toBeGreaterThan(100);
      expect(forked).toBeLessThan(256);
      // A classic bomb with a live parent: stopped by the timeout, whole group killed.
      const bomb = await bash(sb, ':(){ :|:& };: ; sleep 30', { timeout: 3 });
      expect(bomb).toMatchObject({ ok: false, error_code: 'timeout' });
      expect(parseLimits(await out(CGROUP_LIMITS)).pidsCurrent).toBeLessThan(40);
      expect(await manager.ping()).toBe(true);
      expect(execFileSync('sh', ['-c', 'echo host-ok']).toString()).toBe('host-ok\n');
    });

    it('a memory hog is killed and the executor survives', async () => {
      const r = await bash(sb, 'python3 -c "s = bytearray(1536 * 1024 * 1024); s[::4096] = b\'x\' * len(s[::4096]); print(\'survived\')"');
      expect(r.ok).toBe(false);
      expect(r.exit_code).toBe(137);
      expect(r.stdout).not.toContain('survived');
      expect(await out('echo still-here')).toBe('still-here');
    });

    it('a sleep past its timeout is killed with its whole process group and reported', async () => {
      const t0 = Date.now();
      const r = await bash(sb, 'sleep 300 & sleep 30', { timeout: 1 });
      expect(r).toMatchObject({ ok: false, error_code: 'timeout', exit_code: 137 });
      expect(r.error).toMatch(/timed out after 1 s/);
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect((await bash(sb, 'pgrep -x sleep')).exit_code).toBe(1);
    });

    it('an output flood is capped at 64 KiB per stream and marked truncated', async () => {
      const r = await bash(sb, 'yes | head -c 5000000; yes e | head -c 3000000 >&2');
      expect(r.ok).toBe(true);
      expect(Buffer.byteLength(r.stdout!)).toBe(65536);
      expect(Buffer.byteLength(r.stderr!)).toBe(65536);
      expect(r).toMatchObject({ stdout_truncated: true, stderr_truncated: true });
      const small = await bash(sb, 'echo small');
      expect(small).toMatchObject({ stdout_truncated: false, stderr_truncated: false });
    });

    it('an abort signal kills a running command', async () => {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 300);
      const t0 = Date.now();
      const r = await sb.execute({ id: '999', tool: 'bash', cmd: 'sleep 300 & sleep 30', need_result: false }, { signal: ac.signal });
      expect(r).toMatchObject({ ok: false, error_code: 'aborted' });
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect((await bash(sb, 'pgrep -x sleep')).exit_code).toBe(1);
    });
  });
});

describe('every hardening item is an option', () => {
  const loosePrefix = testPrefix('loose');
  const loose = newManager(loosePrefix, {
    user: '0:0',
    capDrop: [],
    noNewPrivileges: false,
    readOnlyRootfs: false,
    networkMode: 'bridge',
    pidsLimit: 100,
    memoryBytes: 512 * 1024 ** 2,
    memorySwapBytes: 768 * 1024 ** 2,
    cpus: 0.5,
    nofile: 1024,
    outputCapBytes: 1000,
    bashTimeoutMs: 1500,
    tmpfs: { '/scratch': 'rw,size=8m' },
  });
  afterAll(() => reapAll(loose, loosePrefix));

  it('loosened options show up inside the container', async () => {
    const s = await loose.sandboxFor(sessionId());
    const r = await bash(
      s,
      [
        'id -u',
        "grep -E '^(CapEff|NoNewPrivs):' /proc/self/status | awk '{print $2}'",
        'touch /etc/ok && echo rootfs-writable',
        'ls /sys/class/net | grep -v lo',
        CGROUP_LIMITS,
        'ulimit -n',
        'stat -f -c %T /scratch',
      ].join('; '),
    );
    expect(r.stdout!.trim().split('\n')).toEqual([
      '0',
      expect.not.stringMatching(/^0+$/),
      '0',
      'rootfs-writable',
      'eth0',
      expect.stringMatching(new RegExp(`^100 ${512 * 1024 ** 2} ${256 * 1024 ** 2} 500 \\d+$`)),
      '1024',
      'tmpfs',
    ]);
    const flood = await bash(s, 'yes | head -c 10000');
    expect(flood.stdout).toHaveLength(1000);
    // No timeout attribute: the configured default applies.
    const slow = await bash(s, 'sleep 20');
    expect(slow).toMatchObject({ ok: false, error_code: 'timeout' });
    expect(slow.duration_ms).toBeLessThan(5_000);
  });
});
