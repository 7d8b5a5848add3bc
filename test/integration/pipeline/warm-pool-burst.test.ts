import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createKeys, createRedis, takeWarm, WarmPool, type WarmSandboxes } from '../../../services/pipeline/index.ts';
import { cleanupPrefix, REDIS_URL, testPrefix } from './helpers.ts';

// The warm pool's refill against a burst of new sessions (issue 23): a
// container made while a burst is served takes the CPU its first commands
// need, so the pool waits until ids stop being taken, within a bound, then
// makes every missing one at once. Real Redis; the sandboxes are counted, not made.
const prefix = testPrefix('warmburst');
const redis = createRedis(REDIS_URL, prefix);
const keys = createKeys(prefix);
const pools: WarmPool[] = [];

function countingSandboxes() {
  const made: { sid: string; at: number }[] = [];
  const sandboxes: WarmSandboxes = {
    prewarm: async (sid) => { made.push({ sid, at: Date.now() }); },
    touch: async () => undefined,
    remove: async () => undefined,
  };
  return { made, sandboxes };
}

function startPool(sandboxes: WarmSandboxes, size: number, settle: { settleMs: number; maxSettleMs: number; touchMs?: number }, lastWorkAt?: () => number): WarmPool {
  const pool = new WarmPool({ redis, keys, processId: `burst-${pools.length}`, sandboxes, ...(lastWorkAt ? { lastWorkAt } : {}) }, { size, checkMs: 100_000, ...settle });
  pools.push(pool);
  pool.start();
  return pool;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A new session taking a warm id, as POST /v1/sessions does: the id is popped and its session's hash made. */
async function newSession(): Promise<string> {
  const taken = await takeWarm(redis, keys);
  if (!taken) throw new Error('no warm id listed');
  await redis.hset(keys.sessionMeta(taken.sid), 'session_id', taken.sid);
  return taken.sid;
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
  await cleanupPrefix(prefix);
});
afterAll(() => redis.disconnect());

describe('warm pool refill during a burst', () => {
  it('makes nothing while ids are being taken, then every missing one at once when the takes stop', async () => {
    const { made, sandboxes } = countingSandboxes();
    const pool = startPool(sandboxes, 4, { settleMs: 1000, maxSettleMs: 10_000 });
    await pool.filled(5000);
    expect(made).toHaveLength(4);
    // A burst: the four taken 50 ms apart, each followed by the wake a new session's first command publishes.
    let lastWake = 0;
    for (let i = 0; i < 4; i++) {
      await newSession();
      pool.poke();
      lastWake = Date.now();
      await sleep(50);
    }
    await sleep(300);
    expect(made).toHaveLength(4); // nothing made during the burst, nor right after it
    await pool.filled(5000);
    const refill = made.slice(4);
    expect(refill).toHaveLength(4);
    // All once the takes settled (1 s after the last one was seen, which was after its wake), in one go.
    for (const m of refill) expect(m.at).toBeGreaterThanOrEqual(lastWake + 950);
    expect(Math.max(...refill.map((m) => m.at)) - Math.min(...refill.map((m) => m.at))).toBeLessThan(100);
  });

  it('a steady trickle of takes holds the refill back at most maxSettleMs', async () => {
    const { made, sandboxes } = countingSandboxes();
    const pool = startPool(sandboxes, 20, { settleMs: 300, maxSettleMs: 600 });
    await pool.filled(5000);
    const firstTake = Date.now();
    // One take every 100 ms for 1.5 s: the takes never stop for 300 ms.
    while (Date.now() - firstTake < 1500) {
      await newSession();
      pool.poke();
      await sleep(100);
    }
    const refill = made.slice(20);
    expect(refill.length).toBeGreaterThan(0); // made while the trickle went on
    expect(refill[0]!.at - firstTake).toBeLessThan(600 + 400);
  });

  it('a single new session: the one taken is replaced once settleMs passed', async () => {
    const { made, sandboxes } = countingSandboxes();
    const pool = startPool(sandboxes, 2, { settleMs: 200, maxSettleMs: 2000 });
    await pool.filled(5000);
    await newSession();
    const at = Date.now();
    pool.poke();
    await expect.poll(() => made.length, { timeout: 3000, interval: 20 }).toBe(3);
    expect(made[2]!.at - at).toBeGreaterThanOrEqual(150);
    expect(made[2]!.at - at).toBeLessThan(1500);
  });

  it('the worker\'s commands hold the refill back until they pause for settleMs (a job handed a warm sandbox ends in peace)', async () => {
    const { made, sandboxes } = countingSandboxes();
    let running = false;
    let commandAt = 0;
    const pool = startPool(sandboxes, 2, { settleMs: 200, maxSettleMs: 5000 }, () => (running ? Date.now() : commandAt));
    await pool.filled(5000);
    await newSession();
    running = true; // the new session's commands run for 800 ms
    pool.poke();
    await sleep(800);
    running = false;
    commandAt = Date.now();
    expect(made).toHaveLength(2); // nothing made while they ran, though the take is 800 ms old
    await expect.poll(() => made.length, { timeout: 3000, interval: 20 }).toBe(3);
    expect(made[2]!.at - commandAt).toBeGreaterThanOrEqual(150);
    expect(made[2]!.at - commandAt).toBeLessThan(1000);
  });

  it('commands that never pause hold the refill back at most maxSettleMs', async () => {
    const { made, sandboxes } = countingSandboxes();
    const pool = startPool(sandboxes, 2, { settleMs: 100, maxSettleMs: 700 }, () => Date.now());
    await pool.filled(5000); // held back too, at most 700 ms
    await newSession();
    const at = Date.now();
    pool.poke();
    await expect.poll(() => made.length, { timeout: 3000, interval: 20 }).toBe(3);
    expect(made[2]!.at - at).toBeGreaterThanOrEqual(600);
    expect(made[2]!.at - at).toBeLessThan(1500);
  });

  it('a wake message checks only when it names one of the pool\'s ids: other sessions\' commands cost the pool nothing', async () => {
    const { made, sandboxes } = countingSandboxes();
    const pool = startPool(sandboxes, 2, { settleMs: 50, maxSettleMs: 500 });
    await pool.filled(5000);
    await sleep(200); // a check the fill queued has run: none is left to see the take below
    const taken = await newSession();
    for (let i = 0; i < 20; i++) pool.wake(`ses_someone_else_${i}`);
    await sleep(300);
    expect(made).toHaveLength(2); // the take is not seen: no check ran
    pool.wake(taken);
    await expect.poll(() => made.length, { timeout: 3000, interval: 20 }).toBe(3);
  });

  it('waiting sandboxes are marked in use every touchMs, not on every check; one that fails to be touched does not stop the others', async () => {
    const touched: string[] = [];
    let failing: string | null = null;
    const sandboxes: WarmSandboxes = {
      prewarm: async () => undefined,
      touch: async (sid) => {
        touched.push(sid);
        failing ??= sid;
        if (sid === failing) throw new Error('touch failed');
      },
      remove: async () => undefined,
    };
    const slow = startPool(sandboxes, 2, { settleMs: 50, maxSettleMs: 500 });
    await slow.filled(5000);
    await sleep(100);
    const afterFill = touched.length;
    for (let i = 0; i < 20; i++) { slow.poke(); await sleep(5); }
    expect(touched.length).toBe(afterFill); // twenty checks within touchMs (5 s): no touch
    await slow.close();

    touched.length = 0;
    failing = null;
    const quick = startPool(sandboxes, 2, { settleMs: 50, maxSettleMs: 500, touchMs: 100 });
    await quick.filled(5000);
    for (let round = 0; round < 3; round++) {
      await sleep(150);
      quick.poke();
    }
    // Both touched in every due check, though one of them fails each time.
    await expect.poll(() => new Set(touched).size, { timeout: 2000, interval: 20 }).toBe(2);
    expect(touched.filter((sid) => sid !== failing).length).toBeGreaterThanOrEqual(2);
  });
});
