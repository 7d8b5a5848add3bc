// npm run bench:redis-write-batch — one ioredis connection three ways, side by side in one run: plain (a socket
// write per command), ioredis's auto-pipelining (what the service used before redis-write-batch.ts), and the
// service's BatchingConnector (the socket corked for one loop turn). Two figures each: a sequential GET's round
// trip (the command path's latency: every step of a turn awaits one), and CPU per step under load (200 chains, each
// step three commands at once then one alone, the shape of the pipeline's run). Each mode runs in a fresh child
// process (its own JIT), rounds alternate the order, against a redis-server of the bench's own.
//   npm run bench:redis-write-batch [-- --rounds 3 --chains 200 --steps 100 --sequential 3000]
import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis, type RedisOptions } from 'ioredis';
import { BatchingConnector } from '../../services/pipeline/redis-write-batch.ts';
import { freePort, pct } from '../lib/measure.ts';

const MODES = ['plain', 'autopipelining', 'batched'] as const;
type Mode = (typeof MODES)[number];
type Figures = { mode: Mode; sequentialUs: number; loadMs: number; cpuUsPerStep: number };

const { values } = parseArgs({ options: {
  rounds: { type: 'string', default: '3' },
  chains: { type: 'string', default: '200' },
  steps: { type: 'string', default: '100' },
  sequential: { type: 'string', default: '3000' },
  child: { type: 'string' },
  port: { type: 'string' },
} });
const CHAINS = Number(values.chains);
const STEPS = Number(values.steps);
const SEQUENTIAL = Number(values.sequential);

function options(mode: Mode, port: number): RedisOptions {
  const base: RedisOptions = { port, host: '127.0.0.1', maxRetriesPerRequest: 1 };
  if (mode === 'autopipelining') return { ...base, enableAutoPipelining: true };
  if (mode === 'batched') return { ...base, Connector: BatchingConnector as unknown as RedisOptions['Connector'] };
  return base;
}

async function measure(mode: Mode, port: number): Promise<Figures> {
  const r = new Redis(options(mode, port));
  await r.set('x', 'v');
  for (let i = 0; i < SEQUENTIAL; i++) await r.get('x'); // warm-up: JIT and socket
  let t0 = performance.now();
  for (let i = 0; i < SEQUENTIAL; i++) await r.get('x');
  const sequentialUs = ((performance.now() - t0) / SEQUENTIAL) * 1000;
  const cpu0 = process.cpuUsage();
  t0 = performance.now();
  await Promise.all(Array.from({ length: CHAINS }, async (_, k) => {
    for (let i = 0; i < STEPS; i++) {
      await Promise.all([r.get(`a${k}`), r.incr(`b${k}`), r.hget(`h${k}`, 'f')]);
      await r.set(`c${k}`, 'v');
    }
  }));
  const loadMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const counted = Number(await r.get(`b${CHAINS - 1}`));
  if (counted < STEPS) throw new Error(`${mode}: chain ${CHAINS - 1} counted ${counted} steps of ${STEPS}`);
  r.disconnect();
  return { mode, sequentialUs, loadMs, cpuUsPerStep: (cpu.user + cpu.system) / (CHAINS * STEPS) };
}

function runChild(mode: Mode, port: number): Figures {
  const out = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--child', mode, '--port', String(port),
    '--chains', String(CHAINS), '--steps', String(STEPS), '--sequential', String(SEQUENTIAL)], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop()!) as Figures;
}

async function main(): Promise<void> {
  const port = await freePort();
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  try {
    const probe = new Redis({ port, host: '127.0.0.1', retryStrategy: () => 50, lazyConnect: true });
    probe.on('error', () => undefined); // refused until the server listens; ping below retries
    await probe.connect().catch(() => undefined);
    await probe.ping();
    probe.disconnect();
    const all: Figures[] = [];
    for (let round = 0; round < Number(values.rounds); round++) {
      const order = round % 2 === 0 ? MODES : [...MODES].reverse();
      for (const mode of order) all.push(runChild(mode, port));
    }
    report(all);
  } finally {
    server.kill('SIGKILL');
  }
}

function report(all: Figures[]): void {
  console.log(`redis write batching: ${new Date().toISOString()}, ${Number(values.rounds)} rounds, ${CHAINS} chains × ${STEPS} steps, ${SEQUENTIAL} sequential GETs`);
  const med = (m: Mode, f: keyof Omit<Figures, 'mode'>) => pct(all.filter((x) => x.mode === m).map((x) => x[f]), 50);
  for (const m of MODES) {
    const rows = all.filter((x) => x.mode === m);
    console.log(`${m.padEnd(15)} sequential GET µs ${rows.map((x) => x.sequentialUs.toFixed(0)).join(' / ')}; load ms ${rows.map((x) => x.loadMs.toFixed(0)).join(' / ')}; CPU µs/step ${rows.map((x) => x.cpuUsPerStep.toFixed(1)).join(' / ')}`);
  }
  const verdict = (ok: boolean, text: string) => console.log(`${ok ? 'met' : 'NOT MET'}: ${text}`);
  const [seqB, seqA] = [med('batched', 'sequentialUs'), med('autopipelining', 'sequentialUs')];
  const [cpuB, cpuA] = [med('batched', 'cpuUsPerStep'), med('autopipelining', 'cpuUsPerStep')];
  const seqPlain = med('plain', 'sequentialUs');
  verdict(seqB <= seqA, `batched sequential round trip ≤ auto-pipelining's (medians ${seqB.toFixed(0)} vs ${seqA.toFixed(0)} µs; plain ${seqPlain.toFixed(0)})`);
  verdict(seqB <= seqPlain * 1.15, `batched sequential round trip within 15 % of plain (${(seqB / seqPlain).toFixed(2)}×)`);
  verdict(cpuB <= cpuA * 0.8, `batched CPU per step under load ≤ 0.8 × auto-pipelining's (medians ${cpuB.toFixed(1)} vs ${cpuA.toFixed(1)} µs, ${(cpuB / cpuA).toFixed(2)}×)`);
}

if (values.child) {
  const figures = await measure(values.child as Mode, Number(values.port));
  console.log(JSON.stringify(figures));
} else {
  await main();
}
