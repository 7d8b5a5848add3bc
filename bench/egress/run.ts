// npm run bench:egress — what the egress proxy adds (issue 21): N sequential
// HTTP GETs to a 127.0.0.1 test server, each on a new connection, directly
// and through a session's proxy socket (CONNECT tunnel, and a plain
// absolute-form request), interleaved so that machine noise hits all three
// alike; the tunnel is judged against ≤ 2 ms added at p50. Then the memory of idle
// sessions: RSS and heap growth for 200 listening sessions, per session.
// It prints; bench/RESULTS.md is written by hand.
//
// BENCH_N (default 2000) requests per way, BENCH_SESSIONS (200) idle sessions.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Duplex } from 'node:stream';
import { EgressProxy } from '../../services/sandbox/index.ts';
import { percentile } from '../sandbox/stats.ts';

const N = Number(process.env.BENCH_N ?? 2000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 200);
const WARMUP = 200;
const TARGET_ADDED_P50_MS = 2;

/** An agent whose every connection is a CONNECT tunnel through the proxy's Unix socket (Node's client reads the 200). */
class TunnelAgent extends http.Agent {
  constructor(private readonly socketPath: string) {
    super({ keepAlive: false });
  }
  override createConnection(options: http.ClientRequestArgs, cb?: (err: Error | null, stream: Duplex) => void): undefined {
    const authority = `${options.host}:${options.port}`;
    const done = cb ?? (() => undefined);
    http.request({ socketPath: this.socketPath, method: 'CONNECT', path: authority, headers: { host: authority }, agent: false })
      .on('connect', (res, socket) => (res.statusCode === 200 ? done(null, socket) : done(new Error(`CONNECT ${res.statusCode}`), socket)))
      .on('error', (err) => done(err, new PassThrough()))
      .end();
    return undefined;
  }
}

function get(opts: http.RequestOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    http.get(opts, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
    }).on('error', reject);
  });
}

async function timed(fn: () => Promise<void>, into: number[]): Promise<void> {
  const t0 = performance.now();
  await fn();
  into.push(performance.now() - t0);
}

async function latency(port: number, socketPath: string) {
  const tunnel = new TunnelAgent(socketPath);
  const ways = {
    direct: () => get({ host: '127.0.0.1', port, path: '/', agent: false }),
    connect: () => get({ host: '127.0.0.1', port, path: '/', agent: tunnel }),
    plain: () => get({ socketPath, path: `http://127.0.0.1:${port}/`, agent: false }),
  };
  const times = { direct: [] as number[], connect: [] as number[], plain: [] as number[] };
  for (let i = 0; i < WARMUP; i++) for (const fn of Object.values(ways)) await fn();
  for (let i = 0; i < N; i++) {
    await timed(ways.direct, times.direct);
    await timed(ways.connect, times.connect);
    await timed(ways.plain, times.plain);
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => {
    const sorted = v.sort((a, b) => a - b);
    return [k, { p50: percentile(sorted, 50), p95: percentile(sorted, 95) }];
  })) as Record<keyof typeof ways, { p50: number; p95: number }>;
}

const gc = (globalThis as { gc?: () => void }).gc;

async function settle(): Promise<NodeJS.MemoryUsage> {
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((r) => setTimeout(r, 100));
  }
  return process.memoryUsage();
}

async function idleMemory(dir: string) {
  const proxy = new EgressProxy({ decide: async () => ({ allow: true }), checkAddress: () => ({ allowed: true }) });
  const before = await settle();
  for (let i = 0; i < SESSIONS; i++) await proxy.listen(`idle-${i}`, join(dir, `idle-${i}.sock`));
  const after = await settle();
  await proxy.closeAll();
  return { rssKiB: (after.rss - before.rss) / 1024 / SESSIONS, heapKiB: (after.heapUsed - before.heapUsed) / 1024 / SESSIONS };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tf-bench-egress-'));
  const upstream = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as net.AddressInfo).port;
  const proxy = new EgressProxy({
    decide: async () => ({ allow: true, finish: () => undefined }),
    checkAddress: (_s, address) => (address === '127.0.0.1' ? { allowed: true } : { allowed: false, message: 'bench: 127.0.0.1 only' }),
  });
  try {
    // Memory first, on a fresh heap: after thousands of requests the heap's pages are resident already and RSS would not move.
    const mem = await idleMemory(dir);
    const socketPath = join(dir, 'bench.sock');
    await proxy.listen('bench', socketPath);
    const t = await latency(port, socketPath);
    const added = t.connect.p50 - t.direct.p50;
    const addedPlain = t.plain.p50 - t.direct.p50;
    const f = (x: number) => x.toFixed(3).padStart(8);
    console.log(`\negress proxy: ${N} sequential GETs per way to 127.0.0.1, a new connection each (interleaved)\n`);
    console.log('| way                          |   p50 ms |   p95 ms | added p50 ms |');
    console.log('|------------------------------|---------:|---------:|-------------:|');
    console.log(`| direct TCP                   | ${f(t.direct.p50)} | ${f(t.direct.p95)} |              |`);
    console.log(`| CONNECT tunnel through proxy | ${f(t.connect.p50)} | ${f(t.connect.p95)} |     ${f(added)} |`);
    console.log(`| plain HTTP through proxy     | ${f(t.plain.p50)} | ${f(t.plain.p95)} |     ${f(addedPlain)} |`);
    // The target is judged on the tunnel (HTTPS and most tools use CONNECT); the plain path parses and writes
    // each request and answer once more, and is shown against the same figure for information.
    const meets = added <= TARGET_ADDED_P50_MS;
    const plainNote = addedPlain <= TARGET_ADDED_P50_MS ? 'within it too' : 'over it';
    console.log(`\ntarget ≤ ${TARGET_ADDED_P50_MS} ms added at p50 through the proxy (CONNECT): ${meets ? 'met' : 'NOT met'}, +${added.toFixed(3)} ms; plain HTTP +${addedPlain.toFixed(3)} ms (${plainNote}, not judged)`);
    console.log(`memory per idle session (${SESSIONS} listening sessions${gc ? ', after gc' : ', no --expose-gc'}): RSS +${mem.rssKiB.toFixed(1)} KiB, heap +${mem.heapKiB.toFixed(1)} KiB`);
    if (!meets) process.exitCode = 1;
  } finally {
    await proxy.closeAll();
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
