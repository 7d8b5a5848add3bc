// Issue 23's density run on this machine: N sessions open (default 1,000),
// all but 10 idle until their containers are stopped (a shortened
// THINKFLOW_SANDBOX_IDLE_STOP_S; paused first, THINKFLOW_IDLE_PAUSE_S), 10
// kept busy the whole time. One `thinkflow serve --role all` child, driven
// over HTTP like a user's program. Prints, side by side: a busy session's
// command latency alone (before the others exist) and with the N − 10 idle
// ones; the host's MemAvailable drop and Redis client connections before and
// after; and whether every session answers its next command (a read of the
// file it wrote, checked). Judges the targets in code.
//   npm run bench:density [-- --sessions 1000 --busy 10 --idle-stop 60]
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createRedis } from '../../services/pipeline/index.ts';
import { freePort, pct, serveAll } from '../lib/measure.ts';

const { values } = parseArgs({ options: {
  sessions: { type: 'string', default: '1000' },
  busy: { type: 'string', default: '10' },
  'idle-stop': { type: 'string', default: '60' },
  concurrency: { type: 'string', default: '8' },
} });
const N = Number(values.sessions);
const BUSY = Number(values.busy);
const IDLE_STOP_S = Number(values['idle-stop']);
const CONCURRENCY = Number(values.concurrency);
const ROOT = new URL('../../', import.meta.url).pathname;
let REDIS_URL = '';
const tag = Math.random().toString(36).slice(2, 8);
const PREFIX = `tfbench-dn-${tag}`;
const BOXES = `tfbench-dn-${tag}-`;

const memAvailableMiB = () => Number(/MemAvailable:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))![1]) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const running = () => execFileSync('docker', ['ps', '-q', '--filter', `name=^/${BOXES}`]).toString().split('\n').filter(Boolean).length;

/** The median of 7 reads over ~3 s: one read jumps with whatever else the machine does. */
async function memSettled(): Promise<number> {
  const reads: number[] = [];
  for (let i = 0; i < 7; i++) {
    reads.push(memAvailableMiB());
    await sleep(400);
  }
  return reads.sort((a, b) => a - b)[3]!;
}

let base = '';
async function post(path: string, body: string, type = 'application/json'): Promise<unknown> {
  const r = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': type }, body });
  const out = await r.json();
  if (!r.ok) throw new Error(`${path}: ${r.status} ${JSON.stringify(out)}`);
  return out;
}

const sessions: string[] = [];
async function openSession(): Promise<string> {
  const sid = ((await post('/v1/sessions', '{}')) as { session_id: string }).session_id;
  sessions.push(sid);
  return sid;
}

/** One command over REST; its ms, and the result's status and output. */
async function command(sid: string, tagText: string): Promise<{ ms: number; status: string; output: string }> {
  const t0 = performance.now();
  const out = (await post(`/v1/sessions/${sid}/commands`, tagText, 'text/plain')) as { results: { status: string; stdout?: string | null }[] };
  const r = out.results[0]!;
  return { ms: performance.now() - t0, status: r.status, output: r.stdout ?? '' };
}

const content = (sid: string) => `${sid}\n`.repeat(20);
const write = (sid: string, id: number) => command(sid, `<tf-write id="${id}" path="a.txt">${content(sid)}</tf-write>`);

/** Runs `fn` over `items`, `CONCURRENCY` at a time. */
async function each<T>(items: T[], fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

type Busy = { now: boolean; paceMs: number };

/**
 * Keeps `sids` busy until `stop.now`: one command after another each while `paceMs` is 0 (when measured), else
 * one every `paceMs` (still never idle long enough to be paused: the 25 minutes of opening the idle ones would
 * otherwise fill the key's ledger budget with busy writes). The latencies.
 */
function keepBusy(sids: string[], stop: Busy): Promise<Array<{ at: number; ms: number }>> {
  const ms: Array<{ at: number; ms: number }> = [];
  const running = Promise.all(sids.map(async (sid) => {
    for (let i = 100; !stop.now; i++) {
      const r = await write(sid, i);
      if (r.status !== 'succeeded') throw new Error(`busy ${sid}: ${r.status}`);
      ms.push({ at: performance.now(), ms: r.ms });
      if (stop.paceMs > 0) await sleep(stop.paceMs);
    }
  })).then(() => ms);
  // Awaited later: a failure meanwhile must not end the process before the cleanup (the await rethrows it).
  running.catch(() => undefined);
  return running;
}

async function clients(): Promise<number> {
  const r = createRedis(REDIS_URL, 'bench-density');
  const info = await r.info('clients');
  r.disconnect();
  return Number(/connected_clients:(\d+)/.exec(info)![1]);
}

async function run(): Promise<boolean> {
  const mem0 = await memSettled();
  const clients0 = await clients();
  // Alone: the busy sessions' latency before the idle ones exist.
  const busy = await Promise.all(Array.from({ length: BUSY }, openSession));
  for (const sid of busy) await write(sid, 1);
  const aloneStop: Busy = { now: false, paceMs: 0 };
  const aloneRun = keepBusy(busy, aloneStop);
  await sleep(15_000);
  aloneStop.now = true;
  const alone = (await aloneRun).map((x) => x.ms);
  const clientsBusy = await clients();
  console.log(`[alone] ${BUSY} busy sessions: ${alone.length} commands, p50 ${pct(alone, 50).toFixed(1)} ms p95 ${pct(alone, 95).toFixed(1)} ms; Redis clients ${clientsBusy}`);

  // The idle ones: opened with one write each, while the busy ones keep going.
  const stop: Busy = { now: false, paceMs: 1000 };
  const during = keepBusy(busy, stop);
  const idle: string[] = [];
  const t0 = performance.now();
  await each(Array.from({ length: N - BUSY }, (_, i) => i), async () => {
    const sid = await openSession();
    const r = await write(sid, 1);
    if (r.status !== 'succeeded') throw new Error(`idle ${sid}: ${r.status}`);
    idle.push(sid);
  });
  console.log(`[open] ${idle.length} more sessions opened with one write each in ${((performance.now() - t0) / 1000).toFixed(0)} s; containers running ${running()}`);
  // Until only the busy ones (and a few just stopping) keep a container.
  for (let waited = 0; running() > BUSY + 2; waited += 5) {
    if (waited > IDLE_STOP_S * 4 + 300) throw new Error(`idle containers not stopped after ${waited} s (${running()} running)`);
    await sleep(5000);
  }
  return finish({ busy, idle, stop, during, mem0, clients0, clientsBusy, alone, from: performance.now() });
}

type Phase = {
  busy: string[]; idle: string[]; stop: Busy; during: Promise<Array<{ at: number; ms: number }>>;
  mem0: number; clients0: number; clientsBusy: number; alone: number[]; from: number;
};

/** Once the idle ones hold no container: the busy ones' latency, memory, connections, then every session's next command. */
async function finish({ busy, idle, stop, during, mem0, clients0, clientsBusy, alone, from }: Phase): Promise<boolean> {
  stop.paceMs = 0; // measured from here, back to back as when alone
  await sleep(15_000);
  const mem1 = await memSettled();
  const clientsIdle = await clients();
  stop.now = true;
  // Only the commands run while the idle sessions held no container: the steady state the target is about.
  const withIdle = (await during).filter((x) => x.at >= from).map((x) => x.ms);
  console.log(`[idle] ${idle.length} idle sessions, containers running ${running()}; busy p50 ${pct(withIdle, 50).toFixed(1)} ms p95 ${pct(withIdle, 95).toFixed(1)} ms`);
  console.log(`[idle] MemAvailable ${mem0.toFixed(0)} → ${mem1.toFixed(0)} MiB: ${((mem0 - mem1) / idle.length).toFixed(2)} MiB per idle session (the ${BUSY} busy ones' containers included)`);
  console.log(`[idle] Redis clients: before ${clients0}, busy alone ${clientsBusy}, with ${idle.length} idle ${clientsIdle}`);
  // One at a time first: what a stopped session's next command costs alone (its container made again on the same workspace).
  const alone1: number[] = [];
  for (const sid of idle.slice(0, 10)) alone1.push((await command(sid, `<tf-read id="899" path="a.txt" />`)).ms);
  console.log(`[recreate] a stopped session's next command, one at a time (n ${alone1.length}): p50 ${pct(alone1, 50).toFixed(0)} ms, max ${Math.max(...alone1).toFixed(0)} ms`);
  // Every session answers its next command: the file it wrote, read back and checked.
  let answered = 0;
  const nextMs: number[] = [];
  const t0 = performance.now();
  await each([...idle, ...busy], async (sid) => {
    const r = await command(sid, `<tf-read id="900" path="a.txt" />`);
    if (r.status === 'succeeded' && r.output.includes(content(sid))) answered++;
    nextMs.push(r.ms);
  });
  console.log(`[next] ${answered} of ${idle.length + busy.length} answered their next command with their file intact, in ${((performance.now() - t0) / 1000).toFixed(0)} s; p50 ${pct(nextMs, 50).toFixed(0)} ms p95 ${pct(nextMs, 95).toFixed(0)} ms (container recreated on the same workspace)`);
  const ratio = pct(withIdle, 50) / pct(alone, 50);
  const judge = (ok: boolean, text: string) => { console.log(`${ok ? 'met' : 'NOT MET'}: ${text}`); return ok; };
  return [
    judge(ratio <= 2, `busy sessions within 2× their latency alone with ${idle.length} idle (p50 ${pct(alone, 50).toFixed(1)} → ${pct(withIdle, 50).toFixed(1)} ms, ${ratio.toFixed(2)}×)`),
    judge(answered === idle.length + busy.length, `all ${idle.length + busy.length} sessions answer their next command (${answered})`),
    judge(pct(alone1, 50) <= 250, `recreation after an idle stop ≤ 250 ms (p50 ${pct(alone1, 50).toFixed(0)} ms)`),
    judge(clientsIdle <= clientsBusy + 2, `Redis connections do not grow with idle sessions (${clientsBusy} → ${clientsIdle})`),
  ].every(Boolean);
}

/** A redis-server of this run's own: its connection count is the service's alone (no other process on the machine). */
async function ownRedis(): Promise<ChildProcess> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  REDIS_URL = `redis://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const r = createRedis(REDIS_URL, 'bench-density');
    try {
      await r.ping();
      return child;
    } catch (err) {
      if (i > 100) throw err;
      await sleep(50);
    } finally {
      r.disconnect();
    }
  }
}

async function main(): Promise<void> {
  const os = await import('node:os');
  console.log(`density bench: ${new Date().toISOString()}, ${os.cpus().length} cores, node ${process.version}, load ${os.loadavg()[0]!.toFixed(1)}; ${N} sessions (${BUSY} busy), idle stop ${IDLE_STOP_S} s, pause 5 s`);
  const redisServer = await ownRedis();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const service: ChildProcess = await serveAll(ROOT, {
    PORT: String(port), HOST: '127.0.0.1', REDIS_URL, THINKFLOW_REDIS_PREFIX: PREFIX, THINKFLOW_SANDBOX_PREFIX: BOXES, THINKFLOW_API_KEYS: '',
    THINKFLOW_WARM_POOL: '0', THINKFLOW_IDLE_PAUSE_S: '5', THINKFLOW_SANDBOX_IDLE_STOP_S: String(IDLE_STOP_S), THINKFLOW_SANDBOX_REAP_INTERVAL_S: '5',
    // One load generator stands for many tenants.
    THINKFLOW_MAX_SESSIONS_PER_KEY: String(N + 10), THINKFLOW_MAX_RUNNING_PER_KEY: String(N + 10), THINKFLOW_MAX_TURNS_PER_KEY: String(N + 10),
    THINKFLOW_MAX_CONNECTIONS_PER_ADDRESS: '1000',
    // 1,000 sessions' ledgers and events under one key: 256 MiB (the default) is one tenant's share, not a host's.
    THINKFLOW_STORE_BYTES_PER_KEY: String(2 * 1024 ** 3),
  });
  let ok = false;
  try {
    ok = await run();
  } finally {
    await each(sessions, async (sid) => { await fetch(`${base}/v1/sessions/${sid}`, { method: 'DELETE' }).catch(() => undefined); });
    service.kill('SIGTERM');
    await new Promise((r) => service.once('exit', r));
    const ids = execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${BOXES}`]).toString().split('\n').filter(Boolean);
    for (let i = 0; i < ids.length; i += 100) execFileSync('docker', ['rm', '-f', ...ids.slice(i, i + 100)], { stdio: 'ignore' });
    const r = createRedis(REDIS_URL, 'bench-density');
    const { deleteByPattern } = await import('../../services/pipeline/index.ts');
    await deleteByPattern(r, `${PREFIX}:*`);
    r.disconnect();
    redisServer.kill('SIGTERM');
  }
  console.log(ok ? '\nall targets met' : '\nsome targets NOT MET');
  process.exitCode = ok ? 0 : 1;
}

await main();
