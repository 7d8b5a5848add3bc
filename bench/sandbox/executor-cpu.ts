// npm run bench:executor [-- --before DIR] — the executor's own CPU per 1 KiB
// write, outside any container: this checkout's sandbox-image/executor/main.mjs
// and, with --before, another checkout's (a worktree of the commit before a
// change), alternating in one run. Each runs as root with commands as root
// (THINKFLOW_RUN_AS=0:0: no uid switch) on a scratch directory, driven over
// stdin one request at a time, so the figure is the tools' work and the event
// loop's, not Docker's. CPU is read from /proc/<pid>/stat after the executor
// said ready, so start-up is not counted.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { before: { type: 'string' }, n: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '4' } } });
const N = Number(values.n);
const ROUNDS = Number(values.rounds);
const ROOT = new URL('../../', import.meta.url).pathname;
const KiB = 'x'.repeat(1023) + '\n';
const TARGET_RATIO = 0.5; // the synchronous tools must at least halve the executor's CPU per write

function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, USER_HZ 100
}

type Executor = { child: ChildProcess; request: (body: object) => Promise<void>; close: () => void };

async function start(root: string, workspace: string): Promise<Executor> {
  // BENCH_EXECUTOR_PROFILE_DIR: the executor's CPU profile is written there when it exits.
  const prof = process.env.BENCH_EXECUTOR_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_EXECUTOR_PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...prof, path.join(root, 'sandbox-image/executor/main.mjs')], {
    // The control socket goes in the scratch directory, not the host's /var/lib/thinkflow/egress.
    env: { ...process.env, THINKFLOW_WORKSPACE: workspace, THINKFLOW_RUN_AS: '0:0', THINKFLOW_WORKSPACE_FS: 'loop', THINKFLOW_CONTROL_SOCKET: path.join(workspace, '.control.sock') },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let buf = '';
  let ready: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const waiting = new Map<string, () => void>();
  child.stdout!.on('data', (c: Buffer) => {
    buf += c.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const msg = JSON.parse(buf.slice(0, i)) as { type?: string; rid?: string; result?: { ok?: boolean; error?: string } };
      buf = buf.slice(i + 1);
      if (msg.type === 'ready') ready!();
      else if (msg.rid) {
        if (msg.result?.ok === false) throw new Error(`executor write failed: ${msg.result.error}`);
        waiting.get(msg.rid)?.();
        waiting.delete(msg.rid);
      }
    }
  });
  await isReady;
  let seq = 0;
  return {
    child,
    request: (body) => new Promise<void>((resolve) => {
      const rid = `b${++seq}`;
      waiting.set(rid, resolve);
      child.stdin!.write(JSON.stringify({ rid, ...body }) + '\n');
    }),
    close: () => child.stdin!.end(),
  };
}

async function round(e: Executor): Promise<number> {
  const c0 = cpuMs(e.child.pid!);
  for (let i = 0; i < N; i++) await e.request({ op: 'exec', command: { tool: 'write', path: `bench/w${i % 4}.txt`, content: KiB }, limits: {} });
  return (cpuMs(e.child.pid!) - c0) / N;
}

async function main(): Promise<void> {
  const roots: [string, string][] = [['this checkout', ROOT], ...(values.before ? [['before', values.before] as [string, string]] : [])];
  const dirs = roots.map(() => mkdtempSync(path.join(tmpdir(), 'tf-exec-bench-')));
  const executors = await Promise.all(roots.map(([, root], i) => start(root, dirs[i]!)));
  const perWrite: number[][] = roots.map(() => []);
  try {
    for (const e of executors) await round(e); // warm-up
    for (let r = 0; r < ROUNDS; r++) {
      for (let j = 0; j < executors.length; j++) {
        const k = r % 2 === 0 ? j : executors.length - 1 - j;
        perWrite[k]!.push(await round(executors[k]!));
      }
    }
  } finally {
    for (const e of executors) e.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(`executor CPU per 1 KiB write (no container, ${N} writes × ${ROUNDS} alternating rounds, node ${process.version}):`);
  roots.forEach(([label], i) => console.log(`  ${label}: ${mean(perWrite[i]!).toFixed(3)} ms (rounds: ${perWrite[i]!.map((x) => x.toFixed(3)).join(', ')})`));
  if (roots.length === 2) {
    const ratio = mean(perWrite[0]!) / mean(perWrite[1]!);
    const met = ratio <= TARGET_RATIO;
    console.log(`this/before: ×${ratio.toFixed(2)} (target ≤ ×${TARGET_RATIO}: ${met ? 'met' : 'NOT met'})`);
    if (!met) process.exitCode = 1;
  }
}

await main();
