// A run job lingers on its session's emptied run list (THINKFLOW_RUN_LINGER_MS,
// run-linger.ts): turns one after the other share one BullMQ job, a command
// recorded meanwhile wakes it, a lost wake costs at most the linger, and
// neither a shutdown nor a dead holder leaves a command behind. Real Redis and
// BullMQ; the sandboxes are fakes (what runs is not the point here).
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { runCommandsTurn } from '../../../services/pipeline/api-turn.ts';
import { createKeys, createRedis } from '../../../services/pipeline/index.ts';
import { RUN_LINGER, ScriptCode } from '../../../services/pipeline/script-codes.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, REDIS_URL, testConfig, testPrefix } from './helpers.ts';

const prefixes: string[] = [];
const runtimes: Runtime[] = [];

async function runtime(lingerMs: number, poolOptions = {}): Promise<Runtime> {
  const prefix = testPrefix('linger');
  prefixes.push(prefix);
  const rt = await createRuntime(testConfig(prefix, { THINKFLOW_RUN_LINGER_MS: String(lingerMs) }), { sandboxes: new FakeSandboxes(), poolOptions });
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

/** Waits (bounded) until the session's run job is over: no active job, an empty run list. */
async function runEnded(rt: Runtime, sid: string, withinMs: number): Promise<void> {
  const q = rt.pipeline.queues.queue(sid);
  for (const until = Date.now() + withinMs; Date.now() < until; await sleep(25)) {
    if ((await q.getActiveCount()) === 0 && (await rt.redis.llen(rt.keys.runList(sid))) === 0) return;
  }
  throw new Error(`the run of ${sid} did not end within ${withinMs} ms`);
}

describe('a run job that lingers on an emptied run list', () => {
  it('serves turns one after the other with one BullMQ job, then ends once the linger is over', async () => {
    const rt = await runtime(400);
    const sid = await session(rt);
    const starts = vi.spyOn(rt.pipeline.queues, 'startRun');
    let t0 = 0;
    for (let i = 1; i <= 10; i++) {
      if (i === 2) t0 = Date.now();
      expect((await runCommandsTurn(rt.pipeline, sid, write(i))).results.map((r) => r.status)).toEqual(['succeeded']);
    }
    expect(starts).toHaveBeenCalledTimes(1);
    // Woken, not found by the linger's end: nine turns in much less than nine lingers.
    expect(Date.now() - t0).toBeLessThan(9 * 400 / 3);
    expect(await rt.redis.lrange(rt.keys.runList(sid), 0, -1)).toEqual([RUN_LINGER]); // lingering now
    await runEnded(rt, sid, 2000);
    await runCommandsTurn(rt.pipeline, sid, write(11));
    expect(starts).toHaveBeenCalledTimes(2); // the linger was over: a job of its own
  });

  it('at 0, starts a job for every turn that finds the session idle (the behaviour before)', async () => {
    const rt = await runtime(0);
    const sid = await session(rt);
    const starts = vi.spyOn(rt.pipeline.queues, 'startRun');
    for (let i = 1; i <= 5; i++) await runCommandsTurn(rt.pipeline, sid, write(i));
    expect(starts).toHaveBeenCalledTimes(5);
    expect(await rt.redis.llen(rt.keys.runList(sid))).toBe(0);
  });

  it('runs a command whose wake message was lost when the linger ends, not later', async () => {
    const rt = await runtime(600);
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

  it('ends at once on shutdown, leaving nothing on the run list', async () => {
    const rt = await runtime(20_000);
    const sid = await session(rt);
    await runCommandsTurn(rt.pipeline, sid, write(1));
    expect(await rt.redis.lrange(rt.keys.runList(sid), 0, -1)).toEqual([RUN_LINGER]);
    const t0 = Date.now();
    await rt.close();
    runtimes.splice(runtimes.indexOf(rt), 1);
    expect(Date.now() - t0).toBeLessThan(5000);
    const check = createRedis(REDIS_URL, 'tft-linger-check');
    try {
      expect(await check.llen(rt.keys.runList(sid))).toBe(0);
    } finally {
      check.disconnect();
    }
  });

  it('does not strand a command behind a linger entry whose run job is gone (a failed run): the reconcile repairs it', async () => {
    const rt = await runtime(200, { reconcileMs: 200, lostAfterMs: 300 });
    const sid = await session(rt);
    await runCommandsTurn(rt.pipeline, sid, write(1));
    await runEnded(rt, sid, 2000);
    await rt.redis.rpush(rt.keys.runList(sid), RUN_LINGER); // as a run that failed mid-linger leaves it
    const out = await runCommandsTurn(rt.pipeline, sid, write(2));
    expect(out.results.map((r) => r.status)).toEqual(['succeeded']);
    await runEnded(rt, sid, 3000);
  });
});

describe('runNext and createRecord around the linger entry', () => {
  const keys = createKeys(testPrefix('lscr'));
  prefixes.push(keys.prefix);
  const redis = createRedis(REDIS_URL, 'tft-linger-scripts');
  afterAll(() => redis.disconnect());
  const step = (sid: string, done: string, linger: boolean) => redis.runNext(
    keys.runList(sid), `${keys.bullPrefix}:${keys.queueName(sid)}:meta`, keys.sessionMeta(sid), keys.grants(sid), keys.recordPrefix(sid), done, linger ? '1' : '0',
  ) as Promise<[number, string?]>;

  it('lingers on an empty list, hands on what came meanwhile, and ends when asked to', async () => {
    const sid = 'ses_a';
    expect(await step(sid, '', true)).toEqual([ScriptCode.LINGER]);
    expect(await redis.lrange(keys.runList(sid), 0, -1)).toEqual([RUN_LINGER]);
    await redis.rpush(keys.runList(sid), '7'); // an enqueue meanwhile
    expect((await step(sid, RUN_LINGER, true)).slice(0, 2)).toEqual([ScriptCode.OK, '7']);
    expect(await step(sid, '7', true)).toEqual([ScriptCode.LINGER]);
    expect(await step(sid, RUN_LINGER, false)).toEqual([ScriptCode.OK]);
    expect(await redis.exists(keys.runList(sid))).toBe(0);
  });

  it("drops a dead holder's linger entry when a run starts, and a run whose entry was taken ends without touching the list", async () => {
    const sid = 'ses_b';
    await redis.rpush(keys.runList(sid), RUN_LINGER, '3');
    expect((await step(sid, '', true)).slice(0, 2)).toEqual([ScriptCode.OK, '3']); // the re-delivered run
    expect(await step(sid, RUN_LINGER, true)).toEqual([ScriptCode.OK]); // the old holder, late
    expect(await redis.lrange(keys.runList(sid), 0, -1)).toEqual(['3']);
  });

  it("gives the linger entry of a deleted session the session's expiry", async () => {
    const sid = 'ses_c';
    await redis.hset(keys.sessionMeta(sid), 'json', '{}');
    await redis.pexpire(keys.sessionMeta(sid), 60_000);
    expect(await step(sid, '', true)).toEqual([ScriptCode.LINGER]);
    const ttl = await redis.pttl(keys.runList(sid));
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });
});
