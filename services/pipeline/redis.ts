import { readFileSync } from 'node:fs';
import { Redis, type RedisOptions } from 'ioredis';

// Connection factory and the Lua scripts, registered as ioredis custom commands
// (EVALSHA with automatic script loading). Scripts live in ./scripts as
// `<name>-<numKeys>.lua`, each with a KEYS/ARGV header.

const SCRIPTS = ['createRecord-8', 'transition-5', 'answerApproval-3', 'failTurn-1', 'appendEvent-3'] as const;

type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;
export type PipelineRedis = Redis & {
  createRecord: ScriptFn;
  transition: ScriptFn;
  answerApproval: ScriptFn;
  failTurn: ScriptFn;
  appendEvent: ScriptFn;
};

/**
 * A connection usable by BullMQ (which requires `maxRetriesPerRequest: null` for
 * blocking commands) and by the pipeline's scripts.
 * @example const redis = createRedis('redis://127.0.0.1:6379', 'tf-api');
 */
export function createRedis(url: string, name: string, extra: RedisOptions = {}): PipelineRedis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: null,
    connectionName: name,
    // Keep reconnecting: a Redis restart (AOF) must not kill the service.
    retryStrategy: (times) => Math.min(times * 100, 2000),
    // Commands issued in the same tick leave in one socket write: under load the
    // write syscalls, not Redis, were the service's largest CPU cost.
    enableAutoPipelining: true,
    ...extra,
  });
  for (const file of SCRIPTS) {
    const [name, keys] = file.split('-') as [string, string];
    const lua = readFileSync(new URL(`./scripts/${file}.lua`, import.meta.url), 'utf8');
    redis.defineCommand(name, { numberOfKeys: Number(keys), lua });
  }
  // ioredis emits 'error' on every failed reconnect; without a listener Node would crash.
  redis.on('error', () => {});
  return redis as PipelineRedis;
}

/** Deletes every key matching a pattern (tests and `bench` cleanup). */
export async function deleteByPattern(redis: Redis, pattern: string): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length) deleted += await redis.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}
