// The pipeline's Lua scripts (redis.ts) on a Redis that does not know them (a
// fresh or restarted one, SCRIPT FLUSH), in order with the other commands of a
// tick; BullMQ's scripts on a connection of their own. A Redis of the test's
// own: SCRIPT FLUSH must not touch the shared one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { createRuntime } from '../../../services/main/index.ts';
import { createKeys, createRedis, type PipelineRedis } from '../../../services/pipeline/index.ts';
import { LUA } from '../../../services/pipeline/redis.ts';
import { ScriptCode } from '../../../services/pipeline/script-codes.ts';
import { startOwnRedis, type OwnRedis } from '../own-redis.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { testConfig, testPrefix } from './helpers.ts';

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

  it("keep a tick's commands in order on a new connection to a Redis that lost them (a restart)", async () => {
    const meta = keys.sessionMeta('s4');
    await own.client.hset(meta, 'owner', 'k');
    expect(await redis.pauseMark(meta, 1)).toBe(ScriptCode.OK); // loaded, and known loaded on this socket
    await own.client.script('FLUSH');
    const clients = String(await own.client.client('LIST'));
    const id = /id=(\d+) [^\n]*name=tft-scripts /.exec(clients)?.[1];
    expect(id).toBeDefined();
    const ready = new Promise((resolve) => redis.once('ready', resolve));
    await own.client.client('KILL', 'ID', id!);
    await ready;
    // One tick: the mark, then its removal. Were the mark sent as EVALSHA, it would come back NOSCRIPT and be sent again after the removal.
    const [marked, removed] = await Promise.all([redis.pauseMark(meta, 2), redis.hdel(meta, 'paused_at')]);
    expect([marked, removed]).toEqual([ScriptCode.OK, 1]);
    expect(await own.client.hget(meta, 'paused_at')).toBeNull();
  });

  it("give a process's BullMQ a connection of its own, without them", async () => {
    // Each custom command of a connection is copied onto every MULTI and pipeline: BullMQ's 52 made it 45 µs, not 14.
    const rt = await createRuntime(testConfig(testPrefix('scripts'), { REDIS_URL: own.url }), { sandboxes: new FakeSandboxes(), worker: false });
    try {
      const queues = rt.pipeline.queues.connection;
      expect(queues).not.toBe(rt.redis);
      expect(rt.pipeline.queues.queue('ses_x').opts.connection).toBe(queues);
      await rt.pipeline.queues.queue('ses_x').getJobCounts(); // BullMQ's scripts are now on its connection
      const names = (c: unknown) => Object.keys((c as { scriptsSet: object }).scriptsSet);
      expect(names(queues)).not.toContain('pauseMark');
      expect(names(rt.redis).filter((n) => !LUA.some((s) => s.name === n))).toEqual([]);
    } finally {
      await rt.close();
    }
  });
});
