// Pipeline benchmark: one `thinkflow serve --role all` child process (real
// Redis, real Docker sandboxes), driven over HTTP from this process.
// Prints: enqueue→start latency and end-to-end latency of a 1 KiB write,
// throughput at 1, 20 and 200 concurrent sessions with ordering/loss checks,
// Redis connections in use at 200 sessions, and the service's RSS.
//   npm run bench:pipeline [-- --levels 1,20,200 --commands 2000 --samples 300]
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';

const { values } = parseArgs({ options: {
  levels: { type: 'string', default: '1,20,200' },
  commands: { type: 'string', default: '10000' },
  samples: { type: 'string', default: '300' },
  turn: { type: 'string', default: '50' },
} });
const LEVELS = values.levels!.split(',').map(Number);
const COMMANDS = Number(values.commands);
const SAMPLES = Number(values.samples);
const TURN = Number(values.turn);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROOT = new URL('../../', import.meta.url).pathname;
const tag = Math.random().toString(36).slice(2, 8);
const PREFIX = `tfbench-${tag}`;
const BOXES = `tfbench-${tag}-`;
const KIB = 'x'.repeat(1000);

type Entry = { turn: number; id: string; status: string; enqueued_at: string; started_at: string | null; finished_at: string | null };

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => resolve(p)); });
  });
}

async function startService(port: number): Promise<ChildProcess> {
  // BENCH_SERVICE_NODE_ARGS (e.g. "--cpu-prof") goes to the service's node, for profiling.
  const nodeArgs = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, `${ROOT}bin/thinkflow.mjs`, 'serve', '--role', 'all'], {
    cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', REDIS_URL, THINKFLOW_REDIS_PREFIX: PREFIX, THINKFLOW_SANDBOX_PREFIX: BOXES, THINKFLOW_API_KEYS: '', THINKFLOW_WORKER_IDLE_MS: '2000',
      // One load generator stands for 200 tenants: lift the per-key caps it would otherwise hit (100 sessions, 20 busy).
      THINKFLOW_MAX_SESSIONS_PER_KEY: '1000', THINKFLOW_MAX_RUNNING_PER_KEY: '1000',
      // 200 sessions of one key at once, each with its own connection.
      THINKFLOW_MAX_TURNS_PER_KEY: '1000', THINKFLOW_MAX_CONNECTIONS_PER_ADDRESS: '1000' },
  });
  await new Promise<void>((resolve, reject) => {
    let log = '';
    child.stderr!.on('data', (d: Buffer) => { log += d.toString(); if (log.includes('listening on')) resolve(); });
    child.once('exit', (c) => reject(new Error(`service exited (${c}): ${log}`)));
  });
  return child;
}

function api(base: string) {
  return {
    async session(): Promise<string> {
      const r = await fetch(`${base}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      return ((await r.json()) as { session_id: string }).session_id;
    },
    async turn(sid: string, body: string): Promise<{ results: { id: string; status: string }[] }> {
      const r = await fetch(`${base}/v1/sessions/${sid}/commands`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body });
      if (r.status !== 200) throw new Error(`commands: ${r.status} ${await r.text()}`);
      return (await r.json()) as { results: { id: string; status: string }[] };
    },
    async ledger(sid: string): Promise<Entry[]> {
      return ((await (await fetch(`${base}/v1/sessions/${sid}/ledger`)).json()) as { entries: Entry[] }).entries;
    },
    async file(sid: string, path: string): Promise<string> {
      return (await fetch(`${base}/v1/sessions/${sid}/files/${path}`)).text();
    },
    async del(sid: string): Promise<void> { await fetch(`${base}/v1/sessions/${sid}`, { method: 'DELETE' }); },
  };
}
type Api = ReturnType<typeof api>;

async function latency(a: Api): Promise<{ e2e: number[]; queue: number[] }> {
  const sid = await a.session();
  for (let i = 1; i <= 20; i++) await a.turn(sid, `<tf-write id="1" path="warm.txt">${KIB}</tf-write>`);
  const e2e: number[] = [];
  for (let i = 1; i <= SAMPLES; i++) {
    const t0 = performance.now();
    const out = await a.turn(sid, `<tf-write id="1" path="lat/${i}.txt">${KIB}</tf-write>`);
    e2e.push(performance.now() - t0);
    if (out.results[0]?.status !== 'succeeded') throw new Error(`latency write ${i}: ${JSON.stringify(out)}`);
  }
  const queue = (await a.ledger(sid)).slice(20).map((e) => Date.parse(e.started_at!) - Date.parse(e.enqueued_at));
  await a.del(sid);
  return { e2e, queue };
}

/** `sessions` sessions in parallel, each sending its share of COMMANDS as turns of TURN appends. */
async function throughput(a: Api, sessions: number, redis: Redis, servicePid: number) {
  const per = Math.max(1, Math.ceil(COMMANDS / sessions));
  const sids = await Promise.all(Array.from({ length: sessions }, () => a.session()));
  // Warm-up: one command per session creates its container outside the timed window.
  await Promise.all(sids.map((sid) => a.turn(sid, '<tf-touch id="1" path="log.txt" />')));
  const t0 = performance.now();
  const cpu0 = cpuOf(servicePid);
  const own0 = process.cpuUsage();
  await Promise.all(sids.map(async (sid) => {
    for (let from = 1; from <= per; from += TURN) {
      const ids = Array.from({ length: Math.min(TURN, per - from + 1) }, (_, i) => from + i);
      await a.turn(sid, ids.map((n, i) => `<tf-append id="${i + 1}" path="log.txt">${String(n).padStart(6, '0')} ${KIB}\n</tf-append>`).join('\n'));
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  const serviceCpu = cpuOf(servicePid) - cpu0;
  const own = process.cpuUsage(own0);
  const clientCpu = (own.user + own.system) / 1e6;
  const connections = await countConnections(redis);
  let violations = 0;
  let lost = 0;
  for (const sid of sids) {
    const entries = (await a.ledger(sid)).slice(1);
    lost += per - entries.filter((e) => e.status === 'succeeded').length;
    for (let i = 1; i < entries.length; i++) if (entries[i]!.started_at! < entries[i - 1]!.finished_at!) violations += 1;
    const lines = (await a.file(sid, 'log.txt')).split('\n').filter(Boolean).map((l) => Number(l.slice(0, 6)));
    lines.forEach((n, i) => { if (n !== i + 1) violations += 1; });
    lost += Math.max(0, per - lines.length);
  }
  return { sessions, commands: per * sessions, seconds, rate: (per * sessions) / seconds, violations, lost, connections, sids, serviceCpu, clientCpu };
}

async function countConnections(redis: Redis): Promise<{ ours: number; total: number }> {
  const list = (await redis.client('LIST')) as string;
  const lines = list.split('\n').filter(Boolean);
  return { ours: lines.filter((l) => l.includes(PREFIX)).length, total: lines.length };
}

/** user+system CPU seconds of a process so far (clock ticks are 100/s on Linux). */
const cpuOf = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};

const rssOf = (pid: number) => {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
  return { rssMiB: kb('VmRSS') / 1024, peakMiB: kb('VmHWM') / 1024 };
};

async function main(): Promise<void> {
  const port = await freePort();
  const service = await startService(port);
  const redis = new Redis(REDIS_URL);
  const a = api(`http://127.0.0.1:${port}`);
  const out: string[] = [];
  const say = (l: string) => { out.push(l); process.stdout.write(`${l}\n`); };
  try {
    say(`pipeline bench: ${new Date().toISOString()}, ${(await import('node:os')).cpus().length} cores, node ${process.version}, real Redis + Docker sandboxes`);
    const lat = await latency(a);
    say(`1 KiB write, ${SAMPLES} sequential one-command turns: enqueue→start p50 ${pct(lat.queue, 50).toFixed(1)} ms p99 ${pct(lat.queue, 99).toFixed(1)} ms; ` +
      `end to end (HTTP POST → 200) p50 ${pct(lat.e2e, 50).toFixed(1)} ms p99 ${pct(lat.e2e, 99).toFixed(1)} ms`);
    for (const level of LEVELS) {
      const r = await throughput(a, level, redis, service.pid!);
      say(`${String(level).padStart(3)} sessions: ${r.commands} appends of 1 KiB in ${r.seconds.toFixed(2)} s = ${r.rate.toFixed(0)} commands/s; ` +
        `ordering violations ${r.violations}, lost ${r.lost}; Redis connections ours ${r.connections.ours} (all clients ${r.connections.total}); ` +
        `CPU: service ${((r.serviceCpu / r.commands) * 1000).toFixed(2)} ms/command (${((r.serviceCpu / r.seconds) * 100).toFixed(0)}% of a core), load generator ${((r.clientCpu / r.seconds) * 100).toFixed(0)}%`);
      if (level === Math.max(...LEVELS)) {
        const m = rssOf(service.pid!);
        say(`service RSS after ${level} sessions: ${m.rssMiB.toFixed(0)} MiB (peak ${m.peakMiB.toFixed(0)} MiB)`);
        // Idle sessions must not hold connections: Workers close after THINKFLOW_WORKER_IDLE_MS (2 s here).
        await new Promise((r) => setTimeout(r, 4000));
        const idle = await countConnections(redis);
        say(`Redis connections once the ${level} sessions are idle (4 s later): ours ${idle.ours}`);
      }
      await Promise.all(r.sids.map((sid) => a.del(sid)));
    }
  } finally {
    service.kill('SIGTERM');
    await new Promise((r) => service.once('exit', r));
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${PREFIX}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
    redis.disconnect();
    const ids = execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${BOXES}`]).toString().split('\n').filter(Boolean);
    if (ids.length) execFileSync('docker', ['rm', '-f', ...ids], { stdio: 'ignore' });
    const vols = execFileSync('docker', ['volume', 'ls', '-q', '--filter', `name=^${BOXES}`]).toString().split('\n').filter(Boolean);
    if (vols.length) execFileSync('docker', ['volume', 'rm', '-f', ...vols], { stdio: 'ignore' });
  }
}

await main();
