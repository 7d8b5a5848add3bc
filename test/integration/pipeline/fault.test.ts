import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { containerName } from '../../../services/sandbox/index.ts';
import { freePort, ping } from '../own-redis.ts';
import { client, cleanupPrefix, removeSandboxes, sandboxPrefix, startWorker, testConfig, testPrefix } from './helpers.ts';

// Fault tests: a worker process killed with SIGKILL mid-command, and Redis
// killed and restarted from its AOF. Real Redis, real Docker.

const children: ChildProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  // Services first (while their Redis still runs), then any child left over.
  for (const f of cleanups.reverse()) await f().catch(() => {});
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, f: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = await f();
    if (v !== undefined) return v;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

type Entry = { id: string; turn: number; status: string; error: string | null };

describe('fault tolerance (real Redis and Docker)', () => {
  it('kill -9 of a worker mid-command: interrupted, not run twice, the session goes on elsewhere', async () => {
    const prefix = testPrefix('kill');
    const boxes = sandboxPrefix('kill');
    const cfg = testConfig(prefix, { PORT: '0', THINKFLOW_ROLE: 'api', THINKFLOW_SANDBOX_PREFIX: boxes });
    const env = {
      REDIS_URL: cfg.redisUrl, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_POLICY_DIR: cfg.policyDir,
      THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_LOCK_MS: '2000', THINKFLOW_STALLED_INTERVAL_MS: '1000',
    };
    const api = await startService(cfg, {});
    cleanups.push(async () => { await api.close(); await cleanupPrefix(prefix); await removeSandboxes(boxes); });
    expect(api.runtime.pool).toBeNull(); // this process only serves HTTP
    const c = client(api.url!);
    const first = await startWorker(env, children);

    const sid = ((await (await c.json('/v1/sessions', {})).json()) as { session_id: string }).session_id;
    const turn = c.text(`/v1/sessions/${sid}/commands`, [
      '<tf-bash id="1" cmd="echo run >> runs.txt; sleep 10; echo finished >> runs.txt" />',
      '<tf-touch id="2" path="after-kill" />',
    ].join('\n')).then((r) => r.json() as Promise<{ results: { id: string; status: string; error?: string }[] }>);
    const ledger = async () => ((await (await c.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: Entry[] }).entries;
    await until('command 1 running', async () => ((await ledger())[0]?.status === 'running' ? true : undefined));
    // `running` is set before the sandbox is up (a new workspace image, a
    // container start): wait for bash's side effect itself, seen from outside
    // as root in the container, not through the files API, which would go
    // through the same sandbox meanwhile.
    await until('bash wrote its side effect', async () => {
      try {
        execFileSync('docker', ['exec', containerName(boxes, sid), 'test', '-s', '/workspace/runs.txt'], { stdio: 'ignore' });
        return true;
      } catch {
        return undefined; // not yet
      }
    });
    const bashStarted = Date.now();
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));

    const second = await startWorker(env, children);
    const { results } = await turn;
    if (results[0]?.status !== 'interrupted') {
      const { readEvents } = await import('../../../services/pipeline/event-reader.ts');
      for (const e of await readEvents(api.runtime.redis, api.runtime.keys, sid)) process.stderr.write(`${e.seq} ${e.type} ${e.at} ${e.index} ${e.type === 'command_finished' ? e.record.status : ''}\n`);
    }
    expect(results.map((r) => [r.id, r.status])).toEqual([['1', 'interrupted'], ['2', 'skipped']]);
    expect(results[0]!.error).toMatch(/died mid-way/);
    expect(await (await c.get(`/v1/sessions/${sid}/files/runs.txt`)).text()).toBe('run\n');
    expect((await c.get(`/v1/sessions/${sid}/files/after-kill`)).status).toBe(404);

    const next = (await (await c.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="1" cmd="grep -c run runs.txt; echo next" />')).json()) as
      { results: { status: string; stdout?: string }[] };
    // Still exactly one run, and the dead worker's process was stopped when its
    // command was marked interrupted: it never reaches its "finished" line.
    expect(next.results[0]).toMatchObject({ status: 'succeeded', stdout: '1\nnext\n' });
    await sleep(Math.max(0, bashStarted + 11_000 - Date.now()));
    expect(await (await c.get(`/v1/sessions/${sid}/files/runs.txt`)).text()).toBe('run\n');
    expect((await ledger()).map((e) => e.status)).toEqual(['interrupted', 'skipped', 'succeeded']);
    second.kill('SIGTERM');
    await new Promise((r) => second.once('exit', r));
  }, 90_000);

  it('Redis killed and restarted from its AOF: the ledger is intact and the session goes on', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'tf-aof-'));
    const redisUrl = `redis://127.0.0.1:${port}`;
    const startRedis = async () => {
      const p = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes',
        '--appendfsync', 'always', '--save', '', '--daemonize', 'no'], { stdio: 'ignore' });
      children.push(p);
      await until('redis up', async () => ((await ping(port)) ? true : undefined));
      return p;
    };
    let redis = await startRedis();
    const prefix = testPrefix('aof');
    const boxes = sandboxPrefix('aof');
    const svc: ServiceHandle = await startService(testConfig(prefix, { PORT: '0', REDIS_URL: redisUrl, THINKFLOW_SANDBOX_PREFIX: boxes }), {});
    cleanups.push(async () => { await svc.close(); await removeSandboxes(boxes); redis.kill('SIGKILL'); });
    const c = client(svc.url!);
    const sid = ((await (await c.json('/v1/sessions', { files: { 'seed.txt': 'seed\n' } })).json()) as { session_id: string }).session_id;
    const body = Array.from({ length: 20 }, (_, i) => `<tf-append id="${i + 1}" path="log.txt">${i + 1}\n</tf-append>`).join('\n')
      + '\n<tf-bash id="21" cmd="exit 4" />\n<tf-touch id="22" path="never" />';
    await c.text(`/v1/sessions/${sid}/commands`, body);
    const before = await (await c.get(`/v1/sessions/${sid}/ledger`)).text();
    expect(JSON.parse(before).entries).toHaveLength(22); // the seeded file is not a command

    redis.kill('SIGKILL');
    await new Promise((r) => redis.once('exit', r));
    expect(await ping(port)).toBe(false);
    redis = await startRedis();

    const after = await until('API answering again', async () => {
      const r = await c.get(`/v1/sessions/${sid}/ledger`).catch(() => null);
      return r && r.status === 200 ? r.text() : undefined;
    });
    expect(after).toBe(before);
    const next = (await (await c.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="1" cmd="wc -l < log.txt" />')).json()) as
      { results: { status: string; stdout?: string }[] };
    expect(next.results[0]).toMatchObject({ status: 'succeeded', stdout: '20\n' });
    await cleanupPrefix(prefix, redisUrl);
  }, 90_000);
});
