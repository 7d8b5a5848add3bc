// npm run bench:workspace — the workspace out of its sandbox (issue 20):
// GET …/workspace of a 100 MiB workspace (MB/s, and the RSS this process
// gains while streaming it) and GET …/changes on 10,000 files with 10
// changed, each next to `docker cp` of the same data in the same run; plus
// what the baseline of those 10,000 files costs (time, bytes). Targets are
// judged here. `--update-results` writes the `## Workspace` section of
// bench/RESULTS.md.
//
// The service runs in this process (real Redis, Docker, HTTP on loopback);
// downloads are made by curl, so the RSS figure is the service's own.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { promisify } from 'node:util';
import { loadConfig } from '../../services/config/index.ts';
import { startService, type ServiceHandle } from '../../services/main/index.ts';
import { createRedis, deleteByPattern } from '../../services/pipeline/index.ts';
import { containerName } from '../../services/sandbox/index.ts';
import { updateResults } from '../sandbox/results.ts';
import { gzipWorkspaceNote, makeTable, median, type Row } from './table.ts';

const RUNS = Number(process.env.BENCH_N ?? 5);
const MiB = 1024 * 1024;
const run = promisify(execFile);
const redisPrefix = `tfbench-ws-${randomBytes(3).toString('hex')}`;
const boxes = `tfbench-ws-${randomBytes(3).toString('hex')}-`;

// 100 MiB: 50 MiB of text in 500 files (what a source tree compresses like), 50 MiB of random bytes in 50.
const MAKE_100_MIB = `python3 -c "
import os, random
random.seed(7)
words = ['alpha', 'beta', 'gamma', 'delta', 'return', 'const', 'function', 'import', 'export', '{', '}', '=>', 'if', 'else']
os.makedirs('text', exist_ok=True); os.makedirs('bin', exist_ok=True)
for i in range(500):
    with open('text/f%03d.ts' % i, 'w') as f:
        f.write(''.join(' '.join(random.choice(words) for _ in range(12)) + chr(10) for _ in range(1750))[:104857])
for i in range(50):
    with open('bin/b%02d.bin' % i, 'wb') as f: f.write(os.urandom(1048576))
"`;
// 10,000 files of about 4 KiB in 100 directories.
const MAKE_10K = `python3 -c "
import os
for d in range(100):
    os.makedirs('src/d%03d' % d, exist_ok=True)
    for f in range(100):
        with open('src/d%03d/f%03d.txt' % (d, f), 'w') as out:
            out.write(''.join('line %d of file %d/%d\\n' % (i, d, f) for i in range(200)))
"`;
const TOUCH_10 = `python3 -c "
for d in range(10):
    with open('src/d%03d/f050.txt' % d, 'a') as out: out.write('changed\\n')
"`;

let svc: ServiceHandle;
const sessions: string[] = [];
const api = (path: string, init: RequestInit = {}) => fetch(`${svc.url}${path}`, init);

async function newSession(): Promise<string> {
  const res = await api('/v1/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  const sid = ((await res.json()) as { session_id: string }).session_id;
  sessions.push(sid);
  return sid;
}

async function bash(sid: string, cmd: string): Promise<void> {
  const attr = cmd.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  const res = await api(`/v1/sessions/${sid}/commands`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `<tf-bash id="1" timeout="600" cmd="${attr}" />` });
  const r = ((await res.json()) as { results: { status: string; stderr?: string }[] }).results[0]!;
  if (r.status !== 'succeeded') throw new Error(`${cmd.slice(0, 60)}: ${r.status} ${r.stderr ?? ''}`);
}

/**
 * Downloads `path` with curl (a client of its own, as `docker cp` is), the
 * bytes dropped; the RSS this process (the service) gains meanwhile, sampled
 * every 10 ms. `rate` caps curl's pace: a slow client must not make the service buffer.
 */
async function download(path: string, rate?: string): Promise<{ ms: number; bytes: number; rssGrowth: number; cpuMs: number }> {
  global.gc?.();
  const before = process.memoryUsage().rss;
  const cpu0 = process.cpuUsage();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const t0 = performance.now();
  const args = ['-sS', '--fail', '-o', '/dev/null', '-w', '%{size_download}', ...(rate ? ['--limit-rate', rate] : []), `${svc.url}${path}`];
  const { stdout } = await run('curl', args).finally(() => clearInterval(sampler));
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { ms, bytes: Number(stdout), rssGrowth: Math.max(0, Math.max(peak, process.memoryUsage().rss) - before), cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** `docker cp CONTAINER:/workspace -` (a tar on stdout), bytes counted and dropped. */
function dockerCp(sid: string): Promise<{ ms: number; bytes: number }> {
  const t0 = performance.now();
  const child = spawn('docker', ['cp', `${containerName(boxes, sid)}:/workspace`, '-'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let bytes = 0;
  child.stdout.on('data', (c: Buffer) => (bytes += c.length));
  return new Promise((resolve, reject) => child.on('close', (code) => (code === 0 ? resolve({ ms: performance.now() - t0, bytes }) : reject(new Error(`docker cp exited ${code}`)))));
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

async function downloadRows(): Promise<Row[]> {
  const sid = await newSession();
  await bash(sid, MAKE_100_MIB);
  const workspaceBytes = 100 * MiB;
  const rate = (ms: number) => workspaceBytes / 1e6 / (ms / 1000);
  await download(`/v1/sessions/${sid}/workspace?format=tar`); // warm-up: the first stream through this process loads and compiles its code
  // Interleaved, so a change in the machine's load touches each the same.
  const runs = { tar: [] as Awaited<ReturnType<typeof download>>[], 'tar.gz': [] as Awaited<ReturnType<typeof download>>[], cp: [] as { ms: number }[] };
  for (let i = 0; i < RUNS; i++) {
    runs.tar.push(await download(`/v1/sessions/${sid}/workspace?format=tar`));
    runs.cp.push(await dockerCp(sid));
    runs['tar.gz'].push(await download(`/v1/sessions/${sid}/workspace?format=tar.gz`));
  }
  const cpRate = rate(median(runs.cp.map((r) => r.ms)));
  const rows: Row[] = (['tar', 'tar.gz'] as const).map((format) => {
    const mbps = rate(median(runs[format].map((r) => r.ms)));
    const rss = Math.max(...runs[format].map((r) => r.rssGrowth)) / MiB;
    const cpu = median(runs[format].map((r) => r.cpuMs));
    return {
      work: `download 100 MiB workspace (${format}, ${(runs[format][0]!.bytes / MiB).toFixed(1)} MiB sent)`, via: 'GET …/workspace',
      figure: `${mbps.toFixed(0)} MB/s (${(mbps / cpRate).toFixed(2)}× docker cp), RSS +${rss.toFixed(1)} MiB, service CPU ${cpu.toFixed(0)} ms`,
      target: format === 'tar' ? '≥ 100 MB/s, RSS ≤ +32 MiB' : 'RSS ≤ +32 MiB', meets: (format === 'tar' ? mbps >= 100 : true) && rss <= 32,
    };
  });
  const slow = await download(`/v1/sessions/${sid}/workspace?format=tar`, '25M');
  rows.push({ work: 'the same, to a client reading at 25 MB/s', via: 'GET …/workspace (curl --limit-rate)', figure: `${rate(slow.ms).toFixed(0)} MB/s, RSS +${(slow.rssGrowth / MiB).toFixed(1)} MiB`,
    target: 'RSS ≤ +32 MiB', meets: slow.rssGrowth / MiB <= 32 });
  rows.push({ work: 'the same 100 MiB workspace', via: 'docker cp', figure: `${cpRate.toFixed(0)} MB/s`, target: '', meets: null });
  return rows;
}

async function changesRows(): Promise<Row[]> {
  const sid = await newSession();
  await bash(sid, MAKE_10K);
  const workspace = svc.runtime.sandboxes.workspace!;
  // What seeding or an upload does when it is done (pipeline/baseline.ts resetBaseline).
  const baseline = await timed(() => workspace.setBaseline(sid));
  const { stdout: du } = await run('docker', ['exec', containerName(boxes, sid), 'du', '-sb', '/workspace/src']);
  await bash(sid, TOUCH_10);
  const lists = [];
  for (let i = 0; i < RUNS; i++) {
    lists.push(await timed(async () => (await (await api(`/v1/sessions/${sid}/changes`)).json()) as { changes: unknown[] }));
  }
  if (lists[0]!.value.changes.length !== 10) throw new Error(`expected 10 changes, got ${lists[0]!.value.changes.length}`);
  const patches = [];
  for (let i = 0; i < RUNS; i++) patches.push(await download(`/v1/sessions/${sid}/changes?format=patch`));
  const cps = [];
  for (let i = 0; i < RUNS; i++) cps.push(await dockerCp(sid));
  const listMs = median(lists.map((l) => l.ms));
  const b = baseline.value;
  return [
    { work: `baseline of 10,000 files (${(Number(du.split('\t')[0]) / MiB).toFixed(1)} MiB)`, via: 'setBaseline (after seeding; the first command after an upload)', figure: `${baseline.ms.toFixed(0)} ms, ${(b.stored_bytes / MiB).toFixed(1)} MiB stored`, target: '', meets: null },
    { work: 'changes, 10,000 files, 10 changed', via: 'GET …/changes', figure: `${listMs.toFixed(0)} ms (max ${Math.max(...lists.map((l) => l.ms)).toFixed(0)})`, target: '≤ 500 ms', meets: listMs <= 500 },
    { work: 'the same as a patch', via: 'GET …/changes?format=patch', figure: `${median(patches.map((p) => p.ms)).toFixed(0)} ms`, target: '', meets: null },
    { work: 'the same 10,000 files', via: 'docker cp', figure: `${median(cps.map((c) => c.ms)).toFixed(0)} ms`, target: '', meets: null },
  ];
}

async function main(): Promise<void> {
  svc = await startService(loadConfig({
    ...process.env, PORT: '0', THINKFLOW_REDIS_PREFIX: redisPrefix, THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_API_KEYS: '', THINKFLOW_LOG_LEVEL: 'warn',
  }), {});
  try {
    const rows = [...(await downloadRows()), ...(await changesRows())];
    const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
    const out = [
      `machine: ${os.cpus().length} cores, Node ${process.version}, Docker ${(await run('docker', ['version', '-f', '{{.Server.Version}}'])).stdout.trim()}; load average at the end ${load} (the machine is shared); median of ${RUNS} runs per row`,
      '',
      makeTable(rows),
      '',
      gzipWorkspaceNote,
    ].join('\n');
    process.stdout.write(`${out}\n`);
    if (process.argv.includes('--update-results')) await updateResults('npm run bench:workspace -- --update-results', out, 'Workspace');
    if (rows.some((r) => r.meets === false)) process.exitCode = 1;
  } finally {
    // DELETE takes a session's container, volume and workspace image away.
    for (const sid of sessions) await api(`/v1/sessions/${sid}`, { method: 'DELETE' });
    await svc.close();
    const r = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'bench-cleanup');
    await deleteByPattern(r, `${redisPrefix}:*`).finally(() => r.disconnect());
  }
}

await main();
