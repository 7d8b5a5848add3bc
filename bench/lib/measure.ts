import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
// What the service benches (bench/pipeline) share: percentiles of a sample, a free loopback port, a service child and its clean-up.
// What the service benches (bench/pipeline) share: percentiles of a sample, a free loopback port, a service child.

/** Nearest-rank percentile of an unsorted sample. */
export const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

/** A port nobody listens on right now, on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => resolve(p)); });
  });
}

/**
 * `thinkflow serve --role all` of the checkout at `root` as a child, on `env` over this process's; resolves once its
 * API listens. BENCH_SERVICE_NODE_ARGS (e.g. "--cpu-prof") goes to its node, for profiling.
 */
export async function serveAll(root: string, env: Record<string, string>): Promise<ChildProcess> {
  const nodeArgs = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, `${root}/bin/thinkflow.mjs`, 'serve', '--role', 'all'], {
    cwd: root, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env },
  });
  await new Promise<void>((resolve, reject) => {
    let log = '';
    child.stderr!.on('data', (d: Buffer) => { log += d.toString(); if (log.includes('listening on')) resolve(); });
    child.once('exit', (c) => reject(new Error(`service exited (${c}): ${log}`)));
  });
  return child;
}

/** Stops a `serveAll` child, then removes the containers and volumes of its sandbox prefix `boxes`. */
export async function stopService(service: ChildProcess, boxes: string): Promise<void> {
  service.kill('SIGTERM');
  await new Promise((r) => service.once('exit', r));
  const ids = execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${boxes}`]).toString().split('\n').filter(Boolean);
  if (ids.length) execFileSync('docker', ['rm', '-f', ...ids], { stdio: 'ignore' });
  const vols = execFileSync('docker', ['volume', 'ls', '-q', '--filter', `name=^${boxes}`]).toString().split('\n').filter(Boolean);
  if (vols.length) execFileSync('docker', ['volume', 'rm', '-f', ...vols], { stdio: 'ignore' });
}
