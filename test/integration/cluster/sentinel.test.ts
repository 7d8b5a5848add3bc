import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys } from '../../../services/pipeline/keys.ts';
import { createRedis, deleteByPattern } from '../../../services/pipeline/redis.ts';
import { freePort, startOwnRedis, type OwnRedis } from '../own-redis.ts';

// REDIS_URL=redis+sentinel://…/MASTER: a sentinel of our own (redis-server
// --sentinel) watching a redis-server of our own; the service's connection
// finds the master through it and runs the pipeline's scripts and BullMQ.

describe('REDIS_URL redis+sentinel:// (own redis-server and sentinel)', () => {
  let master: OwnRedis;
  let sentinel: ChildProcess;
  let sentinelPort: number;
  let dir: string;
  beforeAll(async () => {
    master = await startOwnRedis();
    sentinelPort = await freePort();
    dir = mkdtempSync(join(tmpdir(), 'tf-sentinel-'));
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(conf, `port ${sentinelPort}\nbind 127.0.0.1\nsentinel monitor tfmaster 127.0.0.1 ${master.port} 1\n`);
    sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
  });
  afterAll(async () => {
    if (sentinel?.exitCode === null) await new Promise((r) => { sentinel.once('exit', r); sentinel.kill('SIGKILL'); });
    await master?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('connects to the master the sentinel names, runs a script and a BullMQ queue', async () => {
    const redis = createRedis(`redis+sentinel://127.0.0.1:${sentinelPort}/tfmaster`, 'tft-sentinel');
    const keys = createKeys('tft-sentinel');
    try {
      for (let i = 0; ; i++) {
        try { await redis.ping(); break; } catch (err) { if (i > 100) throw err; await new Promise((r) => setTimeout(r, 100)); }
      }
      await redis.set(keys.sessionMeta('s1'), 'x');
      expect(await master.client.get(keys.sessionMeta('s1'))).toBe('x'); // it is the master we started
      // A turn's commands in one socket write, as on one server (redis-write-batch.ts).
      const socket = (redis as unknown as { stream: { _writev: (...a: unknown[]) => void; _write: (...a: unknown[]) => void } }).stream;
      const [write, writev] = [socket._write, socket._writev];
      let writes = 0;
      socket._write = function (...a) { writes += 1; return write.apply(this, a); };
      socket._writev = function (...a) { writes += 1; return writev.apply(this, a); };
      await Promise.all(Array.from({ length: 10 }, (_, i) => redis.hset(keys.sessionMeta('s2'), `f${i}`, i)));
      Object.assign(socket, { _write: write, _writev: writev });
      expect(writes).toBe(1);
      expect(String(await redis.idemReserve(keys.idempotency('o', 'h'), 'v', 1000))).toBe('null');
      const q = new Queue(keys.queueName('s1'), { connection: redis, prefix: keys.bullPrefix });
      const seen: number[] = [];
      const w = new Worker(keys.queueName('s1'), async (job) => { seen.push(job.data.n as number); }, { connection: redis, prefix: keys.bullPrefix });
      for (let n = 1; n <= 3; n++) await q.add('c', { n });
      for (let i = 0; i < 100 && seen.length < 3; i++) await new Promise((r) => setTimeout(r, 50));
      await w.close();
      await q.close();
      expect(seen).toEqual([1, 2, 3]);
    } finally {
      await deleteByPattern(redis, keys.all());
      redis.disconnect();
    }
  }, 30_000);
});
