// npm run bench:redis-commands — the Redis work and service CPU of one
// `tf-append`: a redis-server of its own (port --port), the real service
// (Docker sandboxes), one session sent --commands appends in one
// turn (POST /v1/sessions/:id/commands). Commands are counted with MONITOR on
// a separate connection, without the readiness probe's PINGs and the bench's
// own connections; EVALSHA is named by script (the service's and BullMQ's),
// and the commands a script runs inside Redis are counted apart. The service
// runs in a child process (its CPU read from /proc, 10 ms ticks), measured in
// a second pass without MONITOR, at 1 and at --sessions sessions. The floor: BullMQ alone adding
// and processing the same number of jobs (addBulk, concurrency 1).
// --before <checkout> runs the same measurements on another checkout's
// services (e.g. a worktree of the commit before), side by side.
//   npm run bench:redis-commands [-- --commands 100 --sessions 20 --port 7501 --before /tmp/tf-base --profile /tmp/prof]
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import * as bullScripts from 'bullmq/dist/esm/scripts/index.js';
import { Redis } from 'ioredis';

const { values } = parseArgs({ options: {
  commands: { type: 'string', default: '100' },
  sessions: { type: 'string', default: '20' },
  port: { type: 'string', default: '7501' },
  before: { type: 'string' },
  /** a directory: the service child writes a V8 CPU profile there (--cpu-prof), to find what a command costs */
  profile: { type: 'string' },
} });
const N = Number(values.commands);
const SESSIONS = Number(values.sessions);
const PORT = Number(values.port);
const URL_ = `redis://127.0.0.1:${PORT}`;
const tag = Math.random().toString(36).slice(2, 8);
const TARGET = 40;
const sha1 = (s: string) => createHash('sha1').update(s).digest('hex');

type Count = { total: number; client: number; lua: number; byName: Map<string, number> };
type Figures = { label: string; count: Count; cpuMs1: number; cpuMsN: number | null };

async function ownRedis(): Promise<{ client: Redis; stop(): void }> {
  const child = spawn('redis-server', ['--port', String(PORT), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const client = new Redis(PORT, '127.0.0.1', { retryStrategy: () => 50, connectionName: 'bench-admin' });
  let ready = false;
  client.on('error', (err: Error) => { if (ready) console.error(`bench redis: ${err.message}`); });
  await client.ping();
  ready = true;
  return { client, stop: () => { ready = false; client.disconnect(); child.kill('SIGKILL'); } };
}

/** SHA → script name: BullMQ's scripts and the service's (as the child reports its redis.ts registers them). */
function scriptNames(service: [string, string][]): Map<string, string> {
  const names = new Map<string, string>();
  for (const s of Object.values(bullScripts) as { name: string; content: string }[]) names.set(sha1(s.content), `bull:${s.name}`);
  for (const [sha, name] of service) names.set(sha, name);
  return names;
}

/**
 * The service of a checkout in a child process (`tree`: this one, or --before's):
 * it prints its URL and the SHA of each script it registers, and closes on SIGTERM.
 * A child, so that another checkout's modules load with their own paths; its CPU is read from /proc.
 */
async function startTree(tree: string, env: Record<string, string>): Promise<{ child: ChildProcess; url: string; scripts: [string, string][] }> {
  const code = `
    const { createHash } = await import('node:crypto');
    const { loadConfig } = await import(${JSON.stringify(`${tree}/services/config/index.ts`)});
    const { startService } = await import(${JSON.stringify(`${tree}/services/main/index.ts`)});
    const { LUA } = await import(${JSON.stringify(`${tree}/services/pipeline/redis.ts`)});
    const svc = await startService(loadConfig(process.env), {});
    process.on('SIGTERM', () => svc.close().then(() => process.exit(0)));
    const scripts = LUA.map((s) => [createHash('sha1').update(s.lua).digest('hex'), s.name]);
    process.stdout.write(JSON.stringify({ url: svc.url, scripts }) + String.fromCharCode(10));`;
  const prof = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : [];
  const child = spawn(process.execPath, [...prof, '--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: tree, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env },
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('{"url"'));
      if (line) resolve({ child, ...(JSON.parse(line) as { url: string; scripts: [string, string][] }) });
    });
    child.once('exit', (c) => reject(new Error(`service child exited (${c})`)));
  });
}

/** user+system CPU ms of a process so far (clock ticks are 100/s on Linux). */
const cpuMsOf = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};

/** MONITOR on a raw socket (ioredis' monitor mode trips on BullMQ's blocking commands); lines parsed as they come. */
async function rawMonitor(): Promise<{ socket: Socket; lines: { args: string[]; source: string }[] }> {
  const socket = connect(PORT, '127.0.0.1');
  const lines: { args: string[]; source: string }[] = [];
  let buf = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\r\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 2);
      const m = /^\+[\d.]+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
      if (!m) continue;
      const args = [...m[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((x) => x[1]!);
      lines.push({ source: m[1]!, args });
    }
  });
  await new Promise<void>((r) => socket.once('connect', () => r()));
  socket.write('MONITOR\r\n');
  return { socket, lines };
}

/** Counts what Redis runs while `work` runs: top-level commands of the service's connections and, apart, those run inside scripts. */
async function monitored(admin: Redis, names: Map<string, string>, work: () => Promise<void>): Promise<Count> {
  const excluded = async () => {
    const out = new Set<string>();
    for (const line of ((await admin.client('LIST')) as string).split('\n')) {
      const addr = /addr=(\S+)/.exec(line)?.[1];
      const name = /name=(\S*)/.exec(line)?.[1] ?? '';
      if (addr && (name.includes('-probe') || name.startsWith('bench-'))) out.add(addr);
    }
    return out;
  };
  const monitor = await rawMonitor();
  const skip = await excluded();
  const count: Count = { total: 0, client: 0, lua: 0, byName: new Map() };
  const seen = monitor.lines;
  await new Promise((r) => setTimeout(r, 100));
  const from = seen.length;
  await work();
  await new Promise((r) => setTimeout(r, 200));
  const lines = seen.slice(from);
  monitor.socket.destroy();
  for (const a of await excluded()) skip.add(a);
  // BENCH_TRACE=1: the raw lines of the middle of the window (what one command does, in order).
  if (process.env.BENCH_TRACE) for (const l of lines.slice(lines.length / 2, lines.length / 2 + 200)) if (!skip.has(l.source)) console.log(l.source, l.args.slice(0, 3).join(' ').slice(0, 120));
  const add = (name: string) => count.byName.set(name, (count.byName.get(name) ?? 0) + 1);
  for (const { args, source } of lines) {
    const cmd = (args[0] ?? '').toUpperCase();
    if (source === 'lua') { count.lua++; count.total++; add(`  (in script) ${cmd}`); continue; }
    if (skip.has(source)) continue;
    count.client++; count.total++;
    if (cmd === 'EVALSHA') add(`EVALSHA ${names.get(args[1]!) ?? args[1]!.slice(0, 8)}`);
    else if (cmd === 'EVAL') add(`EVAL ${names.get(sha1(args[1]!)) ?? '?'}`);
    else add(cmd);
  }
  return count;
}

/** BullMQ alone: N jobs added in one addBulk and processed one at a time by a no-op worker. */
async function floor(admin: Redis, names: Map<string, string>): Promise<Figures> {
  const conn = new Redis(PORT, '127.0.0.1', { maxRetriesPerRequest: null, connectionName: 'floor' });
  const q = new Queue('floor', { connection: conn, prefix: `floor-${tag}` });
  let done = 0;
  let finished: () => void = () => {};
  const w = new Worker('floor', async () => { if (++done % N === 0) setImmediate(finished); }, { connection: conn, prefix: `floor-${tag}`, concurrency: 1 });
  await w.waitUntilReady();
  const batch = () => q.addBulk(Array.from({ length: N }, (_, i) => ({ name: 'c', data: { i }, opts: { removeOnComplete: true, removeOnFail: true } })));
  const round = async () => { const p = new Promise<void>((r) => { finished = r; }); await batch(); await p; };
  await round();
  const count = await monitored(admin, names, round);
  const c0 = process.cpuUsage();
  await round();
  const c = process.cpuUsage(c0);
  await w.close(); await q.close(); conn.disconnect();
  return { label: 'BullMQ alone (floor)', count, cpuMs1: (c.user + c.system) / 1000 / N, cpuMsN: null };
}

async function service(tree: string, label: string, admin: Redis): Promise<Figures> {
  const slug = label.replace(/[^a-z]/g, '').slice(0, 8);
  const svc = await startTree(tree, {
    PORT: '0', REDIS_URL: URL_, THINKFLOW_REDIS_PREFIX: `tfrc-${tag}-${slug}`, THINKFLOW_SANDBOX_PREFIX: `tfrc-${tag}-${slug}-`,
    THINKFLOW_API_KEYS: '', THINKFLOW_POLICY_DIR: `${tree}/policies`, THINKFLOW_LOG_LEVEL: 'error',
    THINKFLOW_MAX_SESSIONS_PER_KEY: '1000', THINKFLOW_MAX_RUNNING_PER_KEY: '1000', THINKFLOW_MAX_TURNS_PER_KEY: '1000',
  });
  const names = scriptNames(svc.scripts);
  const base = svc.url!;
  const sids: string[] = [];
  const session = async () => {
    const r = await fetch(`${base}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const sid = ((await r.json()) as { session_id: string }).session_id;
    sids.push(sid);
    return sid;
  };
  let line = 0;
  const turn = async (sid: string, n: number) => {
    const body = Array.from({ length: n }, (_, i) => `<tf-append id="${i + 1}" path="log.txt">${String(++line).padStart(6, '0')} ${'x'.repeat(100)}\n</tf-append>`).join('\n');
    const r = await fetch(`${base}/v1/sessions/${sid}/commands`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body });
    const out = (await r.json()) as { results: { status: string }[] };
    if (r.status !== 200 || out.results.some((x) => x.status !== 'succeeded')) throw new Error(`turn: ${r.status} ${JSON.stringify(out).slice(0, 300)}`);
  };
  try {
    const one = await session();
    await turn(one, 1); // container and baseline outside the measured window
    await turn(one, N);
    const count = await monitored(admin, names, () => turn(one, N));
    const cpuOf = async (sessions: string[]) => {
      const c0 = cpuMsOf(svc.child.pid!);
      await Promise.all(sessions.map((sid) => turn(sid, N)));
      return (cpuMsOf(svc.child.pid!) - c0) / (N * sessions.length);
    };
    const cpuMs1 = await cpuOf([one]);
    const many = await Promise.all(Array.from({ length: SESSIONS }, () => session()));
    await Promise.all(many.map((sid) => turn(sid, 1)));
    const cpuMsN = await cpuOf(many);
    return { label, count, cpuMs1, cpuMsN };
  } finally {
    for (const sid of sids) await fetch(`${base}/v1/sessions/${sid}`, { method: 'DELETE' });
    svc.child.kill('SIGTERM');
    await new Promise((r) => svc.child.once('exit', r));
  }
}

function print(figures: Figures[]): void {
  const all = [...new Set(figures.flatMap((f) => [...f.count.byName.keys()]))].sort((a, b) => Number(a.startsWith(' ')) - Number(b.startsWith(' ')) || a.localeCompare(b));
  const cell = (v: number) => (v / N).toFixed(2).padStart(10);
  console.log(`\n${'per command'.padEnd(44)}${figures.map((f) => f.label.slice(0, 22).padStart(24)).join('')}`);
  for (const name of all) console.log(`${name.padEnd(44)}${figures.map((f) => cell(f.count.byName.get(name) ?? 0).padStart(24)).join('')}`);
  const row = (what: string, v: (f: Figures) => string) => console.log(`${what.padEnd(44)}${figures.map((f) => v(f).padStart(24)).join('')}`);
  row('= commands sent (top level)', (f) => cell(f.count.client));
  row('= commands run inside scripts', (f) => cell(f.count.lua));
  row('= total (MONITOR, scripts included)', (f) => cell(f.count.total));
  row('service CPU ms/command, 1 session', (f) => f.cpuMs1.toFixed(3));
  row(`service CPU ms/command, ${SESSIONS} sessions`, (f) => (f.cpuMsN === null ? '-' : f.cpuMsN.toFixed(3)));
}

const redis = await ownRedis();
let ok = false;
try {
  const here = new URL('../../', import.meta.url).pathname.replace(/\/$/, '');
  console.log(`redis-commands bench: ${new Date().toISOString()}, node ${process.version}, own redis-server on ${PORT}, ${N} tf-append in one turn of one session`);
  const figures: Figures[] = [await floor(redis.client, scriptNames([]))];
  if (values.before) figures.push(await service(values.before, 'before', redis.client));
  const now = await service(here, 'this checkout', redis.client);
  figures.push(now);
  print(figures);
  const per = now.count.total / N;
  ok = per <= TARGET;
  console.log(`\n${ok ? 'met' : 'NOT MET'}: ≤ ${TARGET} Redis commands per tf-append, scripts included (${per.toFixed(1)})`);
  console.log(`${now.cpuMsN !== null && now.cpuMsN <= 0.5 ? 'met' : 'NOT MET'}: service CPU ≤ 0.5 ms per command at ${SESSIONS} sessions (${now.cpuMsN?.toFixed(3)})`);
} finally {
  redis.stop();
}
process.exit(ok ? 0 : 1);
