// Every pipeline connection (createRedis, createQueueRedis; each node's on a
// Cluster) writes a loop turn's commands in one socket write
// (redis-write-batch.ts), where ioredis alone writes each command on its own.
// Runs on the test Redis: one server, or the Cluster of `npm run test:cluster`.
import type { Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import { createQueueRedis, createRedis, isCluster } from '../../../services/pipeline/redis.ts';
import { createKeys } from '../../../services/pipeline/index.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from './helpers.ts';

const prefix = testPrefix('write-batch');
const keys = createKeys(prefix);
const opened: Redis[] = [];
afterAll(async () => {
  await cleanupPrefix(prefix);
  for (const r of opened) r.disconnect();
});

/** The sockets of a connection: its own, or each master node's on a Cluster. */
function socketsOf(redis: Redis): Socket[] {
  const nodes = isCluster(redis as unknown) ? (redis as unknown as Cluster).nodes('master') : [redis];
  // A Cluster connects to a node on its first command there: one with no socket yet is written nothing.
  return nodes.map((n) => (n as unknown as { stream?: Socket }).stream).filter((s): s is Socket => s !== undefined);
}

/** Counts the socket-level writes (libuv handle writes) of `redis` while `run` runs (`soFar`: the count until now). */
async function countSocketWrites(redis: Redis, run: (soFar: () => number) => Promise<unknown>): Promise<number> {
  let writes = 0;
  const restore = socketsOf(redis).map((s) => {
    const own = s as unknown as { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
    const [write, writev] = [own._write, own._writev];
    own._write = function (...a) { writes += 1; return write.apply(this, a); };
    own._writev = function (...a) { writes += 1; return writev.apply(this, a); };
    return () => Object.assign(own, { _write: write, _writev: writev });
  });
  try {
    await run(() => writes);
  } finally {
    for (const r of restore) r();
  }
  return writes;
}

describe("the pipeline's Redis connections", () => {
  for (const [name, make] of [['createRedis', () => createRedis(REDIS_URL, 'tft-write-batch')], ['createQueueRedis', () => createQueueRedis(REDIS_URL, 'tft-write-batch-q')]] as const) {
    it(`${name}: 20 commands of one turn to one slot leave in one socket write, in order`, async () => {
      const redis = make() as Redis;
      opened.push(redis);
      const key = keys.sessionMeta('batch'); // one session's keys share a slot on a Cluster
      await redis.exists(key); // connected (to the key's node, on a Cluster)
      const writes = await countSocketWrites(redis, () => Promise.all([
        redis.del(key),
        ...Array.from({ length: 19 }, (_, i) => redis.hset(key, `f${i}`, String(i))),
      ]));
      expect(writes).toBe(1);
      expect(Object.keys(await redis.hgetall(key))).toHaveLength(19);
    });
  }

  it('a second turn writes at once: nothing waits for the first batch to be answered', async () => {
    const redis = createRedis(REDIS_URL, 'tft-write-batch-2') as unknown as Redis;
    opened.push(redis);
    const [empty, key] = [keys.turnCounter('turns'), keys.sessionMeta('turns')]; // one session's: one slot
    await redis.del(key, empty);
    let beforeAnswer = -1;
    const writes = await countSocketWrites(redis, async (soFar) => {
      let answered = false;
      const blocked = redis.blpop(empty, 0.3).then((r) => { answered = true; return r; }); // unanswered for 0.3 s
      await new Promise((r) => setImmediate(r)); // the first batch is written
      const second = redis.set(key, 'b');
      await new Promise((r) => setTimeout(r, 100));
      beforeAnswer = answered ? -1 : soFar();
      expect(await Promise.all([blocked, second])).toEqual([null, 'OK']);
    });
    // ioredis's auto-pipelining held the SET back until the BLPOP was answered: 1 write by then, not 2.
    expect(beforeAnswer).toBe(2);
    expect(writes).toBe(2);
  });
});
