import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/config/index.ts';
import { PipelineError } from '../../../services/pipeline/errors.ts';
import { EventWriter } from '../../../services/pipeline/event-writer.ts';
import { createKeys } from '../../../services/pipeline/keys.ts';
import { createRedis, deleteByPattern } from '../../../services/pipeline/redis.ts';
import { SESSION_OVERHEAD_BYTES, StorageBudget } from '../../../services/pipeline/storage-budget.ts';

// The per-key Redis budget's accounting (THINKFLOW_STORE_BYTES_PER_KEY) on the
// real scripts, under a prefix of its own on the shared Redis.

const prefix = `tfu-budget-${process.pid}`;
const keys = createKeys(prefix);
const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'tf-unit-budget');
const writer = new EventWriter(redis, keys, 0, 65536);
afterAll(async () => {
  await deleteByPattern(redis, `${prefix}:*`);
  redis.disconnect();
});

async function sessionOf(owner: string, sid: string, budget: StorageBudget): Promise<void> {
  await redis.sadd(keys.ownerSessions(owner), sid);
  await budget.chargeSession(sid);
}

describe('storage budget per key (THINKFLOW_STORE_BYTES_PER_KEY)', () => {
  it('defaults to 256 MiB and takes a setting', () => {
    expect(loadConfig({}).storeBytesPerKey).toBe(256 * 1024 * 1024);
    expect(loadConfig({ THINKFLOW_STORE_BYTES_PER_KEY: '2097152' }).storeBytesPerKey).toBe(2 * 1024 * 1024);
    expect(() => loadConfig({ THINKFLOW_STORE_BYTES_PER_KEY: '0' })).toThrow(/THINKFLOW_STORE_BYTES_PER_KEY/);
  });

  it('an event is charged its stored size to its session, and the key sums its open sessions (reservations excluded)', async () => {
    const budget = new StorageBudget(redis, keys, 1_000_000);
    await sessionOf('o1', 's1', budget);
    await sessionOf('o1', 's2', budget);
    await redis.sadd(keys.ownerSessions('o1'), 'pending:abc');
    expect(await budget.usage('o1')).toEqual({ used: 2 * SESSION_OVERHEAD_BYTES, limit: 1_000_000 });
    const text = 'x'.repeat(300_000);
    await writer.append('s1', 'job_1', { type: 'text_delta', text } as never);
    const s1 = Number(await redis.get(keys.sessionBytes('s1')));
    expect(s1).toBeGreaterThan(SESSION_OVERHEAD_BYTES + 300_000);
    expect(s1).toBeLessThan(SESSION_OVERHEAD_BYTES + 301_000);
    expect((await budget.usage('o1')).used).toBe(s1 + SESSION_OVERHEAD_BYTES);
    // another key is not charged
    expect((await budget.usage('o2')).used).toBe(0);
  });

  it('refuses at the limit with storage_quota_exceeded naming limit and usage; no key (dev mode) has no budget', async () => {
    const budget = new StorageBudget(redis, keys, 10_000);
    await sessionOf('o3', 's3', budget);
    await budget.assert('o3');
    await redis.incrby(keys.sessionBytes('s3'), 6000);
    const err = await budget.assert('o3').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PipelineError);
    expect(err).toMatchObject({ code: 'storage_quota_exceeded', details: { limit: 10_000, used: SESSION_OVERHEAD_BYTES + 6000, setting: 'THINKFLOW_STORE_BYTES_PER_KEY' } });
    expect((err as Error).message).toMatch(/10000.*THINKFLOW_STORE_BYTES_PER_KEY/);
    await budget.assert(null);
    await budget.assert('o4');
  });

  it('a deleted session keeps counting until its expiry, is credited once after it, and a second retire changes nothing', async () => {
    const budget = new StorageBudget(redis, keys, 100_000);
    await sessionOf('o5', 's5', budget);
    await sessionOf('o5', 's6', budget);
    await redis.incrby(keys.sessionBytes('s5'), 50_000);
    const before = (await budget.usage('o5')).used;
    const expires = Date.now() + 600;
    await budget.retire('o5', 's5', expires);
    await budget.retire('o5', 's5', expires);
    await redis.srem(keys.ownerSessions('o5'), 's5'); // what releaseSession does right after
    expect((await budget.usage('o5')).used).toBe(before);
    await budget.retire('o5', 's6', Date.now() + 60_000);
    await redis.srem(keys.ownerSessions('o5'), 's6');
    await new Promise((r) => setTimeout(r, 700));
    expect((await budget.usage('o5')).used).toBe(SESSION_OVERHEAD_BYTES); // s5 credited, s6 still counting
    expect((await budget.usage('o5')).used).toBe(SESSION_OVERHEAD_BYTES); // credited once
    expect(await redis.zrange(keys.ownerRetired('o5'), 0, -1)).toEqual(['s6']);
  });

  it('the session byte counter is one of the session keys (it expires with them)', () => {
    expect(keys.sessionKeys('s7', { records: 0, turns: 0, tokens: [] })).toContain(keys.sessionBytes('s7'));
  });
});
