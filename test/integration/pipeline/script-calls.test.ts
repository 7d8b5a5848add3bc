// The pipeline's Lua scripts are methods of its connection (redis.ts): EVALSHA,
// and EVAL when the server does not know the script (a fresh or restarted
// Redis, SCRIPT FLUSH). They are not ioredis custom commands, which ioredis
// copies onto every auto-pipelined batch (bench:redis-commands). A Redis of
// the test's own: SCRIPT FLUSH must not touch the shared one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { createKeys, createQueueRedis, createRedis, type PipelineRedis } from '../../../services/pipeline/index.ts';
import { LUA } from '../../../services/pipeline/redis.ts';
import { ScriptCode } from '../../../services/pipeline/script-codes.ts';
import { startOwnRedis, type OwnRedis } from '../own-redis.ts';

const keys = createKeys(`tft-scripts-${process.pid}`);
const pauseMark = LUA.find((s) => s.name === 'pauseMark')!;
const pauseMarkSha = createHash('sha1').update(pauseMark.lua).digest('hex');

let own: OwnRedis;
let redis: PipelineRedis;

beforeAll(async () => {
  own = await startOwnRedis();
  redis = createRedis(own.url, 'tft-scripts');
});
afterAll(async () => {
  redis.disconnect();
  await own.stop();
});

describe("the pipeline's scripts", () => {
  it('run on a Redis that has never seen them, and are cached there for EVALSHA', async () => {
    const meta = keys.sessionMeta('s1');
    await own.client.hset(meta, 'owner', 'k');
    expect(await own.client.script('EXISTS', pauseMarkSha)).toEqual([0]);
    expect(await redis.pauseMark(meta, 1234)).toBe(ScriptCode.OK);
    expect(await own.client.hget(meta, 'paused_at')).toBe('1234');
    expect(await own.client.script('EXISTS', pauseMarkSha)).toEqual([1]);
    expect(await redis.pauseMark(keys.sessionMeta('gone'), 1)).toBe(ScriptCode.MISSING);
  });

  it('still run after SCRIPT FLUSH (as after a Redis restart), many at once in one batch', async () => {
    const meta = keys.sessionMeta('s2');
    await own.client.hset(meta, 'owner', 'k');
    await own.client.script('FLUSH');
    const codes = await Promise.all(Array.from({ length: 20 }, (_, i) => redis.pauseMark(meta, i)));
    expect(codes).toEqual(Array(20).fill(ScriptCode.OK));
    expect(await own.client.hget(meta, 'paused_at')).toBe('19');
  });

  it("reject with Redis's own error when the script fails: nothing is swallowed", async () => {
    const meta = keys.sessionMeta('s3');
    await own.client.set(meta, 'not a hash');
    await expect(redis.pauseMark(meta, 1)).rejects.toThrow(/WRONGTYPE/);
    await own.client.script('FLUSH');
    await expect(redis.pauseMark(meta, 1)).rejects.toThrow(/WRONGTYPE/);
  });

  it('are not ioredis custom commands, and BullMQ gets a connection without them', () => {
    // Each custom command of a connection is copied onto every auto-pipelined batch (45 µs with BullMQ's 52 on it, 6 with none).
    expect(Object.keys((redis as unknown as { scriptsSet: object }).scriptsSet)).toEqual([]);
    const queues = createQueueRedis(own.url, 'tft-scripts-queues');
    try {
      expect(Object.keys((queues as unknown as { scriptsSet: object }).scriptsSet)).toEqual([]);
      expect((queues as unknown as Record<string, unknown>).pauseMark).toBeUndefined();
    } finally {
      queues.disconnect();
    }
  });
});
