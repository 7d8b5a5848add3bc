import { execFileSync, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startService } from '../../services/main/index.ts';
import { containerName } from '../../services/sandbox/index.ts';
import { client, cleanupPrefix, newSession, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from '../integration/pipeline/helpers.ts';
import { fileInSandbox, serveChild, sleep, until, type Entry } from './helpers.ts';

// SIGTERM drains a `thinkflow serve` process: it stops taking requests and
// jobs at once, lets what runs finish within THINKFLOW_SHUTDOWN_GRACE_S, then
// marks what still runs `interrupted`, and exits 0. What was queued meanwhile
// is run by another worker process. Real processes, Redis, BullMQ and Docker.

const children: ChildProcess[] = [];
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const f of cleanups.reverse()) await f().catch(() => {});
});

type Results = { results: { id: string; status: string; stdout?: string; error?: string }[] };

async function setup(name: string) {
  const prefix = testPrefix(name);
  const boxes = sandboxPrefix(name);
  const cfg = testConfig(prefix, { PORT: '0', THINKFLOW_ROLE: 'api', THINKFLOW_SANDBOX_PREFIX: boxes });
  // This process only serves HTTP (no worker): it reads the ledgers and enqueues while workers come and go.
  const api = await startService(cfg, {});
  cleanups.push(async () => { await api.close(); await cleanupPrefix(prefix); await removeSandboxes(boxes); });
  const env = {
    REDIS_URL: cfg.redisUrl, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_POLICY_DIR: cfg.policyDir, THINKFLOW_SANDBOX_PREFIX: boxes,
    THINKFLOW_WORKER_IDLE_MS: '3000', THINKFLOW_API_KEYS: '',
    ...(process.env.THINKFLOW_SANDBOX_IMAGE ? { THINKFLOW_SANDBOX_IMAGE: process.env.THINKFLOW_SANDBOX_IMAGE } : {}),
  };
  const c = client(api.url!);
  const ledger = async (sid: string) => ((await (await c.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: Entry[] }).entries;
  return { boxes, env, c, ledger };
}

describe('graceful shutdown (SIGTERM)', () => {
  it('finishes the running command and the request in flight, takes no new work, exits 0; another worker runs what was queued', async () => {
    const { boxes, env, c, ledger } = await setup('drain');
    const a = await serveChild('all', { ...env, THINKFLOW_SHUTDOWN_GRACE_S: '20' }, children);
    const sid = await newSession(c);
    const inflight = fetch(`${a.url}/v1/sessions/${sid}/commands`, {
      method: 'POST', headers: { 'content-type': 'text/plain' },
      body: '<tf-bash id="1" cmd="echo started > started.txt; sleep 3; echo done" />',
    });
    await until('bash started in the sandbox', async () => (fileInSandbox(boxes, sid, 'started.txt') ? true : undefined), 60_000);
    const signalled = Date.now();
    a.child.kill('SIGTERM');
    await sleep(300);

    // New work after SIGTERM: the draining process refuses requests and takes no job.
    const refused = await fetch(`${a.url}/healthz`).then((r) => r.status, (err: Error) => err.message);
    expect([503, 'fetch failed']).toContain(refused);
    const sid2 = await newSession(c);
    const later = c.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="2" cmd="echo second" />').then((r) => r.json() as Promise<Results>);
    const other = c.text(`/v1/sessions/${sid2}/commands`, '<tf-touch id="1" path="other" />').then((r) => r.json() as Promise<Results>);

    const answer = await inflight;
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as Results).results[0]).toMatchObject({ id: '1', status: 'succeeded', stdout: 'done\n' });
    const exit = await a.exited;
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.at - signalled).toBeLessThan(15_000);
    expect(a.log()).toContain('draining');

    // Queued after SIGTERM: still queued once the drained process is gone.
    await sleep(500);
    expect((await ledger(sid)).map((e) => [e.id, e.status])).toEqual([['1', 'succeeded'], ['2', 'queued']]);
    expect((await ledger(sid2)).map((e) => [e.id, e.status])).toEqual([['1', 'queued']]);
    expect((await ledger(sid))[0]!.executed_by).toMatch(new RegExp(`:${a.pid}$`));

    // Another worker process takes the sessions over.
    const b = await serveChild('worker', env, children);
    expect((await later).results[0]).toMatchObject({ status: 'succeeded', stdout: 'second\n' });
    expect((await other).results[0]).toMatchObject({ status: 'succeeded' });
    expect((await ledger(sid))[1]!.executed_by).toMatch(new RegExp(`:${b.pid}$`));
    expect((await ledger(sid2))[0]!.executed_by).toMatch(new RegExp(`:${b.pid}$`));

    const idleSignalled = Date.now();
    b.child.kill('SIGTERM');
    const bExit = await b.exited;
    expect(bExit).toMatchObject({ code: 0, signal: null });
    expect(bExit.at - idleSignalled).toBeLessThan(10_000);
  }, 180_000);

  it('past a short grace the running command ends interrupted (stopped in the sandbox) and the process still exits 0 in time', async () => {
    const { boxes, env, c, ledger } = await setup('grace');
    const w = await serveChild('worker', { ...env, THINKFLOW_SHUTDOWN_GRACE_S: '1' }, children);
    const sid = await newSession(c);
    const turn = c.text(`/v1/sessions/${sid}/commands`, [
      '<tf-bash id="1" cmd="echo started > started.txt; sleep 30; echo finished > finished.txt" />',
      '<tf-touch id="2" path="after" />',
    ].join('\n')).then((r) => r.json() as Promise<Results>);
    await until('bash started in the sandbox', async () => (fileInSandbox(boxes, sid, 'started.txt') ? true : undefined), 60_000);
    const signalled = Date.now();
    w.child.kill('SIGTERM');
    const exit = await w.exited;
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.at - signalled).toBeLessThan(1000 + 6000);
    const entries = await ledger(sid);
    // The rest of the turn is skipped at once, as after any failure.
    expect(entries.map((e) => [e.id, e.status])).toEqual([['1', 'interrupted'], ['2', 'skipped']]);
    expect(entries[0]!.error).toMatch(/died mid-way/);
    expect(w.log()).toContain('shutdown grace over');
    expect((await turn).results.map((r) => [r.id, r.status])).toEqual([['1', 'interrupted'], ['2', 'skipped']]);

    // The next worker runs new turns; the sleep was stopped in the sandbox.
    const next = await serveChild('worker', env, children);
    const check = (await (await c.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="1" cmd="cat started.txt" />')).json()) as Results;
    expect(check.results[0]).toMatchObject({ status: 'succeeded', stdout: 'started\n' });
    // Seen from outside as root: no `sleep 30` left in the container.
    const procs = 'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done | grep -c "^sleep 30" || true';
    expect(execFileSync('docker', ['exec', containerName(boxes, sid), 'sh', '-c', procs], { encoding: 'utf8' })).toBe('0\n');
    expect(fileInSandbox(boxes, sid, 'finished.txt')).toBe(false);
    next.child.kill('SIGTERM');
    expect(await next.exited).toMatchObject({ code: 0 });
  }, 180_000);

  it('a second SIGTERM during the drain exits at once (143); the running command is then recovered as after a crash', async () => {
    const { boxes, env, c, ledger } = await setup('again');
    const fast = { THINKFLOW_LOCK_MS: '2000', THINKFLOW_STALLED_INTERVAL_MS: '1000' };
    const w = await serveChild('worker', { ...env, ...fast }, children);
    const sid = await newSession(c);
    const turn = c.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="1" cmd="echo started > started.txt; sleep 30" />')
      .then((r) => r.json() as Promise<Results>);
    await until('bash started in the sandbox', async () => (fileInSandbox(boxes, sid, 'started.txt') ? true : undefined), 60_000);
    w.child.kill('SIGTERM');
    await until('draining', async () => (w.log().includes('draining') ? true : undefined), 5000);
    const again = Date.now();
    w.child.kill('SIGTERM');
    const exit = await w.exited;
    expect(exit.code).toBe(143);
    expect(exit.at - again).toBeLessThan(2000);
    expect((await ledger(sid))[0]!.status).toBe('running');

    const next = await serveChild('worker', { ...env, ...fast }, children);
    expect((await turn).results[0]).toMatchObject({ id: '1', status: 'interrupted' });
    next.child.kill('SIGTERM');
    expect(await next.exited).toMatchObject({ code: 0 });
  }, 180_000);
});
