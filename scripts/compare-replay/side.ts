// One side of the comparison: a checkout's own sandbox image, a private
// redis-server, and the checkout's real `thinkflow serve` with the built-in
// replay model. Everything started here is stopped here, by its own pid.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';

export interface Side {
  name: 'old' | 'new';
  checkout: string;
  url: string;
  /** the service's log file, named in errors */
  log: string;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((ok) => server.close(() => ok()));
  return port;
}

/** The image the checkout's own build script makes, under a tag of this tool. */
export function buildImage(checkout: string, image: string): void {
  const run = spawnSync('bash', ['sandbox-image/build.sh'], { cwd: checkout, env: { ...process.env, THINKFLOW_SANDBOX_IMAGE: image }, encoding: 'utf8' });
  process.stderr.write(run.stderr);
  if (run.status !== 0) throw new Error(`${checkout}: sandbox-image/build.sh failed (exit ${run.status})`);
}

async function stopChild(child: ChildProcess, what: string): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  child.kill('SIGTERM');
  const done = await Promise.race([exited.then(() => true), sleep(30_000).then(() => false)]);
  if (!done) {
    process.stderr.write(`compare-replay: ${what} (pid ${child.pid}) ignored SIGTERM for 30 s; killing it\n`);
    child.kill('SIGKILL');
    await exited;
  }
}

async function startRedis(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: ['ignore', openSync(join(dir, 'redis.log'), 'a'), 'inherit'],
  });
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) break;
    if (spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG') return { url: `redis://127.0.0.1:${port}`, child };
    await sleep(100);
  }
  await stopChild(child, 'redis-server');
  throw new Error(`redis-server on port ${port} did not answer; see ${join(dir, 'redis.log')}`);
}

/** Settings that would take the service off the built-in replay model or out of dev mode. */
const FOREIGN = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'THINKFLOW_MODEL', 'THINKFLOW_API_KEYS', 'THINKFLOW_REPLAY_SCRIPTS', 'THINKFLOW_POLICY_DIR', 'PORT', 'HOST', 'REDIS_URL'];

function serviceEnv(redisUrl: string, image: string, prefix: string, dir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of FOREIGN) delete env[k];
  return {
    ...env,
    REDIS_URL: redisUrl,
    THINKFLOW_SANDBOX_IMAGE: image,
    THINKFLOW_SANDBOX_PREFIX: prefix,
    THINKFLOW_WORKSPACE_DIR: join(dir, 'workspaces'),
    // No spare workspaces: fewer loop devices on a shared machine, and each
    // job's first command waits for its container the same way on both sides.
    THINKFLOW_WORKSPACE_SPARES: '0',
    THINKFLOW_LOG_LEVEL: 'warn',
  };
}

/** Removes what the service may have left: containers and volumes under this side's prefix, loop devices of its workspace images. */
function removeLeftovers(prefix: string, workspaces: string): void {
  const list = (args: string[]) => spawnSync('docker', args, { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  const containers = list(['ps', '-aq', '--filter', `name=^/${prefix}`]);
  if (containers.length) spawnSync('docker', ['rm', '-f', ...containers], { stdio: 'ignore' });
  const volumes = list(['volume', 'ls', '-q', '--filter', `name=^${prefix}`]);
  if (volumes.length) spawnSync('docker', ['volume', 'rm', '-f', ...volumes], { stdio: 'ignore' });
  // without losetup (no loop workspaces on this host) stdout is null: nothing to detach
  const loops = spawnSync('losetup', ['--list', '--noheadings', '--raw', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' }).stdout ?? '';
  for (const [dev, file] of loops.split('\n').map((l) => l.split(' '))) {
    if (dev && file?.startsWith(`${workspaces}/`)) spawnSync('losetup', ['--detach', dev], { stdio: 'ignore' });
  }
}

export async function startSide(name: 'old' | 'new', checkoutPath: string, image: string, workDir: string): Promise<Side> {
  const checkout = resolve(checkoutPath);
  if (!existsSync(join(checkout, 'node_modules'))) throw new Error(`${checkout} has no node_modules (symlink the main checkout's)`);
  const dir = join(workDir, name);
  mkdirSync(dir, { recursive: true });
  buildImage(checkout, image);
  const redis = await startRedis(dir);
  const port = await freePort();
  const prefix = `cmp-${name}-${process.pid}-`;
  const log = join(dir, 'serve.log');
  const out = openSync(log, 'a');
  const child = spawn(process.execPath, ['bin/thinkflow.mjs', 'serve', '--port', String(port), '--host', '127.0.0.1'], {
    cwd: checkout, env: serviceEnv(redis.url, image, prefix, dir), stdio: ['ignore', out, out],
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopChild(child, `${name} service`);
    await stopChild(redis.child, `${name} redis-server`);
    removeLeftovers(prefix, join(dir, 'workspaces'));
  };
  for (let i = 0; i < 240; i++) {
    if (child.exitCode !== null) break;
    const ok = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
    if (ok) return { name, checkout, url, log, stop };
    await sleep(250);
  }
  await stop();
  throw new Error(`the ${name} service (${checkout}) did not become ready; see ${log}`);
}
