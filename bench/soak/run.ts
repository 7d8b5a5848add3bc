// npm run bench:soak — not in CI. One `thinkflow serve --role all` child and a
// redis-server of its own (so Redis's memory is this load's alone), driven for
// --seconds (600) by --sessions (200) virtual users. Each user works in one
// session for --turns (20) turns of --appends (10) 1 KiB appends to one file,
// checks that the file holds exactly its lines in order, deletes the session
// and starts a new one: a steady state, since deleted sessions' keys expire
// after THINKFLOW_RETENTION_S (set to 60 s here; 7 days by default) and their
// sandboxes are removed. Every --sample-s (30) it samples the service's RSS
// and Redis's used_memory. Judged in code: after --warmup-s (120), both stay
// within ±10 % of their post-warm-up median, with 0 lost and 0 reordered.
//   npm run bench:soak [-- --seconds 600 --sessions 200]
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';

const { values } = parseArgs({ options: {
  seconds: { type: 'string', default: '600' }, sessions: { type: 'string', default: '200' }, turns: { type: 'string', default: '20' },
  appends: { type: 'string', default: '10' }, 'sample-s': { type: 'string', default: '30' }, 'warmup-s': { type: 'string', default: '120' },
} });
const SECONDS = Number(values.seconds);
const USERS = Number(values.sessions);
const TURNS = Number(values.turns);
const APPENDS = Number(values.appends);
const SAMPLE_MS = Number(values['sample-s']) * 1000;
const WARMUP_MS = Number(values['warmup-s']) * 1000;
const ROOT = new URL('../../', import.meta.url).pathname;
const tag = Math.random().toString(36).slice(2, 8);
const BOXES = `tfsoak-${tag}-`;
const KIB = 'x'.repeat(1000);
const TOLERANCE = 0.1;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => resolve(p)); });
  });
}

async function startRedis(port: number, dir: string): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes',
    '--appendfsync', 'everysec', '--maxmemory', '4gb', '--maxmemory-policy', 'noeviction'], { stdio: 'ignore' });
  const probe = new Redis({ port, lazyConnect: true, retryStrategy: () => null });
  probe.on('error', () => undefined); // refused until the server listens: retried below
  for (let i = 0; i < 100; i++) {
    if (await probe.connect().then(() => true, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  probe.disconnect();
  return child;
}

async function startService(port: number, redisUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [`${ROOT}bin/thinkflow.mjs`, 'serve', '--role', 'all'], {
    cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', REDIS_URL: redisUrl, THINKFLOW_SANDBOX_PREFIX: BOXES, THINKFLOW_API_KEYS: '',
      THINKFLOW_RETENTION_S: '60', THINKFLOW_WORKER_IDLE_MS: '2000',
      // One load generator stands for USERS tenants.
      THINKFLOW_MAX_SESSIONS_PER_KEY: '10000', THINKFLOW_MAX_RUNNING_PER_KEY: '10000', THINKFLOW_MAX_TURNS_PER_KEY: '10000',
      // Longer than the load generator's own idle timeout (undici: 4 s), so the service never closes a kept-alive
      // socket the client is about to reuse (the 600 s run of 2026-12-03 died on one such race at its end).
      THINKFLOW_KEEPALIVE_TIMEOUT_MS: '65000',
      THINKFLOW_MAX_CONNECTIONS_PER_ADDRESS: '10000', THINKFLOW_STORE_BYTES_PER_KEY: String(2 * 1024 ** 3) },
  });
  await new Promise<void>((resolve, reject) => {
    let log = '';
    const onData = (d: Buffer) => { log += d.toString(); if (log.includes('listening on')) { child.stderr!.off('data', onData); child.stderr!.resume(); resolve(); } };
    child.stderr!.on('data', onData);
    child.once('exit', (c) => reject(new Error(`service exited (${c}): ${log}`)));
    // What the service says after it started: errors and warnings only, and the last lines when it exits early.
    let tail: string[] = [];
    child.stderr!.on('data', (d: Buffer) => {
      for (const line of d.toString().split('\n')) {
        if (!line) continue;
        tail = [...tail.slice(-40), line];
        if (/"level":(50|60)/.test(line)) process.stdout.write(`  service: ${line.slice(0, 600)}\n`);
      }
    });
    child.once('exit', (code, signal) => {
      if (signal !== 'SIGTERM') process.stdout.write(`  service exited (code ${code}, signal ${signal}); its last lines:\n${tail.map((l) => `    ${l.slice(0, 600)}`).join('\n')}\n`);
    });
  });
  return child;
}

type Tally = { commands: number; lost: number; reordered: number; sessions: number; errors: number };

/** One virtual user: sessions of TURNS turns until the deadline; each session's file is checked line by line. */
async function user(base: string, deadline: number, t: Tally): Promise<void> {
  const post = (p: string, body: string, type = 'application/json') => fetch(`${base}${p}`, { method: 'POST', headers: { 'content-type': type }, body });
  while (Date.now() < deadline) {
    // A request cut by its connection is counted as failed; the user goes on with a new session.
    await session(base, post, deadline, t).catch((err: Error) => {
      t.errors++;
      process.stdout.write(`  a request failed: ${err.message} (${String((err.cause as Error | undefined)?.message ?? '')})\n`);
    });
  }
}

/** One session of TURNS turns (or until the deadline), checked and deleted. */
async function session(base: string, post: (p: string, body: string, type?: string) => Promise<Response>, deadline: number, t: Tally): Promise<void> {
  const sid = ((await (await post('/v1/sessions', '{}')).json()) as { session_id: string }).session_id;
  let sent = 0;
  let failed = 0;
  for (let turn = 0; turn < TURNS && Date.now() < deadline; turn++) {
    const body = Array.from({ length: APPENDS }, (_, i) => `<tf-append id="${i + 1}" path="log.txt">${String(++sent).padStart(6, '0')} ${KIB}\n</tf-append>`).join('\n');
    const r = await post(`/v1/sessions/${sid}/commands`, body, 'text/plain');
    if (r.status !== 200) { t.errors++; await r.text(); break; }
    const { results } = (await r.json()) as { results: { status: string }[] };
    t.commands += results.length;
    failed += results.filter((x) => x.status !== 'succeeded').length + (APPENDS - results.length);
  }
  const lines = (await (await fetch(`${base}/v1/sessions/${sid}/files/log.txt`)).text()).split('\n').filter(Boolean).map((l) => Number(l.slice(0, 6)));
  // Lost: every command that did not succeed, and any that said it did but left no line.
  t.lost += failed + Math.max(0, sent - failed - lines.length);
  // Out of order: a line not after the one before it (a failed command leaves a gap, not a disorder).
  lines.forEach((n, i) => { if (i > 0 && n <= lines[i - 1]!) t.reordered++; });
  await fetch(`${base}/v1/sessions/${sid}`, { method: 'DELETE' });
  t.sessions++;
}

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tf-soak-'));
  const redisPort = await freePort();
  const redisProc = await startRedis(redisPort, dir);
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const port = await freePort();
  const service = await startService(port, redisUrl);
  const redis = new Redis(redisUrl);
  const started = Date.now();
  const samples: { at: number; rss: number; redis: number }[] = [];
  const sample = async () => {
    const info = await redis.info('memory');
    samples.push({ at: (Date.now() - started) / 1000, rss: rssMiB(service.pid!), redis: Number(/used_memory:(\d+)/.exec(info)![1]) / 2 ** 20 });
    const s = samples.at(-1)!;
    process.stdout.write(`  t=${s.at.toFixed(0)} s  service RSS ${s.rss.toFixed(0)} MiB  Redis used_memory ${s.redis.toFixed(1)} MiB\n`);
  };
  const timer = setInterval(() => void sample(), SAMPLE_MS);
  const tally: Tally = { commands: 0, lost: 0, reordered: 0, sessions: 0, errors: 0 };
  try {
    process.stdout.write(`soak: ${USERS} sessions at a time, ${SECONDS} s, turns of ${APPENDS} 1 KiB appends, ${TURNS} turns a session\n`);
    await Promise.all(Array.from({ length: USERS }, () => user(`http://127.0.0.1:${port}`, started + SECONDS * 1000, tally)));
    await sample();
  } finally {
    clearInterval(timer);
    service.kill('SIGTERM');
    await new Promise((r) => service.once('exit', r));
    redis.disconnect();
    redisProc.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
    const ids = execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${BOXES}`]).toString().split('\n').filter(Boolean);
    if (ids.length) execFileSync('docker', ['rm', '-f', ...ids], { stdio: 'ignore' });
  }
  // Judged while 200 sessions run: after the warm-up, and not once the users stop opening sessions
  // at SECONDS (the last ones then wind down and their keys expire: memory falls, by design).
  const steady = samples.filter((s) => s.at * 1000 >= WARMUP_MS && s.at <= SECONDS);
  const windDown = samples.filter((s) => s.at > SECONDS);
  if (windDown.length) process.stdout.write(`not judged (after ${SECONDS} s, winding down): ${windDown.map((s) => `t=${s.at.toFixed(0)} s RSS ${s.rss.toFixed(0)} MiB, Redis ${s.redis.toFixed(1)} MiB`).join('; ')}\n`);
  const judge = (name: string, xs: number[]) => {
    if (xs.length < 2) return `${name}: too few samples after the warm-up to judge`;
    const m = median(xs);
    const worst = Math.max(...xs.map((x) => Math.abs(x - m) / m));
    return `${name}: median ${m.toFixed(1)} MiB after warm-up, worst sample ${(worst * 100).toFixed(1)} % off (target ±${TOLERANCE * 100} %: ${worst <= TOLERANCE ? 'met' : 'NOT met'})`;
  };
  const secs = (Date.now() - started) / 1000;
  process.stdout.write([
    `${tally.commands} appends in ${tally.sessions} sessions over ${secs.toFixed(0)} s = ${(tally.commands / secs).toFixed(0)} commands/s; lost ${tally.lost}, reordered ${tally.reordered}, failed requests ${tally.errors} (target 0 each: ${tally.lost + tally.reordered + tally.errors === 0 ? 'met' : 'NOT met'})`,
    judge('service RSS', steady.map((s) => s.rss)),
    judge('Redis used_memory', steady.map((s) => s.redis)),
  ].join('\n') + '\n');
}

await main();
