import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { log } from '../log/index.ts';
import { legacyKeys, type Keys } from './keys.ts';
import { isCluster } from './redis.ts';

// Layout 2 (commit 974fb10) put hash tags in the job and API-key keys for
// Redis Cluster, under new names: data written before it would be invisible.
// A process moves it at start, before it serves: SCAN (COUNT-bounded) for the
// old names, RENAMENX each to its new one (a RENAME keeps the TTL; NX never
// overwrites a key already in the new layout: both are then kept and named in
// the log), then `${prefix}:schema` = 2 so later starts skip it at one GET. A
// lock (SET NX PX, extended while it works) lets one of several processes
// starting together migrate; the others wait for the schema key. Every step
// is idempotent: a migrator that dies leaves a lock that expires, and the next
// one renames what is left. Values need no rewrite: the sets and zsets hold
// session ids, the retired zset `idem:<hash>` members, never a key name.
// A Cluster never held the old layout (its scripts would have been refused).

/** The key layout this code reads and writes. */
export const SCHEMA_VERSION = 2;

export type MigrationOptions = {
  /** SCAN's COUNT: keys Redis looks at per call (the work of one round trip) */
  scanCount?: number;
  /** the lock's life; the migrator extends it after each SCAN call */
  lockMs?: number;
  /** how long a process waits for another's migration before failing its start */
  waitMs?: number;
};

export type MigrationReport = {
  /** migrated: by this process; current: already layout 2 (or by another process meanwhile); cluster: skipped */
  outcome: 'migrated' | 'current' | 'cluster';
  renamed: number;
  /** old keys left where they are because the new name exists too (first 100) */
  conflicts: { from: string; to: string }[];
  conflictCount: number;
  /** old keys that expired between the SCAN and their RENAMENX */
  vanished: number;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** @example await migrateKeys(redis, createKeys('tf')) // at start, before workers and the API */
export async function migrateKeys(redis: Redis, keys: Keys, opts: MigrationOptions = {}): Promise<MigrationReport> {
  const none: MigrationReport = { outcome: 'current', renamed: 0, conflicts: [], conflictCount: 0, vanished: 0 };
  if (isCluster(redis as unknown)) {
    log().info({ prefix: keys.prefix }, 'key migration: skipped on a Redis Cluster (no data of the untagged layout can be there)');
    return { ...none, outcome: 'cluster' };
  }
  const lockMs = opts.lockMs ?? 30_000;
  const deadline = Date.now() + (opts.waitMs ?? 10 * 60_000);
  let waited = false;
  for (;;) {
    if (await isCurrent(redis, keys)) {
      if (waited) log().info({ prefix: keys.prefix }, 'key migration: done by another process');
      return none;
    }
    const token = randomBytes(12).toString('hex');
    if ((await redis.set(keys.schemaLock(), token, 'PX', lockMs, 'NX')) === 'OK') {
      try {
        // Another process may have finished between our GET and SET.
        if (await isCurrent(redis, keys)) return none;
        return await migrateLocked(redis, keys, token, lockMs, opts.scanCount ?? 500);
      } finally {
        if ((await redis.get(keys.schemaLock())) === token) await redis.del(keys.schemaLock());
      }
    }
    if (Date.now() > deadline) throw new Error(`key migration: ${keys.schemaLock()} is still held by another process after ${opts.waitMs ?? 600_000} ms`);
    if (!waited) log().info({ prefix: keys.prefix }, 'key migration: another process holds the lock; waiting for it');
    waited = true;
    await sleep(100);
  }
}

async function isCurrent(redis: Redis, keys: Keys): Promise<boolean> {
  return Number((await redis.get(keys.schema())) ?? 0) >= SCHEMA_VERSION;
}

async function migrateLocked(redis: Redis, keys: Keys, token: string, lockMs: number, count: number): Promise<MigrationReport> {
  const started = Date.now();
  const legacy = legacyKeys(keys.prefix);
  const report: MigrationReport = { outcome: 'migrated', renamed: 0, conflicts: [], conflictCount: 0, vanished: 0 };
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', legacy.match, 'COUNT', count);
    cursor = next;
    const moves = found.flatMap((from) => {
      const to = legacy.renamed(from);
      return to === null ? [] : [{ from, to }];
    });
    if (moves.length > 0) await renameBatch(redis, moves, report);
    // A long migration keeps its lock (not atomic with the GET: a lock lost
    // meanwhile only lets a second migrator in, which renames nothing twice).
    if ((await redis.get(keys.schemaLock())) === token) await redis.pexpire(keys.schemaLock(), lockMs);
  } while (cursor !== '0');
  await redis.set(keys.schema(), String(SCHEMA_VERSION));
  log().info({ prefix: keys.prefix, renamed: report.renamed, conflicts: report.conflictCount, vanished: report.vanished, ms: Date.now() - started },
    `key migration: layout ${SCHEMA_VERSION}: ${report.renamed} keys renamed`);
  return report;
}

async function renameBatch(redis: Redis, moves: { from: string; to: string }[], report: MigrationReport): Promise<void> {
  const p = redis.pipeline();
  for (const { from, to } of moves) p.renamenx(from, to);
  const results = (await p.exec()) ?? [];
  if (results.length !== moves.length) throw new Error('key migration: the RENAMENX pipeline was discarded');
  results.forEach(([err, n], i) => {
    const move = moves[i]!;
    if (err && /no such key/i.test(err.message)) report.vanished++;
    else if (err) throw err;
    else if (Number(n) === 1) report.renamed++;
    else {
      report.conflictCount++;
      if (report.conflicts.length < 100) report.conflicts.push(move);
      log().warn({ old_key: move.from, new_key: move.to },
        'key migration: both layouts hold this key; the new one is kept as it is and the old one left beside it (compare and merge by hand)');
    }
  });
}
