import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startService } from '../../services/main/index.ts';
import { freePort, ping } from '../integration/own-redis.ts';
import { client, cleanupPrefix, newSession, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from '../integration/pipeline/helpers.ts';
import { sleep, until, type Entry } from './helpers.ts';

// Redis goes away for 5 s, twice: stopped (SIGSTOP: sockets stay open and
// nothing answers) and shut down then restarted from its AOF. Meanwhile
// /readyz is 503 naming Redis and the API answers 503 `redis_unavailable`
// within a bounded time instead of hanging; afterwards the service recovers
// with no ledger entry lost and no job left `running`. Redis of its own.

const children: ChildProcess[] = [];
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const f of cleanups.reverse()) await f().catch(() => {});
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

type Results = { results: { id: string; status: string; stdout?: string }[] };
type ErrorBody = { error: { code: string; message: string } };

/** One request's answer and how long it took; a request that hangs fails the test at `limitMs`. */
async function timed(f: () => Promise<Response>, limitMs = 3000): Promise<{ status: number; body: any; ms: number }> {
  const t0 = Date.now();
  const res = await Promise.race([f(), sleep(limitMs).then(() => { throw new Error(`no answer within ${limitMs} ms`); })]) as Response;
  return { status: res.status, body: await res.json(), ms: Date.now() - t0 };
}

describe('Redis outage (real Redis of its own, AOF on)', () => {
  it('503 naming Redis while it is stopped or restarting, then recovery with nothing lost or stuck', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'tf-outage-'));
    const startRedis = async () => {
      const p = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes',
        '--appendfsync', 'always', '--save', '', '--daemonize', 'no'], { stdio: 'ignore' });
      children.push(p);
      await until('redis up', async () => ((await ping(port)) ? true : undefined), 10_000);
      return p;
    };
    let redis = await startRedis();
    const prefix = testPrefix('outage');
    const boxes = sandboxPrefix('outage');
    const svc = await startService(testConfig(prefix, { PORT: '0', REDIS_URL: `redis://127.0.0.1:${port}`, THINKFLOW_SANDBOX_PREFIX: boxes }), {});
    cleanups.push(async () => { await svc.close(); await removeSandboxes(boxes); redis.kill('SIGKILL'); rmSync(dir, { recursive: true, force: true }); });
    const c = client(svc.url!);
    const sid = await newSession(c);
    const body = Array.from({ length: 10 }, (_, i) => `<tf-append id="${i + 1}" path="log.txt">${i + 1}\n</tf-append>`).join('\n');
    expect(((await (await c.text(`/v1/sessions/${sid}/commands`, body)).json()) as Results).results.every((r) => r.status === 'succeeded')).toBe(true);
    const ledger = async () => ((await (await c.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: Entry[] }).entries;
    expect((await (await c.get('/readyz')).json())).toMatchObject({ status: 'ready', redis: true, unavailable: [], reason: null });

    const duringOutage = async (what: string) => {
      const ready = await until(`${what}: /readyz 503`, async () => {
        const r = await timed(() => c.get('/readyz'));
        return r.status === 503 ? r : undefined;
      }, 3000);
      expect(ready.body).toMatchObject({ status: 'not_ready', redis: false, unavailable: ['redis'] });
      expect(ready.body.reason).toMatch(/^redis: /);
      const read = await timed(() => c.get(`/v1/sessions/${sid}/ledger`));
      expect([what, read.status, (read.body as ErrorBody).error.code]).toEqual([what, 503, 'redis_unavailable']);
      const write = await timed(() => c.json('/v1/sessions', {}));
      expect([what, write.status, (write.body as ErrorBody).error.code]).toEqual([what, 503, 'redis_unavailable']);
    };

    // 1. SIGSTOP for 5 s while a command runs and its request waits.
    const inflight = c.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="1" cmd="sleep 1; echo during" />');
    await until('command running', async () => ((await ledger()).at(-1)?.status === 'running' ? true : undefined), 30_000);
    const before = (await ledger()).slice(0, 10);
    const stopped = Date.now();
    redis.kill('SIGSTOP');
    await duringOutage('stopped');
    const cut = await inflight;
    expect(Date.now() - stopped).toBeLessThan(3000);
    expect([cut.status, ((await cut.json()) as ErrorBody).error.code]).toEqual([503, 'redis_unavailable']);
    await sleep(Math.max(0, stopped + 5000 - Date.now()));
    redis.kill('SIGCONT');
    await recovered();
    const afterStop = await until('the command of the outage final', async () => {
      const entries = await ledger();
      return entries[10]?.status === 'succeeded' ? entries : undefined;
    }, 20_000);
    expect(afterStop.slice(0, 10)).toEqual(before);
    expect(afterStop[10]).toMatchObject({ id: '1', status: 'succeeded', stdout: 'during\n' });

    // 2. Shut down (AOF flushed) and started again 5 s later from the same AOF.
    const snapshot = await ledger();
    redis.kill('SIGTERM');
    await new Promise((r) => redis.once('exit', r));
    const down = Date.now();
    await duringOutage('restarting');
    await sleep(Math.max(0, down + 5000 - Date.now()));
    redis = await startRedis();
    await recovered();
    expect(await ledger()).toEqual(snapshot);
    const next = (await (await c.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="1" cmd="wc -l < log.txt" />')).json()) as Results;
    expect(next.results[0]).toMatchObject({ status: 'succeeded', stdout: '10\n' });
    expect((await ledger()).map((e) => e.status).filter((s) => s !== 'succeeded')).toEqual([]);
    const queue = svc.runtime.pipeline.queues.queue(sid);
    // Nothing stuck: the run job ends once its linger on the empty list (THINKFLOW_RUN_LINGER_MS, 250 ms) is over.
    await expect.poll(() => queue.getJobCounts('active', 'wait', 'delayed'), { timeout: 3000 }).toEqual({ active: 0, wait: 0, delayed: 0 });
    // Closing after the outages is bounded too (a Worker idle through a restart may never close on its own).
    const closeStarted = Date.now();
    await svc.close();
    expect(Date.now() - closeStarted).toBeLessThan(15_000);
    await cleanupPrefix(prefix, `redis://127.0.0.1:${port}`);

    async function recovered() {
      await until('/readyz 200 again', async () => ((await c.get('/readyz')).status === 200 ? true : undefined), 15_000);
      expect((await (await c.get('/readyz')).json())).toMatchObject({ status: 'ready', redis: true, unavailable: [] });
    }
  }, 180_000);
});
