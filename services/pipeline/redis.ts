import { readFileSync } from 'node:fs';
import { Redis, type RedisOptions } from 'ioredis';
import { log } from '../log/index.ts';

// Connection factory and the registry of the Lua scripts (the atomic storage
// steps), registered as ioredis custom commands (EVALSHA with automatic script
// loading). Scripts live in ./scripts as `<name>-<numKeys>.lua`, each with a
// KEYS/ARGV header; their keys are built by keys.ts and passed in. A script
// gets the shared functions of ./scripts/lib it calls prepended.

/** name → number of KEYS */
const SCRIPTS = { createRecord: 10, transition: 7, answerApproval: 3, failTurn: 2, appendEvent: 5, retireBytes: 3, retiredBytes: 2, idemReserve: 1, idemHeld: 1, idemAnswer: 3 } as const;

type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;
export type PipelineRedis = Redis & Record<keyof typeof SCRIPTS, ScriptFn>;

const scriptText = (file: string) => readFileSync(new URL(`./scripts/${file}.lua`, import.meta.url), 'utf8');
/** Shared functions, in definition order (a Lua local must be defined before it is used). */
const LIBS = ['followTtl', 'emitEvent', 'creditRetired'].map((name) => ({ name, lua: scriptText(`lib/${name}`) }));
const LUA = Object.entries(SCRIPTS).map(([name, keys]) => {
  const body = scriptText(`${name}-${keys}`);
  const libs = LIBS.filter((l) => body.includes(`${l.name}(`)).map((l) => l.lua);
  return { name, keys, lua: [...libs, body].join('\n') };
});

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
  for (const s of LUA) redis.defineCommand(s.name, { numberOfKeys: s.keys, lua: s.lua });
  // ioredis emits 'error' on every failed reconnect; without a listener Node
  // would crash. It keeps reconnecting, so a warning is enough.
  redis.on('error', (err: Error) => log().warn({ err, connection: name }, 'redis connection error'));
  return redis as PipelineRedis;
}

/**
 * True when Redis refused a write because it is at `maxmemory` (policy
 * noeviction: `OOM command not allowed…`), also inside a script, a discarded
 * MULTI or an error that wraps it. Nothing of that write happened.
 */
export function isStorageFull(err: unknown, depth = 0): boolean {
  if (!(err instanceof Error) || depth > 4) return false;
  if (/\bOOM command not allowed\b/.test(err.message)) return true;
  const previous = (err as { previousErrors?: unknown }).previousErrors;
  if (Array.isArray(previous) && previous.some((e) => isStorageFull(e, depth + 1))) return true;
  return isStorageFull(err.cause, depth + 1);
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
