// Test stand-ins for the egress path, all on the host's 127.0.0.1: an
// upstream HTTP server, and a fake egress proxy on a session's Unix socket
// that maps every host to that upstream and records what it was asked.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const BIG_BYTES = 8 * 1024 * 1024;
const big = Buffer.alloc(BIG_BYTES, 'x');
export const BIG_SHA256 = createHash('sha256').update(big).digest('hex');

export const PACKUMENT_NAME = 'tf-egress-probe';

/** A bare git repository with one commit, served over git's dumb HTTP (static files). */
function makeRepo(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'tf-egress-repo-'));
  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'pipe', env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } });
  const work = path.join(root, 'work');
  git(root, 'init', '-q', '-b', 'main', work);
  execFileSync('bash', ['-c', 'echo "cloned through the egress relay" > README'], { cwd: work });
  git(work, 'add', 'README');
  git(work, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-q', '-m', 'one');
  git(root, 'clone', '-q', '--bare', work, path.join(root, 'repo.git'));
  git(path.join(root, 'repo.git'), 'update-server-info');
  return root;
}

export type Upstream = { port: number; paths: string[]; close: () => Promise<void> };

/** An npm tarball of PACKUMENT_NAME (package/package.json, package/index.js) and its sha512 integrity. */
function makeTarball(root: string): { tgz: Buffer; integrity: string } {
  const pkg = path.join(root, 'pkg', 'package');
  execFileSync('mkdir', ['-p', pkg]);
  execFileSync('bash', ['-c', `printf '%s' '{"name":"${PACKUMENT_NAME}","version":"1.2.3","main":"index.js"}' > package.json && echo 'module.exports = "installed through the egress proxy";' > index.js`], { cwd: pkg });
  const tgz = execFileSync('tar', ['czf', '-', '-C', path.join(root, 'pkg'), 'package']);
  return { tgz, integrity: `sha512-${createHash('sha512').update(tgz).digest('base64')}` };
}

/** On `host` (a loopback address of the host): /hello, /big, a dumb-HTTP git repository and an npm package. */
export async function startUpstream(host = '127.0.0.1'): Promise<Upstream> {
  const repo = makeRepo();
  const { tgz, integrity } = makeTarball(repo);
  const tarballPath = `/${PACKUMENT_NAME}/-/${PACKUMENT_NAME}-1.2.3.tgz`;
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? '');
    const url = new URL(req.url ?? '/', 'http://upstream');
    if (url.pathname === '/hello') return void res.end('hello from upstream');
    if (url.pathname === '/big') return void res.end(big);
    if (url.pathname === `/${PACKUMENT_NAME}`) {
      res.setHeader('content-type', 'application/json');
      const dist = { tarball: `http://${req.headers.host}${tarballPath}`, integrity };
      return void res.end(JSON.stringify({ name: PACKUMENT_NAME, 'dist-tags': { latest: '1.2.3' }, versions: { '1.2.3': { name: PACKUMENT_NAME, version: '1.2.3', dist } } }));
    }
    if (url.pathname === tarballPath) return void res.end(tgz);
    const file = path.join(repo, path.normalize(url.pathname));
    if (url.pathname.startsWith('/repo.git/') && file.startsWith(repo) && statSync(file, { throwIfNoEntry: false })?.isFile()) {
      return void res.end(readFileSync(file));
    }
    res.statusCode = 404;
    res.end('not here');
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    paths,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      rmSync(repo, { recursive: true, force: true });
    },
  };
}

export type FakeProxy = {
  /** `CONNECT host:port` targets and `host:port` of plain requests, in arrival order. */
  asked: string[];
  /** Most connections open at once on the proxy's side (settable, to measure a span). */
  maxOpen: number;
  /** Connections open on the proxy's side now (a "stuck" one stays after its client went). */
  open: () => number;
  close: () => Promise<void>;
};

/**
 * A tiny HTTP proxy on `socketPath`: plain requests (absolute-form) and
 * CONNECT tunnels both go to the upstream on 127.0.0.1, whatever the name.
 * Targets whose host starts with "hold" are accepted and left hanging until
 * the client ends; "stuck" ones even past that (a proxy that never closes).
 */
export async function startFakeProxy(socketPath: string, upstreamPort: number): Promise<FakeProxy> {
  const asked: string[] = [];
  const held = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/');
    asked.push(u.host);
    const out = http.request({ host: '127.0.0.1', port: upstreamPort, method: req.method, path: u.pathname + u.search, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  server.on('connect', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    asked.push(req.url ?? '');
    held.add(socket);
    socket.on('close', () => held.delete(socket));
    socket.on('error', () => socket.destroy());
    if ((req.url ?? '').startsWith('hold')) return void socket.on('end', () => socket.end());
    if ((req.url ?? '').startsWith('stuck')) return;
    const up = net.connect(upstreamPort, '127.0.0.1', () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      socket.pipe(up);
      up.pipe(socket);
    });
    up.on('error', () => socket.destroy());
  });
  let open = 0;
  const result = { asked, maxOpen: 0 } as FakeProxy;
  server.on('connection', (s: net.Socket) => {
    result.maxOpen = Math.max(result.maxOpen, ++open);
    s.on('close', () => open--);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, resolve);
  });
  // As the service's proxy does (EgressProxy socketMode): the relay dials with the command user's ids.
  chmodSync(socketPath, 0o666);
  return Object.assign(result, {
    open: () => open,
    close: async () => {
      for (const s of held) s.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  });
}
