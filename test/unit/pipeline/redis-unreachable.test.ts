// The errors ioredis gives a command that found no connection are told apart
// from Redis's own answers: the API maps them to 503 redis_unavailable.
import { Redis, type RedisOptions } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { isRedisUnreachable, isStorageFull } from '../../../services/pipeline/index.ts';
import { freePort } from '../../integration/own-redis.ts';

async function failure(opts: RedisOptions): Promise<unknown> {
  const port = await freePort(); // nothing listens there
  const r = new Redis({ port, host: '127.0.0.1', retryStrategy: () => 50, ...opts });
  r.on('error', () => {}); // connection refusals are the point here
  try {
    await r.get('k');
    return null;
  } catch (err) {
    return err;
  } finally {
    r.disconnect();
  }
}

describe('isRedisUnreachable', () => {
  it('is true for a command with no offline queue, one given up after its retries, and one on a closed connection', async () => {
    expect(isRedisUnreachable(await failure({ enableOfflineQueue: false }))).toBe(true);
    expect(isRedisUnreachable(await failure({ maxRetriesPerRequest: 0 }))).toBe(true);
    const closed = new Redis({ port: await freePort(), lazyConnect: true });
    closed.disconnect();
    expect(isRedisUnreachable(await closed.get('k').catch((e: unknown) => e))).toBe(true);
  });

  it('is false for Redis answering with an error, and for anything else', () => {
    const oom = new Error("OOM command not allowed when used memory > 'maxmemory'.");
    expect(isStorageFull(oom)).toBe(true);
    expect(isRedisUnreachable(oom)).toBe(false);
    expect(isRedisUnreachable(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBe(false);
    expect(isRedisUnreachable('Connection is closed.')).toBe(false);
  });
});
