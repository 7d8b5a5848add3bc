import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisProbe } from '../../../services/pipeline/redis-probe.ts';
import { freePort, ping } from '../own-redis.ts';

// The probe behind the API's fast 503 `redis_unavailable` and /readyz: an
// unanswered PING means Redis is unreachable, but not when this process's
// own event loop was blocked past the timeout with the answer waiting unread
// (a busy service answered 503 while Redis was fine). A redis-server of its
// own, so SIGSTOP freezes nobody else's.
let redis: ChildProcess;
let port: number;
const probes: RedisProbe[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Blocks this process's event loop, as a burst of synchronous work under load does. */
const blockLoop = (ms: number) => { const end = Date.now() + ms; while (Date.now() < end) { /* busy */ } };

function newProbe(timeoutMs: number): { probe: RedisProbe; downs: number[] } {
  // No periodic checks: each test calls check() itself.
  const probe = new RedisProbe(`redis://127.0.0.1:${port}`, 'probe-test', [], { intervalMs: 3_600_000, timeoutMs });
  probes.push(probe);
  const downs: number[] = [];
  probe.onDown(() => downs.push(Date.now()));
  return { probe, downs };
}

/** A probe that saw Redis answer, then `fn` while the redis-server is stopped (SIGSTOP: its sockets stay open). */
async function whileStopped(timeoutMs: number, fn: (probe: RedisProbe, downs: number[]) => Promise<void>): Promise<RedisProbe> {
  const { probe, downs } = newProbe(timeoutMs);
  expect((await probe.settle(5000)).up).toBe(true);
  redis.kill('SIGSTOP');
  try {
    await fn(probe, downs);
  } finally {
    redis.kill('SIGCONT');
  }
  return probe;
}

beforeAll(async () => {
  port = await freePort();
  redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; !(await ping(port)); i++) {
    if (i > 100) throw new Error('redis-server did not start');
    await sleep(50);
  }
});
afterAll(() => {
  for (const p of probes) p.close();
  redis.kill('SIGCONT');
  redis.kill('SIGKILL');
});

describe('RedisProbe', () => {
  it('a PING answered while this process was blocked past the timeout is no outage', async () => {
    const { probe, downs } = newProbe(500);
    expect((await probe.settle(5000)).up).toBe(true);
    for (let i = 0; i < 2; i++) {
      const checked = probe.check();
      blockLoop(1200); // the PONG arrives meanwhile and waits unread; the PING's timer is long overdue
      expect(await checked).toEqual({ up: true, reason: null });
    }
    expect(downs).toEqual([]);
  });

  it('a Redis that stops answering is down within the timeout, naming the PING, and up again once it answers', async () => {
    const probe = await whileStopped(300, async (p, downs) => {
      const t0 = Date.now();
      // One on-time check suffices; polled, so a check this loaded machine happened to stall judges again.
      await expect.poll(async () => (await p.check()).up, { timeout: 3000, interval: 10 }).toBe(false);
      expect(p.state.reason).toMatch(/no answer to PING/);
      expect(Date.now() - t0).toBeLessThan(3000);
      expect(downs).toHaveLength(1);
    });
    await expect.poll(async () => (await probe.check()).up, { timeout: 5000, interval: 100 }).toBe(true);
  });

  it('blocked while Redis is really stopped: no verdict from that PING, a later check gives it', async () => {
    await whileStopped(300, async (p, downs) => {
      const checked = p.check();
      blockLoop(700);
      expect((await checked).up).toBe(true); // inconclusive: the state stands
      await expect.poll(async () => (await p.check()).up, { timeout: 3000, interval: 10 }).toBe(false);
      expect(downs).toHaveLength(1);
    });
  });

  it('stalls that never end do not hide an outage: no PING answered for three timeouts is one', async () => {
    await whileStopped(200, async (p, downs) => {
      const t0 = Date.now();
      // Every check's timer lands in the next stall, so no check is on time.
      for (let i = 0; i < 20 && downs.length === 0; i++) {
        const checked = p.check();
        blockLoop(400);
        await checked;
      }
      expect(downs).toHaveLength(1);
      expect(p.state.reason).toMatch(/no answer to PING for \d+ ms/);
      expect(Date.now() - t0).toBeLessThan(3 * 200 + 2 * 450 + 500);
    });
  });
});
