// The sandbox side of network egress (POLICY.md §8): a command's proxy
// connection goes to the executor's relay on 127.0.0.1:3128 in the container,
// which carries it over the session's bind-mounted Unix socket to the egress
// proxy of the worker host (here a fake one). Everything stays on loopback:
// the fake proxy sends every name to a test server on the host's 127.0.0.1.
import { existsSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerName, type Sandbox, type SandboxManager } from '../../../services/sandbox/index.ts';
import { BIG_BYTES, BIG_SHA256, PACKUMENT_NAME, startFakeProxy, startUpstream, type FakeProxy, type Upstream } from './egress-fixtures.ts';
import { bash, docker, dockerExecRoot, newManager, reapAll, requireImage, sessionId, testPrefix, EXECUTOR_PID_PY } from './helpers.ts';

const prefix = testPrefix('egress');
let manager: SandboxManager;
let upstream: Upstream;
let sid: string;
let sb: Sandbox;
let proxy: FakeProxy;
let target: string; // the name the commands ask for, mapped to the upstream by the fake proxy

const py = (code: string) => `python3 -c '${code}'`;
const PROXY_VARS = 'HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy';

beforeAll(async () => {
  await requireImage();
  manager = newManager(prefix);
  upstream = await startUpstream();
  target = `upstream.test:${upstream.port}`;
  sid = sessionId();
  sb = await manager.sandboxFor(sid);
  proxy = await startFakeProxy(manager.egressSocketPath(sid), upstream.port);
});
afterAll(async () => {
  await proxy?.close();
  await upstream?.close();
  await reapAll(manager, prefix);
});

describe('the egress directory on the host', () => {
  it('is the session\'s own, mode 0711 in a root-only 0700 root, made before the container and mounted at /var/lib/thinkflow/egress', async () => {
    const dir = path.dirname(manager.egressSocketPath(sid));
    expect(path.basename(dir)).toBe(containerName(prefix, sid));
    expect(statSync(dir).mode & 0o777).toBe(0o711);
    expect(statSync(path.dirname(dir)).mode & 0o777).toBe(0o700);
    expect(await manager.prepareEgress(sid)).toBe(manager.egressSocketPath(sid));
    const info = await docker.getContainer(containerName(prefix, sid)).inspect();
    const binds = info.Mounts.filter((m) => m.Type === 'bind');
    expect(binds.map((m) => [m.Source, m.Destination, m.RW])).toEqual([[dir, '/var/lib/thinkflow/egress', true]]);
  });
});

describe('commands reach the network only through the relay', () => {
  it('get the proxy settings of every tool in their clean environment', async () => {
    const r = await bash(sb, `for v in ${PROXY_VARS} NO_PROXY no_proxy npm_config_proxy npm_config_https_proxy PIP_PROXY; do echo "$v=\${!v}"; done; git config http.proxy`);
    expect(r.stdout).toBe([
      ...PROXY_VARS.split(' ').map((v) => `${v}=http://127.0.0.1:3128`),
      'NO_PROXY=localhost,127.0.0.1,::1', 'no_proxy=localhost,127.0.0.1,::1',
      'npm_config_proxy=http://127.0.0.1:3128', 'npm_config_https_proxy=http://127.0.0.1:3128', 'PIP_PROXY=http://127.0.0.1:3128',
      'http://127.0.0.1:3128', '',
    ].join('\n'));
  });

  it('python3 urllib fetches a plain HTTP URL through the proxy', async () => {
    proxy.asked.length = 0;
    const r = await bash(sb, py(`import urllib.request; print(urllib.request.urlopen("http://${target}/hello", timeout=10).read().decode())`));
    expect(r.stdout).toBe('hello from upstream\n');
    expect(proxy.asked).toEqual([target]);
  });

  it('a CONNECT tunnel carries bytes both ways', async () => {
    proxy.asked.length = 0;
    const r = await bash(sb, py(`
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"CONNECT ${target} HTTP/1.1\\r\\nHost: ${target}\\r\\n\\r\\n")
head = s.recv(4096)
assert head.startswith(b"HTTP/1.1 200"), head
s.sendall(b"GET /hello HTTP/1.1\\r\\nHost: ${target}\\r\\nConnection: close\\r\\n\\r\\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk: break
    data += chunk
print(data.split(b"\\r\\n\\r\\n", 1)[1].decode())`));
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('hello from upstream\n');
    expect(proxy.asked).toEqual([target]);
  });

  it('8 MiB arrive whole (backpressure through the relay)', async () => {
    const r = await bash(sb, py(`
import hashlib, urllib.request
body = urllib.request.urlopen("http://${target}/big", timeout=30).read()
print(len(body), hashlib.sha256(body).hexdigest())`));
    expect(r.stdout).toBe(`${BIG_BYTES} ${BIG_SHA256}\n`);
  });

  it('git clones over HTTP with its own proxy setting', async () => {
    proxy.asked.length = 0;
    const r = await bash(sb, `env -u http_proxy -u HTTP_PROXY -u all_proxy -u ALL_PROXY git clone -q http://${target}/repo.git /tmp/clone && cat /tmp/clone/README; rm -rf /tmp/clone`);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('cloned through the egress relay\n');
    expect(new Set(proxy.asked)).toEqual(new Set([target]));
  });

  it('npm asks its registry through the proxy', async () => {
    proxy.asked.length = 0;
    const r = await bash(sb, `npm view --registry http://${target}/ ${PACKUMENT_NAME} version`, { timeout: 60 });
    expect(r.stdout?.trim()).toBe('1.2.3');
    expect(proxy.asked).toContain(target);
  });

  it('a command\'s own servers on its loopback bypass the proxy (NO_PROXY)', async () => {
    proxy.asked.length = 0;
    const r = await bash(sb, `python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp >/dev/null 2>&1 & echo mine > /tmp/mine.txt
for i in $(seq 50); do ${py('import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:8000/mine.txt", timeout=2).read().decode(), end="")')} 2>/dev/null && break; sleep 0.1; done`);
    expect(r.stdout).toBe('mine\n');
    expect(proxy.asked).toEqual([]);
  });

  it('a command that unsets the proxy variables reaches nothing with a raw socket (no route at all)', async () => {
    // Checked first, in the same command: with any IPv4 route besides loopback's the connect is not even tried.
    const r = await bash(sb, `env -u ${PROXY_VARS.split(' ').join(' -u ')} ${py(`
import socket, sys
routes = open("/proc/net/route").read().splitlines()[1:]
if routes: sys.exit("HAS_ROUTE %r" % routes)
try:
    socket.create_connection(("10.0.0.1", 80), timeout=2)
except OSError as e:
    print(e.strerror)`)}`);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('Network is unreachable\n');
  });
});

describe('another session\'s socket', () => {
  it('is not in this sandbox, and this sandbox\'s own is root\'s alone', async () => {
    const other = sessionId();
    await manager.sandboxFor(other);
    const otherProxy = await startFakeProxy(manager.egressSocketPath(other), upstream.port);
    try {
      const asRoot = await dockerExecRoot(containerName(prefix, sid), 'ls -A /var/lib/thinkflow/egress; grep -c " /var/lib/thinkflow/egress " /proc/self/mountinfo');
      expect(asRoot).toBe('egress.sock\nexecutor.sock\n1\n');
      const r = await bash(sb, `ls /var/lib/thinkflow/egress; ${py(`
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("/var/lib/thinkflow/egress/egress.sock")
except OSError as e:
    print(e.strerror)`)}`);
      expect(r.stderr).toContain('Permission denied');
      expect(r.stdout).toBe('Permission denied\n');
      expect(otherProxy.asked).toEqual([]);
    } finally {
      await otherProxy.close();
      await manager.remove(other);
    }
  });
});

describe('the relay\'s own way to the socket', () => {
  // Every way a command could name the socket outside /var/lib/thinkflow: /proc/1/root, the executor's root, its descriptors.
  const probe = py(`
import os, socket
tail = "var/lib/thinkflow/egress/egress.sock"
${EXECUTOR_PID_PY}
paths = ["/proc/1/root/" + tail, "/proc/%s/root/%s" % (pid, tail)]
try:
    fds, listing = os.listdir("/proc/%s/fd" % pid), "listed"
except OSError as e:
    fds, listing = [str(i) for i in range(64)], e.strerror
paths += ["/proc/%s/fd/%s/egress.sock" % (pid, fd) for fd in fds]
reached = []
for p in paths:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p)
        reached.append(p)
    except OSError:
        pass
print(len(paths) > 60, listing, reached)`);

  it('is closed to commands: not through /proc/1/root, the executor\'s root, nor any descriptor of the executor', async () => {
    proxy.asked.length = 0;
    const r = await bash(sb, probe);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('True Permission denied []\n');
    expect(proxy.asked).toEqual([]);
  });

  it('while the same probe as root in the container does reach it (so the refusal above is the permissions, not a wrong path)', async () => {
    const out = await dockerExecRoot(containerName(prefix, sid), probe);
    expect(out).toMatch(/^(True|False) .*\[.*'\/proc\/1\/root\/var\/lib\/thinkflow\/egress\/egress\.sock'/);
  });
});

describe('without a proxy', () => {
  it('the relay answers 503 "no egress proxy for this session", whether the socket is absent or dead', async () => {
    const lone = sessionId();
    const box = await manager.sandboxFor(lone);
    const fetch = py(`
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://${target}/hello", timeout=10)
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode(), end="")`);
    expect((await bash(box, fetch)).stdout).toBe('503 no egress proxy for this session\n');
    // A socket file nobody listens on (a proxy that died): refused, same answer.
    const socket = manager.egressSocketPath(lone);
    execFileSync('python3', ['-c', `import socket; socket.socket(socket.AF_UNIX).bind(${JSON.stringify(socket)})`]);
    expect(existsSync(socket)).toBe(true);
    expect((await bash(box, fetch)).stdout).toBe('503 no egress proxy for this session\n');
    await manager.remove(lone);
  });
});

describe('bounds', () => {
  const capPrefix = `${prefix}cap-`;
  let m: SandboxManager;
  let box: Sandbox;
  let holding: FakeProxy;
  beforeAll(async () => {
    m = newManager(capPrefix, { egressRelayMaxConnections: 3 });
    const capped = sessionId();
    box = await m.sandboxFor(capped);
    holding = await startFakeProxy(m.egressSocketPath(capped), upstream.port);
  });
  afterAll(async () => {
    await holding?.close();
    await reapAll(m, capPrefix);
  });

  it('relays at most egressRelayMaxConnections at once; the next gets a 503, a freed slot is used again', async () => {
    holding.asked.length = 0;
    const r = await bash(box, py(`
import socket, time
def ask(name):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    s.sendall(b"CONNECT " + name + b":1 HTTP/1.1\\r\\n\\r\\n")
    return s
held = [ask(b"hold%d" % i) for i in range(3)]
time.sleep(0.5)
print(ask(b"four").recv(4096).decode().splitlines()[-1])
held[0].close()
time.sleep(0.5)
held.append(ask(b"hold-after"))
time.sleep(0.5)`));
    expect(r.stdout).toBe('egress relay: 3 connections are already open in this sandbox\n');
    expect(holding.asked.sort()).toEqual(['hold-after:1', 'hold0:1', 'hold1:1', 'hold2:1']);
  });

  it('closes every relayed connection when its command ends, even one the proxy keeps half-open', async () => {
    holding.asked.length = 0;
    const stuck = py(`
import socket, time
s = [socket.create_connection(("127.0.0.1", 3128), timeout=5) for i in range(3)]
for i, c in enumerate(s): c.sendall(b"CONNECT stuck%d:1 HTTP/1.1\\r\\n\\r\\n" % i)
time.sleep(0.5)`);
    await bash(box, stuck);
    expect(holding.asked.sort()).toEqual(['stuck0:1', 'stuck1:1', 'stuck2:1']);
    // Their slots are free for the next command (else these three would get the 503).
    await bash(box, stuck);
    expect(holding.asked).toHaveLength(6);
  });

  it('a command opening 2,000 connections reaches the proxy with at most the cap, and the executor stays well', async () => {
    const before = holding.open(); // the earlier test's "stuck" tunnels, which this proxy never closes
    holding.maxOpen = 0;
    const r = await bash(box, py(`
import socket, time
socks, failed = [], 0
for i in range(2000):
    try:
        socks.append(socket.create_connection(("127.0.0.1", 3128), timeout=5))
    except OSError:
        failed += 1
refused = 0
for s in socks:
    s.settimeout(0.05)
    try:
        refused += s.recv(64).startswith(b"HTTP/1.1 503")
    except OSError:
        pass
print(len(socks) + failed, refused > 0)`), { timeout: 120 });
    expect(r.stdout).toBe('2000 True\n');
    expect(holding.maxOpen - before).toBeLessThanOrEqual(3);
    expect(holding.maxOpen - before).toBeGreaterThan(0);
    holding.asked.length = 0;
    const after = await bash(box, py(`import urllib.request; print(urllib.request.urlopen("http://${target}/hello", timeout=10).read().decode())`));
    expect(after.stdout).toBe('hello from upstream\n');
  });
});

describe('removal', () => {
  it('the egress directory goes with its session, idempotently', async () => {
    const gone = sessionId();
    await manager.sandboxFor(gone);
    const dir = path.dirname(manager.egressSocketPath(gone));
    expect(existsSync(dir)).toBe(true);
    await manager.remove(gone);
    expect(existsSync(dir)).toBe(false);
    await manager.remove(gone);
  });

  it('the reaper removes the directory of a session that is gone', async () => {
    const gone = sessionId();
    await manager.sandboxFor(gone);
    const dir = path.dirname(manager.egressSocketPath(gone));
    await manager.reap({ liveSessions: new Set([sid]) });
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(path.dirname(manager.egressSocketPath(sid)))).toBe(true);
  });
});
