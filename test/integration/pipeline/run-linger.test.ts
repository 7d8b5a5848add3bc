// A run job lingers on its session's emptied run list (THINKFLOW_RUN_LINGER_MS,
// run-linger.ts): turns one after the other share one BullMQ job, a command
// recorded meanwhile wakes it, a lost wake costs at most the linger, and
// neither a shutdown nor a dead holder leaves a command behind. Real Redis and
// BullMQ; the sandboxes are fakes (what runs is not the point here).
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { runCommandsTurn } from '../../../services/pipeline/api-turn.ts';
import { createKeys, createRedis } from '../../../services/pipeline/index.ts';
import { ScriptCode } from '../../../services/pipeline/script-codes.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, REDIS_URL, testConfig, testPrefix } from './helpers.ts';

const prefixes: string[] = [];
const runtimes: Runtime[] = [];

async function runtime(lingerMs: number, poolOptions = {}, prefix = testPrefix('linger'), role = 'all'): Promise<Runtime> {
  prefixes.push(prefix);
  const env = { THINKFLOW_RUN_LINGER_MS: String(lingerMs), THINKFLOW_ROLE: role };
  const rt = await createRuntime(testConfig(prefix, env), { sandboxes: new FakeSandboxes(), poolOptions });
  runtimes.push(rt);
  return rt;
}

afterEach(async () => {
  vi.restoreAllMocks();
  for (const rt of runtimes.splice(0)) await rt.close();
});
afterAll(async () => {
  for (const p of prefixes) await cleanupPrefix(p);
});

const write = (i: number) => `<tf-write id="1" path="f${i}.txt">line ${i}</tf-write>`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function session(rt: Runtime): Promise<string> {
  return (await rt.pipeline.createSession({ owner: null, approval: 'on-request' })).session_id;
}

/** Waits (bounded) until the session's run job is over: no active job, an empty run list, not lingering. */
async function runEnded(rt: Runtime, sid: string, withinMs: number): Promise<void> {
  const q = rt.pipeline.queues.queue(sid);
  for (const until = Date.now() + withinMs; Date.now() < until; await sleep(25)) {
    const idle = (await q.getActiveCount()) === 0 && (await rt.redis.llen(rt.keys.runList(sid))) === 0;
    if (idle && (await rt.redis.hget(rt.keys.sessionMeta(sid), 'run_until')) === null) return;
  }
  throw new Error(`the run of ${sid} did not end within ${withinMs} ms`);
}

describe('a run job that lingers on an emptied run list', () => {
  it('serves turns one after the other with one BullMQ job, then ends once the linger is over', async () => {
    const rt = await runtime(400);
    const sid = await session(rt);
    const starts = vi.spyOn(rt.pipeline.queues, 'startRun');
    const published = vi.spyOn(rt.redis, 'publish');
    let t0 = 0;
    for (let i = 1; i <= 10; i++) {
      if (i === 2) t0 = Date.now();
      expect((await runCommandsTurn(rt.pipeline, sid, write(i))).results.map((r) => r.status)).toEqual(['succeeded']);
    }
    expect(starts).toHaveBeenCalledTimes(1);
    // The run lingers in this process: woken here, without a wake message (only the start's went out).
    expect(published.mock.calls.filter(([channel]) => channel === rt.keys.wakeChannel())).toHaveLength(1);
    // Woken, not found by the linger's end: nine turns in much less than nine lingers.
    expect(Date.now() - t0).toBeLessThan(9 * 400 / 2);
    expect(Number(await rt.redis.hget(rt.keys.sessionMeta(sid), 'run_until'))).toBeGreaterThan(Date.now()); // lingering now
    await runEnded(rt, sid, 2000);
    await runCommandsTurn(rt.pipeline, sid, write(11));
    expect(starts).toHaveBeenCalledTimes(2); // the linger was over: a job of its own
  });

  it('takes the next turn\'s command from an enqueue in its own process: no runNext round trip after a linger', async () => {
    const rt = await runtime(2000);
    const sid = await session(rt);
    const next = vi.spyOn(rt.pipeline.queues, 'next');
    for (let i = 1; i <= 10; i++) expect((await runCommandsTurn(rt.pipeline, sid, write(i))).results.map((r) => r.status)).toEqual(['succeeded']);
    // One step to start, one after each command (each answered `linger`); none after a linger: the enqueue handed
    // the record over (before: 19 and more, a step after every wake).
    expect(next).toHaveBeenCalledTimes(11);
    const lines = (await rt.pipeline.entries(sid)).map((r) => [r.index, r.status, r.started_at !== null]);
    expect(lines).toEqual(Array.from({ length: 10 }, (_, i) => [i + 1, 'succeeded', true]));
  });

  it('hands nothing over while the session\'s queue is paused: the command waits for the resume', async () => {
    const rt = await runtime(5000);
    const sid = await session(rt);
    await runCommandsTurn(rt.pipeline, sid, write(1));
    expect(Number(await rt.redis.hget(rt.keys.sessionMeta(sid), 'run_until'))).toBeGreaterThan(Date.now());
    await rt.pipeline.queues.pause(sid);
    const h = await rt.pipeline.enqueue(sid, await rt.pipeline.nextTurn(sid), { id: 'p', tool: 'write', path: 'p.txt', content: 'x', need_result: false }, 'api');
    await sleep(400);
    expect((await rt.pipeline.records.get(sid, h.index))?.status).toBe('queued');
    await rt.pipeline.queues.resume(sid);
    expect((await rt.pipeline.awaitResult(h)).status).toBe('succeeded');
  });

  it('hands nothing over to a run that no longer holds the list: that run ends, and the command is not its', async () => {
    const rt = await runtime(5000);
    const sid = await session(rt);
    await runCommandsTurn(rt.pipeline, sid, write(1));
    // As after a re-delivered job's run took the list over (runNext-5.lua `run_owner`).
    await rt.redis.hset(rt.keys.sessionMeta(sid), 'run_owner', 'another-run');
    const published = vi.spyOn(rt.redis, 'publish');
    const h = await rt.pipeline.enqueue(sid, await rt.pipeline.nextTurn(sid), { id: 'o', tool: 'write', path: 'o.txt', content: 'x', need_result: false }, 'api');
    // The holder is elsewhere: it is woken by a message (review helper-60: nothing was published, so it waited out its linger).
    expect(published).toHaveBeenCalledWith(rt.keys.wakeChannel(), sid);
    await sleep(400);
    expect((await rt.pipeline.records.get(sid, h.index))?.status).toBe('queued');
  });

  it('at 0, starts a job for every turn that finds the session idle (the behaviour before)', async () => {
    const rt = await runtime(0);
    const sid = await session(rt);
    const starts = vi.spyOn(rt.pipeline.queues, 'startRun');
    for (let i = 1; i <= 5; i++) await runCommandsTurn(rt.pipeline, sid, write(i));
    expect(starts).toHaveBeenCalledTimes(5);
    expect(await rt.redis.llen(rt.keys.runList(sid))).toBe(0);
  });

  it('wakes a run lingering in another process by a wake message: 10 turns through an API process', async () => {
    const worker = await runtime(600);
    const api = await runtime(600, {}, worker.keys.prefix, 'api');
    const sid = await session(api);
    const starts = vi.spyOn(api.pipeline.queues, 'startRun');
    const t0 = Date.now();
    for (let i = 1; i <= 10; i++) await runCommandsTurn(api.pipeline, sid, write(i));
    expect(starts).toHaveBeenCalledTimes(1);
    expect(Date.now() - t0).toBeLessThan(9 * 600 / 2); // woken by the messages, not found at each linger's end
  });

  it('runs a command whose wake message was lost when the linger ends, not later', async () => {
    const worker = await runtime(600);
    const rt = await runtime(600, {}, worker.keys.prefix, 'api'); // the run lingers in the worker: a message wakes it
    const sid = await session(rt);
    await runCommandsTurn(rt.pipeline, sid, write(1));
    const wakes = vi.spyOn(rt.redis, 'publish').mockResolvedValue(0); // every wake from now on is lost
    const t0 = Date.now();
    const out = await runCommandsTurn(rt.pipeline, sid, write(2));
    const took = Date.now() - t0;
    expect(out.results.map((r) => r.status)).toEqual(['succeeded']);
    expect(wakes).toHaveBeenCalledWith(rt.keys.wakeChannel(), sid);
    expect(took).toBeGreaterThan(300); // it waited for the linger's end…
    expect(took).toBeLessThan(2000); // …and not for a reconcile or a lock
  });

  it('ends at once on shutdown, lingering no more', async () => {
    const rt = await runtime(20_000);
    const sid = await session(rt);
    await runCommandsTurn(rt.pipeline, sid, write(1));
    expect(Number(await rt.redis.hget(rt.keys.sessionMeta(sid), 'run_until'))).toBeGreaterThan(Date.now());
    const t0 = Date.now();
    await rt.close();
    runtimes.splice(runtimes.indexOf(rt), 1);
    expect(Date.now() - t0).toBeLessThan(5000);
    const check = createRedis(REDIS_URL, 'tft-linger-check');
    try {
      expect(await check.llen(rt.keys.runList(sid))).toBe(0);
      expect(await check.hget(rt.keys.sessionMeta(sid), 'run_until')).toBeNull();
    } finally {
      check.disconnect();
    }
  });

  it('lingers in 12 sessions at once without a MaxListenersExceededWarning (each run listens to the shutdown signal)', async () => {
    const rt = await runtime(20_000);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const sids = await Promise.all(Array.from({ length: 12 }, () => session(rt)));
      await Promise.all(sids.map((sid) => runCommandsTurn(rt.pipeline, sid, write(1))));
      for (const sid of sids) expect(Number(await rt.redis.hget(rt.keys.sessionMeta(sid), 'run_until'))).toBeGreaterThan(Date.now());
      await sleep(50); // a warning is emitted on the next tick
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('lingers no more once its run failed, and hands its list on: no command waits for a repair', async () => {
    const worker = await runtime(5000);
    // Turns from another process: a wake message, so the run asks runNext (an enqueue here would hand it the step).
    const rt = await runtime(5000, {}, worker.keys.prefix, 'api');
    const sid = await session(rt);
    await runCommandsTurn(rt.pipeline, sid, write(1));
    expect(Number(await rt.redis.hget(rt.keys.sessionMeta(sid), 'run_until'))).toBeGreaterThan(Date.now());
    // The lingering run's next step fails (as on a Redis error): the run job fails.
    const next = vi.spyOn(worker.pipeline.queues, 'next').mockRejectedValueOnce(new Error('simulated step failure'));
    const second = runCommandsTurn(rt.pipeline, sid, write(2)); // wakes the run, whose step then throws
    await expect.poll(() => next.mock.calls.length, { timeout: 2000 }).toBeGreaterThan(0);
    const t0 = Date.now();
    expect((await second).results[0]!.status).toBe('succeeded'); // the run started after the failure takes it
    const third = await runCommandsTurn(rt.pipeline, sid, write(3));
    expect(third.results[0]!.status).toBe('succeeded');
    expect(Date.now() - t0).toBeLessThan(1500); // not the reconcile's repair (seconds), nor the lapse of the linger (6 s)
  });

  it('starts a run again once a run that died lingering is past its linger: the next command does not wait for a repair', async () => {
    const rt = await runtime(200);
    const sid = await session(rt);
    await runCommandsTurn(rt.pipeline, sid, write(1));
    await runEnded(rt, sid, 3000);
    // As a run left it that died lingering, its linger (and grace) over: nobody would answer a wake.
    await rt.redis.hset(rt.keys.sessionMeta(sid), 'run_owner', 'dead-run', 'run_until', Date.now() - 1);
    const starts = vi.spyOn(rt.pipeline.queues, 'startRun');
    const t0 = Date.now();
    expect((await runCommandsTurn(rt.pipeline, sid, write(2))).results.map((r) => r.status)).toEqual(['succeeded']);
    expect(starts).toHaveBeenCalledTimes(1);
    expect(Date.now() - t0).toBeLessThan(1000);
  });
});

describe('runNext around a linger', () => {
  const keys = createKeys(testPrefix('lscr'));
  prefixes.push(keys.prefix);
  const redis = createRedis(REDIS_URL, 'tft-linger-scripts');
  afterAll(() => redis.disconnect());
  /** one step of run `id`; `start`: it takes the list over */
  const step = (sid: string, id: string, done: string, lingerMs: number, start = false) => redis.runNext(
    keys.runList(sid), `${keys.bullPrefix}:${keys.queueName(sid)}:meta`, keys.sessionMeta(sid), keys.grants(sid), keys.recordPrefix(sid),
    done, id, start ? '1' : '0', lingerMs,
  ) as Promise<[number, string?]>;
  const until = async (sid: string) => Number((await redis.hget(keys.sessionMeta(sid), 'run_until')) ?? 0);
  /** a session's meta as createSession writes it */
  const meta = (sid: string) => redis.hset(keys.sessionMeta(sid), 'json', '{}');

  it('lingers on an empty list till Redis time + the linger, hands on what came meanwhile, and ends when asked to', async () => {
    const sid = 'ses_a';
    await meta(sid);
    const t0 = Date.now();
    expect(await step(sid, 'A', '', 5000, true)).toEqual([ScriptCode.LINGER]);
    expect(await until(sid)).toBeGreaterThanOrEqual(t0 + 4900);
    expect(await redis.exists(keys.runList(sid))).toBe(0); // nothing of the linger in the list
    await redis.rpush(keys.runList(sid), '7'); // an enqueue meanwhile
    expect((await step(sid, 'A', '', 5000)).slice(0, 2)).toEqual([ScriptCode.OK, '7']);
    expect(await step(sid, 'A', '7', 5000)).toEqual([ScriptCode.LINGER]);
    expect(await step(sid, 'A', '', 0)).toEqual([ScriptCode.OK]);
    expect(await until(sid)).toBe(0);
  });

  it('gives the same answer to a step sent twice (a reply lost to a reconnect): nothing dropped, nothing named twice', async () => {
    const sid = 'ses_b';
    await meta(sid);
    await redis.rpush(keys.runList(sid), '3', '4');
    expect((await step(sid, 'A', '', 1000, true)).slice(0, 2)).toEqual([ScriptCode.OK, '3']);
    expect((await step(sid, 'A', '3', 1000)).slice(0, 2)).toEqual([ScriptCode.OK, '4']);
    expect((await step(sid, 'A', '3', 1000)).slice(0, 2)).toEqual([ScriptCode.OK, '4']); // again: 4 is not dropped
    expect(await step(sid, 'A', '4', 1000)).toEqual([ScriptCode.LINGER]);
    expect(await step(sid, 'A', '4', 1000)).toEqual([ScriptCode.LINGER]); // again: still lingering, nothing named
    await redis.rpush(keys.runList(sid), '5');
    expect((await step(sid, 'A', '', 1000)).slice(0, 2)).toEqual([ScriptCode.OK, '5']);
    expect((await step(sid, 'A', '', 1000)).slice(0, 2)).toEqual([ScriptCode.OK, '5']); // the step after a linger, again
    expect(await redis.lrange(keys.runList(sid), 0, -1)).toEqual(['5']);
  });

  it('ends a run whose list a re-delivered run took over, touching nothing', async () => {
    const sid = 'ses_c';
    await meta(sid);
    await redis.rpush(keys.runList(sid), '8', '9');
    expect((await step(sid, 'A', '', 1000, true)).slice(0, 2)).toEqual([ScriptCode.OK, '8']);
    expect((await step(sid, 'B', '', 1000, true)).slice(0, 2)).toEqual([ScriptCode.OK, '8']); // B takes over at the head
    expect(await step(sid, 'A', '8', 1000)).toEqual([ScriptCode.OK]); // A, late: it ends
    expect(await redis.lrange(keys.runList(sid), 0, -1)).toEqual(['8', '9']);
    expect((await step(sid, 'B', '8', 1000)).slice(0, 2)).toEqual([ScriptCode.OK, '9']);
  });

  it('does not linger for a deleted session, nor for one that is gone', async () => {
    await meta('ses_d');
    await redis.hset(keys.sessionMeta('ses_d'), 'deleted_at', new Date().toISOString());
    expect(await step('ses_d', 'A', '', 1000, true)).toEqual([ScriptCode.OK]);
    expect(await until('ses_d')).toBe(0);
    expect(await step('ses_e', 'A', '', 1000, true)).toEqual([ScriptCode.OK]);
    expect(await redis.exists(keys.sessionMeta('ses_e'))).toBe(0); // nothing written for a session that is gone
  });
});
