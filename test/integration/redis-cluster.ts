import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

// A 3-master Redis Cluster of a test's own on loopback: three cluster-enabled
// redis-servers joined by `redis-cli --cluster create`, no replicas, no
// persistence. Ports: THINKFLOW_TEST_CLUSTER_PORTS ("7101,7102,7103"), else
// three free ones, so CI and other processes never clash.

const run = promisify(execFile);

export type TestCluster = { url: string; ports: number[]; stop(): Promise<void> };

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * Three ports p with p and p + 10000 (the cluster bus) both free: from the
 * env's list when all are free, else searched upwards from 30000 + a random offset.
 */
async function clusterPorts(): Promise<number[]> {
  const wanted = (process.env.THINKFLOW_TEST_CLUSTER_PORTS ?? '').split(',').filter(Boolean).map(Number);
  const usable = async (p: number) => p > 0 && p < 55535 && (await portFree(p)) && (await portFree(p + 10000));
  if (wanted.length === 3 && (await Promise.all(wanted.map(usable))).every(Boolean)) return wanted;
  const out: number[] = [];
  for (let p = 30000 + Math.floor(Math.random() * 15000); out.length < 3 && p < 55535; p++) if (await usable(p)) out.push(p);
  if (out.length < 3) throw new Error('no three free ports (with their cluster bus ports) on 127.0.0.1');
  return out;
}

function waitListening(port: number, child: ChildProcess): Promise<void> {
  const until = Date.now() + 10_000;
  return new Promise((resolve, reject) => {
    const tryOnce = () => {
      if (child.exitCode !== null) return reject(new Error(`redis-server on ${port} exited (${child.exitCode})`));
      const sock = createConnection(port, '127.0.0.1');
      sock.once('connect', () => { sock.destroy(); resolve(); });
      sock.once('error', () => {
        sock.destroy();
        if (Date.now() > until) reject(new Error(`redis-server on ${port} did not listen within 10 s`));
        else setTimeout(tryOnce, 50);
      });
    };
    tryOnce();
  });
}

/** Starts the cluster and waits until every node reports `cluster_state:ok`. */
export async function startCluster(): Promise<TestCluster> {
  const ports = await clusterPorts();
  const dir = mkdtempSync(join(tmpdir(), 'tf-cluster-'));
  const children = ports.map((p) => spawn('redis-server', [
    '--port', String(p), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${p}.conf`),
    '--cluster-node-timeout', '5000', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--dir', dir,
  ], { stdio: 'ignore' }));
  const stop = async () => {
    await Promise.all(children.map((c) => c.exitCode === null
      ? new Promise((r) => { c.once('exit', r); c.kill('SIGKILL'); }) : undefined));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(ports.map((p, i) => waitListening(p, children[i]!)));
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    for (const p of ports) await waitClusterOk(p);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`, ports, stop };
}

async function waitClusterOk(port: number): Promise<void> {
  for (let i = 0; ; i++) {
    const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info']);
    if (/cluster_state:ok/.test(stdout)) return;
    if (i > 200) throw new Error(`cluster node ${port}: ${stdout.split('\n')[0]}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
