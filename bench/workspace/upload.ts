// Workspace upload (issue 20): PUT /v1/sessions/:id/workspace of a
// 10,000-file tar.gz through a `thinkflow serve` child process (real Redis
// and Docker), next to `docker cp` of the same archive into the same kind of
// container in the same run; plus the service's RSS while a large archive
// streams through it (it must never hold the body whole).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createRedis, deleteByPattern } from '../../services/pipeline/index.ts';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;

export type UploadBenchOptions = { runs: number; files: number; bigMiB: number; image: string };
type Service = { url: string; child: ChildProcess; prefix: string; boxes: string; sessions: string[] };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

function makeTree(dir: string, files: number): void {
  const perDir = 100;
  for (let i = 0; i < files; i++) {
    const d = path.join(dir, `d${Math.floor(i / perDir)}`);
    if (i % perDir === 0) mkdirSync(d, { recursive: true });
    writeFileSync(path.join(d, `f${i % perDir}.txt`), `file ${i}\n`.repeat(20));
  }
}

async function startService(image: string): Promise<Service> {
  const tag = randomBytes(3).toString('hex');
  const prefix = `tfbench-ws-${tag}`;
  const boxes = `tfbench-ws-${tag}-`;
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(process.execPath, [`${ROOT}bin/thinkflow.mjs`, 'serve', '--role', 'all'], {
    cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_API_KEYS: '', THINKFLOW_SANDBOX_IMAGE: image },
  });
  child.stderr!.resume();
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (await fetch(`${url}/healthz`).then((r) => r.ok, () => false)) return { url, child, prefix, boxes, sessions: [] };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error('the service did not start');
}

async function newSession(svc: Service): Promise<string> {
  const url = svc.url;
  const r = await fetch(`${url}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  const sid = ((await r.json()) as { session_id: string }).session_id;
  svc.sessions.push(sid);
  // Started (container up), so the figure is the upload's, not a cold start's.
  await fetch(`${url}/v1/sessions/${sid}/commands`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '<tf-bash id="w" cmd="true" />' });
  return sid;
}

async function put(url: string, sid: string, file: string, type: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/sessions/${sid}/workspace`, {
    method: 'PUT', headers: { 'content-type': type, 'content-length': String(statSync(file).size) },
    body: createReadStream(file) as unknown as BodyInit, duplex: 'half',
  } as RequestInit);
  const text = await res.text();
  if (!res.ok) throw new Error(`upload: ${res.status} ${text}`);
  return performance.now() - t0;
}

async function dockerCp(container: string, file: string, dest: string): Promise<number> {
  await run('docker', ['exec', '-u', '1000', container, 'mkdir', '-p', dest]);
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const cp = spawn('docker', ['cp', '-', `${container}:${dest}`], { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    cp.stderr!.on('data', (c: Buffer) => { err += c; });
    createReadStream(file).pipe(cp.stdin!);
    cp.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`docker cp exited ${code}: ${err}`))));
  });
  return performance.now() - t0;
}

function rssKiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
}

/** Peak RSS growth of the service while `work` runs, sampled every 20 ms. */
async function peakGrowth(pid: number, work: () => Promise<unknown>): Promise<{ baseMiB: number; growthMiB: number }> {
  const base = rssKiB(pid);
  let peak = base;
  const timer = setInterval(() => { peak = Math.max(peak, rssKiB(pid)); }, 20);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return { baseMiB: base / 1024, growthMiB: (peak - base) / 1024 };
}

/** Sessions removed through the API (containers, volumes, workspace images), then the service and its Redis keys. */
async function stop(svc: Service): Promise<void> {
  for (const sid of svc.sessions) {
    const r = await fetch(`${svc.url}/v1/sessions/${sid}`, { method: 'DELETE' });
    if (r.status !== 204) process.stderr.write(`bench: DELETE ${sid} answered ${r.status}; remove ${svc.boxes}* by hand\n`);
  }
  svc.child.kill('SIGTERM');
  await new Promise((r) => svc.child.once('exit', r));
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'bench-workspace');
  await deleteByPattern(redis, `${svc.prefix}:*`);
  redis.disconnect();
}

export async function benchUpload(o: UploadBenchOptions): Promise<string> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'tfbench-ws-'));
  const svc = await startService(o.image);
  try {
    makeTree(path.join(tmp, 'tree'), o.files);
    const archive = path.join(tmp, 'files.tar.gz');
    await run('tar', ['czf', archive, '-C', path.join(tmp, 'tree'), '.']);
    const api: number[] = [];
    const again: number[] = [];
    const cp: number[] = [];
    for (let i = 0; i < o.runs; i++) {
      const sid = await newSession(svc);
      api.push(await put(svc.url, sid, archive, 'application/gzip'));
      // The same archive over itself: every file is replaced (the old ones go at the commit).
      again.push(await put(svc.url, sid, archive, 'application/gzip'));
      cp.push(await dockerCp(`${svc.boxes}${sid}`, archive, `/workspace/cp-${i}`));
    }
    const big = path.join(tmp, 'big.tar');
    writeFileSync(path.join(tmp, 'big.bin'), randomBytes(o.bigMiB * 1024 * 1024));
    await run('tar', ['cf', big, '-C', tmp, 'big.bin']);
    const bigSid = await newSession(svc);
    let bigMs = 0;
    const mem = await peakGrowth(svc.child.pid!, async () => { bigMs = await put(svc.url, bigSid, big, 'application/x-tar'); });
    const kib = Math.round(statSync(archive).size / 1024);
    return [
      `archive: ${o.files} files in ${o.files / 100} directories, ${kib} KiB gzip'd; ${o.runs} runs, each on a new session whose container is up; medians (all runs)`,
      '',
      '| what | median | runs |',
      '|---|---|---|',
      `| PUT /v1/sessions/:id/workspace (new files) | ${fmt(median(api))} | ${api.map(fmt).join(', ')} |`,
      `| PUT again, same archive (every file replaced) | ${fmt(median(again))} | ${again.map(fmt).join(', ')} |`,
      `| docker cp - CONTAINER:/workspace/cp-N (same archive) | ${fmt(median(cp))} | ${cp.map(fmt).join(', ')} |`,
      '',
      `large archive: ${o.bigMiB} MiB (one random file, plain tar) in ${fmt(bigMs)}; service RSS ${mem.baseMiB.toFixed(0)} MiB before, peak growth ${mem.growthMiB.toFixed(1)} MiB while it streamed`,
      `target: the 10,000-file upload ≤ 3 s. machine: ${os.cpus().length} cores, load average at the end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} (shared)`,
    ].join('\n');
  } finally {
    await stop(svc);
    rmSync(tmp, { recursive: true, force: true });
  }
}
