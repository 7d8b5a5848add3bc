// Pipeline benchmark: one `thinkflow serve --role all` child process (real
// Redis, real Docker sandboxes), driven over HTTP from this process.
// Prints: enqueue→start latency and end-to-end latency of a 1 KiB write,
// throughput at 1, 20 and 200 concurrent sessions with ordering/loss checks,
// Redis connections in use at 200 sessions, and the service's RSS.
// --before DIR measures another checkout's service (a worktree of the commit
// before a change) in the same run, and prints both side by side, on the sandbox
// image named by --before-image (built from that checkout) when given; --cluster
// starts a 3-master Redis Cluster on loopback and runs the services on it; --redis both
// measures on one Redis, then on the Cluster, in the same run.
//   npm run bench:pipeline [-- --levels 1,20,200 --commands 2000 --samples 300 --before /tmp/tf-base --cluster | --redis both]
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createRedis, type PipelineRedis } from '../../services/pipeline/redis.ts';
import { startCluster } from '../../test/integration/redis-cluster.ts';
import { commsMs, containersMs, DOCKER_COMMS, machineMs, processMs, REDIS_COMMS } from '../machine-cpu.ts';
import { freePort, pct, serveAll } from '../lib/measure.ts';

const { values } = parseArgs({ options: {
  levels: { type: 'string', default: '1,20,200' },
  commands: { type: 'string', default: '10000' },
  samples: { type: 'string', default: '300' },
  turn: { type: 'string', default: '50' },
  before: { type: 'string' },
  'before-image': { type: 'string' },
  cluster: { type: 'boolean', default: false },
  redis: { type: 'string', default: 'one' },
} });
const LEVELS = values.levels!.split(',').map(Number);
const COMMANDS = Number(values.commands);
const SAMPLES = Number(values.samples);
const TURN = Number(values.turn);
let REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROOT = new URL('../../', import.meta.url).pathname;
const tag = Math.random().toString(36).slice(2, 8);
const PREFIX = `tfbench-${tag}`;
const BOXES = `tfbench-${tag}-`;
const KIB = 'x'.repeat(1000);

type Entry = { turn: number; id: string; status: string; enqueued_at: string; started_at: string | null; finished_at: string | null; timings?: { parsed_at?: string } };

function startService(port: number, root: string, image?: string): Promise<ChildProcess> {
  return serveAll(root, {
    PORT: String(port), HOST: '127.0.0.1', REDIS_URL, THINKFLOW_REDIS_PREFIX: PREFIX, THINKFLOW_SANDBOX_PREFIX: BOXES, THINKFLOW_API_KEYS: '', THINKFLOW_WORKER_IDLE_MS: '2000',
    // One load generator stands for 200 tenants: lift the per-key caps it would otherwise hit (100 sessions, 20 busy).
    THINKFLOW_MAX_SESSIONS_PER_KEY: '1000', THINKFLOW_MAX_RUNNING_PER_KEY: '1000',
    // 200 sessions of one key at once, each with its own connection.
    THINKFLOW_MAX_TURNS_PER_KEY: '1000', THINKFLOW_MAX_CONNECTIONS_PER_ADDRESS: '1000',
    ...(image ? { THINKFLOW_SANDBOX_IMAGE: image } : {}),
  });
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

async function latency(a: Api): Promise<{ e2e: number[]; queue: number[]; parsedToStarted: number[]; phases: string }> {
  const sid = await a.session();
  for (let i = 1; i <= 20; i++) await a.turn(sid, `<tf-write id="1" path="warm.txt">${KIB}</tf-write>`);
  const e2e: number[] = [];
  const wall: [number, number][] = []; // wall-clock ms around each request, to place the ledger's timestamps
  for (let i = 1; i <= SAMPLES; i++) {
    const w0 = Date.now();
    const t0 = performance.now();
    const out = await a.turn(sid, `<tf-write id="1" path="lat/${i}.txt">${KIB}</tf-write>`);
    e2e.push(performance.now() - t0);
    wall.push([w0, Date.now()]);
    if (out.results[0]?.status !== 'succeeded') throw new Error(`latency write ${i}: ${JSON.stringify(out)}`);
  }
  const entries = (await a.ledger(sid)).slice(20);
  const queue = entries.map((e) => Date.parse(e.started_at!) - Date.parse(e.enqueued_at));
  // The record's own timings (a checkout from before them has none): closing tag parsed → command started.
  const parsedToStarted = entries.filter((e) => e.timings?.parsed_at).map((e) => Date.parse(e.started_at!) - Date.parse(e.timings!.parsed_at!));
  // Where the time of one request goes, from the ledger's own timestamps (ms resolution): p50 of each phase.
  const phase = (f: (e: Entry, w: [number, number]) => number) => pct(entries.map((e, i) => f(e, wall[i]!)), 50);
  const phases = `request → recorded ${phase((e, w) => Date.parse(e.enqueued_at) - w[0])} ms, recorded → started ${phase((e) => Date.parse(e.started_at!) - Date.parse(e.enqueued_at))} ms, ` +
    `started → finished ${phase((e) => Date.parse(e.finished_at!) - Date.parse(e.started_at!))} ms, finished → answered ${phase((e, w) => w[1] - Date.parse(e.finished_at!))} ms (p50 each)`;
  await a.del(sid);
  return { e2e, queue, parsedToStarted, phases };
}

const WARM_UP_COMMANDS = 2;

/** `sessions` sessions in parallel, each sending its share of COMMANDS as turns of TURN appends. */
async function throughput(a: Api, sessions: number, redis: PipelineRedis, servicePid: number) {
  const per = Math.max(1, Math.ceil(COMMANDS / sessions));
  const sids = await Promise.all(Array.from({ length: sessions }, () => a.session()));
  // Warm-up: one command per session creates its container outside the timed window. Made all at once, the first
  // containers wait for the last ones long enough (up to ~100 s for 200 on 2 cores) to be paused as idle
  // (THINKFLOW_IDLE_PAUSE_S, 30): a second command each thaws them, so the window measures sessions in use, not a
  // storm of 200 thaws (which took it from ~500 to 180 commands/s).
  for (let round = 0; round < WARM_UP_COMMANDS; round++) await Promise.all(sids.map((sid) => a.turn(sid, '<tf-touch id="1" path="log.txt" />')));
  const boxIds = execFileSync('docker', ['ps', '-q', '--no-trunc', '--filter', `name=^/${BOXES}`]).toString().split('\n').filter(Boolean);
  const split0 = cpuSplit(servicePid, boxIds);
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
  const split = perCommand(split0, cpuSplit(servicePid, boxIds), per * sessions);
  const connections = await countConnections(redis);
  let violations = 0;
  let lost = 0;
  for (const sid of sids) {
    const entries = (await a.ledger(sid)).slice(WARM_UP_COMMANDS);
    lost += per - entries.filter((e) => e.status === 'succeeded').length;
    for (let i = 1; i < entries.length; i++) if (entries[i]!.started_at! < entries[i - 1]!.finished_at!) violations += 1;
    const lines = (await a.file(sid, 'log.txt')).split('\n').filter(Boolean).map((l) => Number(l.slice(0, 6)));
    lines.forEach((n, i) => { if (n !== i + 1) violations += 1; });
    lost += Math.max(0, per - lines.length);
  }
  return { sessions, commands: per * sessions, seconds, rate: (per * sessions) / seconds, violations, lost, connections, sids, serviceCpu, clientCpu, split };
}

type CpuSplit = { machine: number; service: number; redis: number; docker: number; containers: number; bench: number };

/** CPU ms so far: the machine, the service, every redis-server, Docker's daemons and shims, the sessions' containers, this process. */
function cpuSplit(servicePid: number, boxIds: string[]): CpuSplit {
  const own = process.cpuUsage();
  return { machine: machineMs(), service: processMs(servicePid), redis: commsMs(REDIS_COMMS), docker: commsMs(DOCKER_COMMS), containers: containersMs(boxIds), bench: (own.user + own.system) / 1000 };
}

/** ms per command of each share, and what is left of the machine's (the kernel's softirqs, other processes). */
function perCommand(a: CpuSplit, b: CpuSplit, commands: number): CpuSplit & { other: number } {
  const d = Object.fromEntries(Object.keys(a).map((k) => [k, (b[k as keyof CpuSplit] - a[k as keyof CpuSplit]) / commands])) as CpuSplit;
  return { ...d, other: d.machine - d.service - d.redis - d.docker - d.containers - d.bench };
}

const splitText = (s: CpuSplit & { other: number }) =>
  `machine ${s.machine.toFixed(2)} = service ${s.service.toFixed(2)} + Redis ${s.redis.toFixed(2)} + containers ${s.containers.toFixed(2)} + Docker ${s.docker.toFixed(2)} + bench ${s.bench.toFixed(2)} + other ${s.other.toFixed(2)} ms/command`;

/** Every master's Redis (one, or each node of a Cluster). */
const nodesOf = (redis: PipelineRedis) => ('nodes' in redis && typeof redis.nodes === 'function' ? (redis.nodes as (r: string) => PipelineRedis[])('master') : [redis]);

async function countConnections(redis: PipelineRedis): Promise<{ ours: number; total: number }> {
  const lists = await Promise.all(nodesOf(redis).map((n) => n.client('LIST') as Promise<string>));
  const lines = lists.join('\n').split('\n').filter(Boolean);
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

type Figures = {
  label: string; e2eP50: number; e2eP99: number; queueP50: number; parsedP50: number; parsedP99: number;
  levels: { sessions: number; rate: number; violations: number; lost: number; cpuMs: number; connections: number; split: CpuSplit & { other: number } }[];
  rssMiB: number; idleConnections: number;
};

/** Every figure of one checkout's service (`root`), on a fresh prefix. */
async function measure(root: string, label: string, redis: PipelineRedis, image?: string): Promise<Figures> {
  const port = await freePort();
  const service = await startService(port, root, image);
  const a = api(`http://127.0.0.1:${port}`);
  const say = (l: string) => process.stdout.write(`[${label}] ${l}\n`);
  const f: Figures = { label, e2eP50: 0, e2eP99: 0, queueP50: 0, parsedP50: NaN, parsedP99: NaN, levels: [], rssMiB: 0, idleConnections: 0 };
  try {
    const lat = await latency(a);
    Object.assign(f, { e2eP50: pct(lat.e2e, 50), e2eP99: pct(lat.e2e, 99), queueP50: pct(lat.queue, 50) });
    if (lat.parsedToStarted.length) Object.assign(f, { parsedP50: pct(lat.parsedToStarted, 50), parsedP99: pct(lat.parsedToStarted, 99) });
    say(`1 KiB write, ${SAMPLES} sequential one-command turns: enqueue→start p50 ${pct(lat.queue, 50).toFixed(1)} ms p99 ${pct(lat.queue, 99).toFixed(1)} ms; ` +
      `end to end (HTTP POST → 200) p50 ${f.e2eP50.toFixed(1)} ms p99 ${f.e2eP99.toFixed(1)} ms; parsed → started (timings) p50 ${f.parsedP50} ms p99 ${f.parsedP99} ms; ${lat.phases}`);
    for (const level of LEVELS) {
      const r = await throughput(a, level, redis, service.pid!);
      const cpuMs = (r.serviceCpu / r.commands) * 1000;
      f.levels.push({ sessions: level, rate: r.rate, violations: r.violations, lost: r.lost, cpuMs, connections: r.connections.ours, split: r.split });
      say(`${String(level).padStart(3)} sessions: ${r.commands} appends of 1 KiB in ${r.seconds.toFixed(2)} s = ${r.rate.toFixed(0)} commands/s; ` +
        `ordering violations ${r.violations}, lost ${r.lost}; Redis connections ours ${r.connections.ours} (all clients ${r.connections.total}); ` +
        `CPU: service ${cpuMs.toFixed(2)} ms/command (${((r.serviceCpu / r.seconds) * 100).toFixed(0)}% of a core), load generator ${((r.clientCpu / r.seconds) * 100).toFixed(0)}%; ${splitText(r.split)}`);
      if (level === Math.max(...LEVELS)) {
        f.rssMiB = rssOf(service.pid!).rssMiB;
        // Idle sessions must not hold connections: Workers close after THINKFLOW_WORKER_IDLE_MS (2 s here).
        await new Promise((r) => setTimeout(r, 4000));
        f.idleConnections = (await countConnections(redis)).ours;
        say(`service RSS after ${level} sessions: ${f.rssMiB.toFixed(0)} MiB; Redis connections once they are idle (4 s later): ours ${f.idleConnections}`);
      }
      await Promise.all(r.sids.map((sid) => a.del(sid)));
    }
  } finally {
    service.kill('SIGTERM');
    await new Promise((r) => service.once('exit', r));
    await cleanUp(redis);
  }
  return f;
}

async function cleanUp(redis: PipelineRedis): Promise<void> {
  for (const node of nodesOf(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${PREFIX}:*`, 'COUNT', 1000);
      cursor = next;
      for (const k of keys) await node.unlink(k); // one by one: on a Cluster the keys are in different slots
    } while (cursor !== '0');
  }
  const ids = execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${BOXES}`]).toString().split('\n').filter(Boolean);
  if (ids.length) execFileSync('docker', ['rm', '-f', ...ids], { stdio: 'ignore' });
  const vols = execFileSync('docker', ['volume', 'ls', '-q', '--filter', `name=^${BOXES}`]).toString().split('\n').filter(Boolean);
  if (vols.length) execFileSync('docker', ['volume', 'rm', '-f', ...vols], { stdio: 'ignore' });
}

function table(all: Figures[]): string[] {
  const row = (name: string, cell: (f: Figures) => string) => `${name.padEnd(44)}${all.map((f) => cell(f).padStart(22)).join('')}`;
  const lines = [row('', (f) => f.label)];
  lines.push(row('1 KiB write end to end p50 / p99 (ms)', (f) => `${f.e2eP50.toFixed(1)} / ${f.e2eP99.toFixed(1)}`));
  lines.push(row('enqueue→start p50 (ms)', (f) => f.queueP50.toFixed(1)));
  lines.push(row('closing tag parsed → started p50 / p99 (ms)', (f) => (Number.isNaN(f.parsedP50) ? 'no timings' : `${f.parsedP50} / ${f.parsedP99}`)));
  for (const [i, level] of LEVELS.entries()) {
    lines.push(row(`${level} sessions: commands/s`, (f) => f.levels[i]!.rate.toFixed(0)));
    lines.push(row(`${level} sessions: violations / lost`, (f) => `${f.levels[i]!.violations} / ${f.levels[i]!.lost}`));
    lines.push(row(`${level} sessions: service CPU ms/command`, (f) => f.levels[i]!.cpuMs.toFixed(2)));
    lines.push(row(`${level} sessions: machine / Redis / containers ms/cmd`, (f) => { const s = f.levels[i]!.split; return `${s.machine.toFixed(2)} / ${s.redis.toFixed(2)} / ${s.containers.toFixed(2)}`; }));
  }
  lines.push(row('service RSS at the top level (MiB)', (f) => f.rssMiB.toFixed(0)));
  lines.push(row('Redis connections once idle', (f) => String(f.idleConnections)));
  return lines;
}

/** Both checkouts' figures on one Redis target (the machine's, or a Cluster started on loopback here). */
async function onTarget(target: 'one' | 'cluster', all: Figures[]): Promise<void> {
  const cluster = target === 'cluster' ? await startCluster() : null;
  REDIS_URL = cluster?.url ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redis = createRedis(REDIS_URL, `tfbench-${tag}`);
  const where = cluster ? ' (Cluster)' : '';
  try {
    if (values.before) all.push(await measure(values.before, `before${where}`, redis, values['before-image']));
    all.push(await measure(ROOT.replace(/\/$/, ''), `this checkout${where}`, redis));
  } finally {
    redis.disconnect();
    await cluster?.stop();
  }
}

async function main(): Promise<void> {
  // --redis both: the same figures on one Redis and on a 3-master Cluster, in one run.
  const targets = values.cluster ? ['cluster' as const] : values.redis === 'both' ? ['one' as const, 'cluster' as const] : ['one' as const];
  const os = await import('node:os');
  console.log(`pipeline bench: ${new Date().toISOString()}, ${os.cpus().length} cores, node ${process.version}, ${targets.join(' + ')} Redis + Docker sandboxes, load ${os.loadavg()[0]!.toFixed(1)}`);
  const all: Figures[] = [];
  for (const t of targets) await onTarget(t, all);
  console.log(`\n${table(all).join('\n')}`);
  const judge = (ok: boolean, text: string) => console.log(`${ok ? 'met' : 'NOT MET'}: ${text}`);
  for (const mine of all.filter((f) => f.label.startsWith('this checkout'))) {
    const top = mine.levels.at(-1)!;
    judge(mine.e2eP50 <= 5, `${mine.label}: 1 KiB write end to end p50 ≤ 5 ms (${mine.e2eP50.toFixed(1)})`);
    judge(mine.parsedP50 <= 5 && mine.parsedP99 <= 25, `${mine.label}: closing tag parsed → started in a warm container p50 ≤ 5 ms, p99 ≤ 25 ms (${mine.parsedP50} / ${mine.parsedP99})`);
    judge(top.rate >= 1000, `${mine.label}: ≥ 1,000 commands/s at ${top.sessions} sessions (${top.rate.toFixed(0)})`);
    judge(mine.levels.every((l) => l.violations === 0 && l.lost === 0), `${mine.label}: 0 ordering violations and 0 lost at every level`);
  }
}

await main();
