// The egress path as a command sees it (issue 21), in one run: N HTTP GETs
// from python3 inside a session's container, each on a new connection,
// interleaved: to a server on the container's own loopback (direct, no
// proxy: NO_PROXY) and to a server on the host's loopback through the whole
// path (the executor's relay on 127.0.0.1:3128, the session's Unix socket,
// the worker's EgressProxy, which decides, checks the address and dials).
// Judged: ≤ 2 ms added at p50. Plus what an idle session's egress costs:
// the executor's RSS in its container, and the proxy's per listening session.
import http from 'node:http';
import type net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { EgressProxy, LABEL_SESSION, type SandboxManager } from '../../services/sandbox/index.ts';
import { percentile } from './stats.ts';

export const EGRESS_HEADING = 'Sandbox: network egress through the relay and the proxy';
const ADDED_P50_TARGET_MS = 2;
const UPSTREAM = '127.0.0.2';
const exec = promisify(execFile);

/** Run in the container: a loopback server of its own, then interleaved timings, one JSON line out. */
const SCRIPT = (n: number, port: number) => `
import http.server, threading, time, json, urllib.request
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header('content-length', '5'); self.end_headers(); self.wfile.write(b'hello')
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', 8000), H)
threading.Thread(target=s.serve_forever, daemon=True).start()
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
proxied = urllib.request.build_opener(urllib.request.ProxyHandler({'http': 'http://127.0.0.1:3128'}))
def t(o, url):
    t0 = time.perf_counter(); o.open(url, timeout=10).read(); return (time.perf_counter() - t0) * 1000
for i in range(20): t(direct, 'http://127.0.0.1:8000/'); t(proxied, 'http://${UPSTREAM}:${port}/')
a, b = [], []
for i in range(${n}):
    a.append(t(direct, 'http://127.0.0.1:8000/')); b.append(t(proxied, 'http://${UPSTREAM}:${port}/'))
print(json.dumps({'direct': a, 'proxied': b}))
`;

type Bash = (cmd: string, timeoutS: number) => Promise<string>;

export async function benchEgress(manager: SandboxManager, bash: (sid: string) => Promise<Bash>, n: number): Promise<string> {
  const upstream = http.createServer((_req, res) => res.end('hello'));
  await new Promise<void>((r) => upstream.listen(0, UPSTREAM, r));
  const port = (upstream.address() as net.AddressInfo).port;
  const proxy = new EgressProxy({ decide: async () => ({ allow: true }), checkAddress: () => ({ allowed: true }) });
  const sid = `bench-egress-${process.pid}`;
  try {
    await proxy.listen(sid, manager.egressSocketPath(sid));
    const run = await bash(sid);
    const out = JSON.parse(await run(`python3 -c "${SCRIPT(n, port).replace(/"/g, '\\"')}"`, 600)) as { direct: number[]; proxied: number[] };
    const direct = out.direct.sort((x, y) => x - y);
    const proxied = out.proxied.sort((x, y) => x - y);
    const box = (await exec('docker', ['ps', '-q', '--filter', `label=${LABEL_SESSION}=${sid}`])).stdout.trim();
    const mem = (await exec('docker', ['stats', '--no-stream', '--format', '{{.MemUsage}}', box])).stdout.trim().split(' / ')[0];
    const idle = await proxyIdleCost();
    const added = percentile(proxied, 50) - percentile(direct, 50);
    const line = (name: string, via: string, t: number[]) =>
      `| ${name} | ${via} | ${t.length} | ${percentile(t, 50).toFixed(2)} | ${percentile(t, 95).toFixed(2)} | ${percentile(t, 99).toFixed(2)} |`;
    return [
      `python3 urllib in the container, each request on a new connection, interleaved; n=${n} per way`,
      '',
      '| request | via | n | p50 ms | p95 ms | p99 ms |',
      '|---|---|---:|---:|---:|---:|',
      line('GET to the container\'s own loopback', 'direct (NO_PROXY)', direct),
      line('GET to the host\'s loopback (127.0.0.2)', 'relay → session socket → EgressProxy (allow)', proxied),
      '',
      `added at p50: ${added.toFixed(2)} ms (target ≤ ${ADDED_P50_TARGET_MS} ms: ${added <= ADDED_P50_TARGET_MS ? 'met' : 'NOT met'})`,
      `idle session: its container (executor with the relay listening, no command) ${mem} (docker stats); the proxy ${idle}`,
    ].join('\n');
  } finally {
    await proxy.closeAll();
    await manager.remove(sid);
    upstream.close();
  }
}

/** RSS growth of this process for 200 idle listening sessions, per session. */
async function proxyIdleCost(): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tf-egress-idle-'));
  const proxy = new EgressProxy({ decide: async () => ({ allow: true }), checkAddress: () => ({ allowed: true }) });
  const before = process.memoryUsage().rss;
  for (let i = 0; i < 200; i++) await proxy.listen(`idle-${i}`, path.join(dir, `s${i}`, 'egress.sock'));
  const per = (process.memoryUsage().rss - before) / 200 / 1024;
  await proxy.closeAll();
  rmSync(dir, { recursive: true, force: true });
  return `${per.toFixed(1)} KiB RSS per listening session (200 sessions)`;
}
