import { readFileSync } from 'node:fs';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { log } from '../log/index.ts';
import { keySlot } from './key-slot.ts';
import { parseRedisUrl, type RedisTarget } from '../config/index.ts';
import { LUA_CODES } from './script-codes.ts';
import { BatchingConnector, BatchingSentinelConnector } from './redis-write-batch.ts';

// Connection factory and the registry of the Lua scripts (the atomic storage
// steps), registered as ioredis custom commands (EVALSHA with automatic script
// loading, sent in call order with the other commands; a loop turn's commands
// leave in one socket write, redis-write-batch.ts). Scripts live in ./scripts as
// `<name>-<numKeys>.lua`, each with a KEYS/ARGV header; their keys are built by keys.ts and passed in. A script
// gets the return codes (script-codes.ts) and the shared functions of
// ./scripts/lib it calls prepended.

/** name → number of KEYS */
export const SCRIPTS = { createRecord: 13, transition: 7, runNext: 5, answerApproval: 4, failTurn: 2, appendEvent: 5, retireBytes: 2, retiredBytes: 2, idemReserve: 1, idemHeld: 1, idemAnswer: 3, sessionClaim: 2, openTurn: 2,
  jobMessagePush: 1, jobMessagesTake: 1, pauseMark: 1 } as const;

type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;
export type PipelineRedis = Redis & Record<keyof typeof SCRIPTS, ScriptFn>;

const scriptText = (file: string) => readFileSync(new URL(`./scripts/${file}.lua`, import.meta.url), 'utf8');
/** Shared functions, in definition order (a Lua local must be defined before it is used). */
const LIBS = ['followTtl', 'emitEvent', 'creditRetired'].map((name) => ({ name, lua: scriptText(`lib/${name}`) }));
/** Each script's full text as registered (the slot test runs them on a Cluster). */
export const LUA = Object.entries(SCRIPTS).map(([name, keys]) => {
  const body = scriptText(`${name}-${keys}`);
  const libs = LIBS.filter((l) => body.includes(`${l.name}(`)).map((l) => l.lua);
  return { name, keys, lua: [LUA_CODES, ...libs, body].join('\n') };
});

/**
 * A connection usable by BullMQ (which requires `maxRetriesPerRequest: null` for
 * blocking commands) and by the pipeline's scripts. `url` is REDIS_URL
 * (redis-url.ts): one Redis, a Cluster (an ioredis `Cluster`, typed here as
 * the `Redis` it stands in for: every command the services use is the same on
 * both) or a Sentinel set.
 * @example const redis = createRedis('redis://127.0.0.1:6379', 'tf-api');
 */
export function createRedis(url: string, name: string, extra: RedisOptions = {}): PipelineRedis {
  const redis = connect(parseRedisUrl(url), { ...baseOptions(name), ...extra });
  for (const s of LUA) redis.defineCommand(s.name, { numberOfKeys: s.keys, lua: s.lua });
  logErrors(redis, name);
  return redis as unknown as PipelineRedis;
}

/** A MULTI's replies; the first command's error is thrown (ioredis resolves them as `[err, value]` pairs). */
export async function execMulti(multi: { exec(): Promise<[Error | null, unknown][] | null> }): Promise<unknown[]> {
  const out = (await multi.exec()) ?? [];
  for (const [err] of out) if (err) throw err;
  return out.map(([, v]) => v);
}

function baseOptions(name: string): RedisOptions {
  return {
    maxRetriesPerRequest: null,
    connectionName: name,
    // Keep reconnecting: a Redis restart (AOF) must not kill the service.
    retryStrategy: (times) => Math.min(times * 100, 2000),
    // A loop turn's commands leave in one socket write (redis-write-batch.ts): under load the
    // write syscalls, not Redis, were the service's largest CPU cost.
    Connector: BatchingConnector as unknown as RedisOptions['Connector'],
  };
}

// ioredis emits 'error' on every failed reconnect; without a listener Node
// would crash. It keeps reconnecting, so a warning is enough.
function logErrors(redis: Redis | Cluster, name: string): void {
  redis.on('error', (err: Error) => log().warn({ err, connection: name }, 'redis connection error'));
}

function connect(target: RedisTarget, base: RedisOptions): Redis | Cluster {
  if (target.kind === 'single') return new Redis(target.url, base);
  const auth = { ...(target.username ? { username: target.username } : {}), ...(target.password !== undefined ? { password: target.password } : {}) };
  const tls = target.tls ? { tls: {} } : {};
  if (target.kind === 'sentinel') {
    return new Redis({
      ...base, ...auth, ...tls, sentinels: target.sentinels, name: target.master, db: target.db,
      // With a Connector of ours, ioredis leaves the connector's `emitter` unset: it serves only `failoverDetector`, off here.
      ...(base.Connector ? { Connector: BatchingSentinelConnector as unknown as RedisOptions['Connector'] } : {}),
      ...(target.sentinelPassword ? { sentinelPassword: target.sentinelPassword } : {}),
      ...(target.tls ? { enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
    });
  }
  const { enableAutoPipelining, retryStrategy, lazyConnect, enableOfflineQueue, ...nodeOptions } = base;
  // Per-node options (BullMQ reads maxRetriesPerRequest from redisOptions);
  // the cluster itself pipelines (grouping commands by node) and reconnects.
  return new Cluster(target.nodes, {
    redisOptions: { ...nodeOptions, ...auth, ...tls, ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }) },
    enableAutoPipelining,
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    clusterRetryStrategy: (times) => (retryStrategy ? (retryStrategy(times) as number) : Math.min(times * 100, 2000)),
    // A node's MOVED/ASK during a resharding is followed, not failed.
    maxRedirections: 16,
  });
}

/**
 * BullMQ's connection (the session queues and their Workers), with none of the
 * pipeline's scripts: ioredis copies every script of a connection onto each
 * MULTI and pipeline it builds. BullMQ's 52 scripts on the pipeline's
 * connection made that 45 µs each instead of 14 (bench:redis-commands).
 */
export function createQueueRedis(url: string, name: string): Redis {
  const redis = connect(parseRedisUrl(url), baseOptions(name));
  logErrors(redis, name);
  return redis as Redis; // a Cluster stands in for it, as in createRedis
}

/**
 * The connection a process subscribes on. No ready check (INFO after each
 * connect): SUBSCRIBE may be written during the connect phase (it is allowed
 * while Redis loads), and the INFO that followed it was then refused with
 * "Connection in subscriber mode", which crashed a worker starting up (seen in
 * CI). Pub/sub needs no loaded dataset, so there is nothing to wait for.
 */
export function createSubscriber(url: string, name: string): PipelineRedis {
  return createRedis(url, name, { enableReadyCheck: false });
}

/**
 * A plain connection to any REDIS_URL form (one server, Sentinel, Cluster)
 * with exactly these options: no scripts, no logging (the readiness probe's).
 */
export function connectRedis(url: string, options: RedisOptions): Redis | Cluster {
  return connect(parseRedisUrl(url), options);
}

/**
 * MGET of keys that may be in different slots: one MGET on a single Redis, one
 * per slot on a Cluster (a multi-key command must stay in one slot there).
 */
export async function mgetAcross(redis: Redis, keys: string[]): Promise<(string | null)[]> {
  if (keys.length === 0) return [];
  if (!isCluster(redis as unknown)) return redis.mget(...keys);
  const bySlot = new Map<number, number[]>();
  keys.forEach((key, i) => {
    const slot = keySlot(key);
    bySlot.set(slot, [...(bySlot.get(slot) ?? []), i]);
  });
  const out: (string | null)[] = new Array(keys.length).fill(null);
  await Promise.all([...bySlot.values()].map(async (idx) => {
    const vals = await redis.mget(...idx.map((i) => keys[i]!));
    idx.forEach((i, j) => { out[i] = vals[j] ?? null; });
  }));
  return out;
}

/** True when `redis` is a Redis Cluster client (its pipelines and MULTIs must stay in one slot, SCAN is per node). */
export function isCluster(redis: unknown): redis is Cluster {
  return redis instanceof Cluster;
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

/** Deletes every key matching a pattern (tests and `bench` cleanup); on a Cluster, on every master. */
export async function deleteByPattern(redis: Redis, pattern: string): Promise<number> {
  const cluster = isCluster(redis as unknown);
  const nodes: Redis[] = cluster ? (redis as unknown as Cluster).nodes('master') : [redis];
  let deleted = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      // On a Cluster one UNLINK per key: a multi-key UNLINK must stay in one slot.
      if (keys.length && !cluster) deleted += await node.unlink(...keys);
      else if (keys.length) deleted += (await Promise.all(keys.map((k) => node.unlink(k)))).reduce((a, b) => a + b, 0);
    } while (cursor !== '0');
  }
  return deleted;
}
