// A slot moving between Cluster nodes while the pipeline's connection writes
// to it (a resharding under load): every command is answered, none fails on
// the ASK or MOVED replies of the move, and one key's writes stay in order.
// Other slots are written in the same loop turns, as a busy service does.
// ioredis's auto-pipelining, which the pipeline used before
// redis-write-batch.ts, failed thousands of such commands (ioredis#2075; found
// by a review of that change). A Cluster of the test's own.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keySlot } from '../../../services/pipeline/key-slot.ts';
import { createRedis } from '../../../services/pipeline/redis.ts';
import { startCluster, type TestCluster } from '../redis-cluster.ts';

const cli = async (port: number, ...args: string[]) => (await promisify(execFile)('redis-cli', ['-p', String(port), ...args])).stdout.trim();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const KEY = 'slotmove:{moving}';

let cluster: TestCluster;
let redis: Cluster;
beforeAll(async () => {
  cluster = await startCluster();
  redis = createRedis(cluster.url, 'tft-slot-migration') as unknown as Cluster;
}, 60_000);
afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

type Owner = { port: number; id: string };

/** The master serving `slot`, and another one. */
async function ownerAndOther(slot: number): Promise<[Owner, Owner]> {
  const ranges = (await redis.cluster('SLOTS')) as unknown as [number, number, [string, number, string]][];
  const own = ranges.find(([from, to]) => from <= slot && slot <= to)!;
  const other = ranges.find((r) => r[2][1] !== own[2][1])!;
  return [{ port: own[2][1], id: own[2][2] }, { port: other[2][1], id: other[2][2] }];
}

/** Moves `slot` as `redis-cli --cluster reshard` does: importing, migrating, each key MIGRATEd, then the new owner told to all. */
async function moveSlot(slot: number, from: Owner, to: Owner): Promise<void> {
  await cli(to.port, 'cluster', 'setslot', String(slot), 'importing', from.id);
  await cli(from.port, 'cluster', 'setslot', String(slot), 'migrating', to.id);
  await sleep(50); // writes meet the half-moved slot (ASK)
  for (;;) {
    const keys = (await cli(from.port, 'cluster', 'getkeysinslot', String(slot), '100')).split('\n').filter(Boolean);
    if (keys.length === 0) break;
    for (const k of keys) await cli(from.port, 'migrate', '127.0.0.1', String(to.port), k, '0', '5000');
  }
  await sleep(50);
  // The new owner first, then the old one (as redis-cli does): the other order lets each send a command back to the other.
  for (const port of [to.port, from.port, ...cluster.ports.filter((p) => p !== to.port && p !== from.port)]) {
    await cli(port, 'cluster', 'setslot', String(slot), 'node', to.id);
  }
}

describe("the pipeline's connection while a slot moves", () => {
  it('answers every command, fails none, and keeps one key\'s writes in order', async () => {
    const slot = keySlot(KEY);
    await redis.del(KEY);
    let seq = 0;
    const failures: string[] = [];
    let stop = false;
    const load = (async () => {
      // Bounded: stops once the moves are done, at most 2,000 batches.
      for (let batch = 0; !stop && batch < 2_000; batch++) {
        // With writes to other slots in the same turn: ioredis's auto-pipelining batched those per node and then
        // could not follow a redirection of a batch that spans slots.
        const sent = Array.from({ length: 10 }, (_, i) => [redis.rpush(KEY, String(seq++)), redis.incr(`slotmove:other:${i}`)]).flat();
        await Promise.all(sent.map((p) => p.catch((e: Error) => { failures.push(e.message); })));
      }
    })();
    await sleep(100);
    const [a, b] = await ownerAndOther(slot);
    await moveSlot(slot, a, b);
    await sleep(100);
    await moveSlot(slot, b, a);
    await sleep(100);
    stop = true;
    await load;
    expect(failures.slice(0, 3)).toEqual([]);
    const list = (await redis.lrange(KEY, 0, -1)).map(Number);
    expect(list).toHaveLength(seq);
    expect(list).toEqual([...list].sort((x, y) => x - y));
  }, 60_000);
});
