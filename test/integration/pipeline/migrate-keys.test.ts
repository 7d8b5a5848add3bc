import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { principalId } from '../../../services/api/middleware/auth.ts';
import { JobStore } from '../../../services/jobs/index.ts';
import { JobControlStore } from '../../../services/jobs/job-control.ts';
import { startService } from '../../../services/main/index.ts';
import { createKeys, createRedis, migrateKeys, type MigrationReport } from '../../../services/pipeline/index.ts';
import { startReplayModel, type ReplayModel } from '../../../services/replay-model/server.ts';
import { serveChild, until } from '../../resilience/helpers.ts';
import { keysWithTtl, startOwnRedis, type OwnRedis } from '../own-redis.ts';
import { startCluster } from '../redis-cluster.ts';
import { policyDir, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from './helpers.ts';

// Layout 2 (974fb10) renamed the job and API-key keys without a migration.
// Real data is made by the real service (a finished job submitted with an
// Idempotency-Key, an open session, a deleted one), then put back under the
// old names, built here by hand from the old patterns
// (`<p>:job:<id>[:suffix]`, `<p>:owner:<owner>:<suffix>`), with the old
// layout's steering messages and webhook deliveries added. Then:
// `thinkflow serve` on it answers from that data; migrateKeys itself (on a
// copy under a second prefix) from several processes at once migrates once,
// keeps the TTLs, is a no-op the second time, and leaves a key present in
// both layouts alone and reports it. A redis-server of the test's own.

const KEYS = 'k-a:submitter';
const OWNER = principalId('k-a');
const P = testPrefix('mig');
const P2 = testPrefix('mig2');
const boxes = sandboxPrefix('mig');
const children: ChildProcess[] = [];
let redis: OwnRedis;
let model: ReplayModel;
let jobId = '';
let firstAnswer: unknown;
let openSessions = 0;
/** the old layout's keys of P, with their PTTL (-1: none) */
let oldKeys = new Map<string, number>();

const headers = { authorization: 'Bearer k-a', 'content-type': 'application/json' };
const JOB_BODY = JSON.stringify({ task: 'say hello', metadata: { migrated: true } });
const submit = (base: string) => fetch(`${base}/v1/jobs`, { method: 'POST', headers: { ...headers, 'idempotency-key': 'mig-1' }, body: JOB_BODY });

/** A key of layout 2 under its old name (by hand, from the old patterns); null if it was not renamed. */
function oldNameOf(key: string): string | null {
  const j = /^([^:]+):job:\{j:(job_[0-9a-f]+)\}(.*)$/.exec(key);
  if (j) return `${j[1]}:job:${j[2]}${j[3]}`;
  const o = /^([^:]+):owner:\{o:([^}]+)\}:(.*)$/.exec(key);
  return o ? `${o[1]}:owner:${o[2]}:${o[3]}` : null;
}

async function pttls(client: Redis, match: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const k of (await keysWithTtl(client, match)).keys()) out.set(k, await client.pttl(k));
  return out;
}

beforeAll(async () => {
  redis = await startOwnRedis();
  model = await startReplayModel({ transcripts: [{ name: 'hello', match: 'say hello', delay_ms: 0, turns: [{ reasoning: '', text: 'hello' }] }] });
  const env = { REDIS_URL: redis.url, THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_API_KEYS: KEYS, OPENAI_BASE_URL: model.baseUrl, THINKFLOW_MODEL: 'scripted' };
  const svc = await startService(testConfig(P, { ...env, PORT: '0' }), {});
  try {
    const first = await submit(svc.url!);
    expect(first.status).toBe(202);
    firstAnswer = await first.json();
    jobId = (firstAnswer as { job_id: string }).job_id;
    await until('the job finished', async () => {
      const v = (await (await fetch(`${svc.url}/v1/jobs/${jobId}`, { headers })).json()) as { status: string };
      return ['succeeded', 'failed'].includes(v.status) ? v : undefined;
    }, 60_000);
    const open = async () => ((await (await fetch(`${svc.url}/v1/sessions`, { method: 'POST', headers, body: '{}' })).json()) as { session_id: string }).session_id;
    await open();
    expect((await fetch(`${svc.url}/v1/sessions/${await open()}`, { method: 'DELETE', headers })).status).toBe(204);
  } finally {
    await svc.close();
  }
  const c = redis.client;
  openSessions = (await c.smembers(createKeys(P).ownerSessions(OWNER))).length;
  for (const [key] of await keysWithTtl(c, `${P}:*`)) {
    const old = oldNameOf(key);
    if (old) await c.rename(key, old);
  }
  const msg = { id: 'msg_0123456789abcdef', text: 'steer', interrupt: false, at: new Date().toISOString() };
  await c.rpush(`${P}:job:${jobId}:messages`, JSON.stringify(msg));
  await c.expire(`${P}:job:${jobId}:messages`, 3600);
  await c.rpush(`${P}:job:${jobId}:webhook-deliveries`, JSON.stringify({ delivery_id: 'd1', attempt: 1, at: msg.at, ok: true, status_code: 200 }));
  await c.del(`${P}:schema`);
  oldKeys = new Map([...await pttls(c, `${P}:job:job_*`), ...await pttls(c, `${P}:owner:${OWNER}:*`)]);
  // A copy under P2 for the direct tests (DUMP/RESTORE keeps type, value and TTL).
  // (with the jobs list, whose name did not change)
  for (const [key, ttl] of [...oldKeys, [`${P}:jobs`, -1] as const]) await c.restore(key.replace(P, P2), ttl > 0 ? ttl : 0, (await c.dumpBuffer(key))!);
}, 180_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await model?.close();
  await removeSandboxes(boxes);
  await redis?.stop();
});

describe('key migration to layout 2 (own redis-server)', () => {
  it('the old layout holds what the service wrote: job hash, deliveries, messages, sessions, retired, retired bytes, idempotency key with a TTL', () => {
    const names = [...oldKeys.keys()].map((k) => k.replace(P, '<p>').replace(jobId, '<job>').replace(OWNER, '<owner>').replace(/idem:[0-9a-f]{64}$/, 'idem:<hash>')).sort();
    expect(names).toEqual(expect.arrayContaining(['<p>:job:<job>', '<p>:job:<job>:messages', '<p>:job:<job>:webhook-deliveries',
      '<p>:owner:<owner>:idem:<hash>', '<p>:owner:<owner>:retired', '<p>:owner:<owner>:retired:bytes', '<p>:owner:<owner>:sessions']));
    const idem = [...oldKeys].find(([k]) => k.includes(':idem:'))!;
    expect(idem[1]).toBeGreaterThan(23 * 3600 * 1000);
  });

  it('thinkflow serve migrates at start: the job, the Idempotency-Key replay and the owner cap work on the old data', async () => {
    const env = {
      REDIS_URL: redis.url, THINKFLOW_REDIS_PREFIX: P, THINKFLOW_POLICY_DIR: policyDir(), THINKFLOW_SANDBOX_PREFIX: boxes,
      THINKFLOW_API_KEYS: KEYS, THINKFLOW_MAX_SESSIONS_PER_KEY: String(openSessions),
    };
    const api = await serveChild('api', env, children);
    const job = await fetch(`${api.url}/v1/jobs/${jobId}`, { headers });
    expect(job.status).toBe(200);
    expect(await job.json()).toMatchObject({ job_id: jobId, status: 'succeeded', final_text: 'hello', metadata: { migrated: true } });
    const list = (await (await fetch(`${api.url}/v1/jobs`, { headers })).json()) as { jobs: { job_id: string }[] };
    expect(list.jobs.map((j) => j.job_id)).toContain(jobId);
    const again = await submit(api.url!);
    expect([again.status, again.headers.get('idempotent-replayed'), await again.json()]).toEqual([202, 'true', firstAnswer]);
    // The key's open sessions are seen: one more is over the cap.
    const over = await fetch(`${api.url}/v1/sessions`, { method: 'POST', headers, body: '{}' });
    expect(over.status).toBe(429);
    const c = redis.client;
    const k = createKeys(P);
    for (const [old, ttl] of oldKeys) {
      expect(await c.exists(old), old).toBe(0);
      if (ttl > 0) expect(Math.abs((await c.pttl(old.replace(`:job:${jobId}`, `:job:{j:${jobId}}`).replace(`:owner:${OWNER}:`, `:owner:{o:${OWNER}}:`))) - ttl)).toBeLessThan(60_000);
    }
    expect(await c.get(k.schema())).toBe('2');
    expect(api.log()).toMatch(new RegExp(`key migration: layout 2: ${oldKeys.size} keys renamed`));
    api.child.kill('SIGTERM');
    expect((await api.exited).code).toBe(0);
  }, 120_000);

  it('several processes at once migrate once; TTLs kept; jobs read through JobStore; a second run renames nothing', async () => {
    const k = createKeys(P2);
    const conns = Array.from({ length: 4 }, (_, i) => createRedis(redis.url, `mig-${i}`));
    try {
      const reports = await Promise.all(conns.map((r) => migrateKeys(r, k, { scanCount: 3 })));
      const migrated = reports.filter((r) => r.outcome === 'migrated');
      expect(migrated).toHaveLength(1);
      expect(migrated[0]).toMatchObject({ renamed: oldKeys.size, conflictCount: 0, vanished: 0 });
      expect(reports.filter((r) => r.outcome === 'current')).toHaveLength(3);
      const after = new Map([...await pttls(redis.client, `${P2}:job:*`), ...await pttls(redis.client, `${P2}:owner:*`)]);
      expect([...after.keys()].filter((key) => !key.includes('{'))).toEqual([]);
      expect(after.size).toBe(oldKeys.size);
      const idem = [...after].find(([key]) => key.includes(':idem:'))!;
      const hash = idem[0].split(':idem:')[1]!;
      expect(idem[0]).toBe(k.idempotency(OWNER, hash));
      expect(Math.abs(idem[1] - oldKeys.get(`${P}:owner:${OWNER}:idem:${hash}`)!)).toBeLessThan(60_000);
      const store = new JobStore(conns[0]!, k, 3600);
      expect(await store.list()).toContain(jobId);
      expect((await store.get(jobId))?.view).toMatchObject({ job_id: jobId, status: 'succeeded' });
      expect((await store.deliveries(jobId)).map((d) => d.delivery_id)).toEqual(['d1']);
      expect((await new JobControlStore(conns[0]!, k, 3600).pending(jobId)).map((m) => m.text)).toEqual(['steer']);
      expect(await redis.client.smembers(k.ownerSessions(OWNER))).toHaveLength(openSessions);
      expect(Number(await redis.client.hget(k.ownerRetiredBytes(OWNER), '~total'))).toBeGreaterThan(0);
      const second: MigrationReport = await migrateKeys(conns[1]!, k);
      expect(second).toMatchObject({ outcome: 'current', renamed: 0 });
      expect(await redis.client.exists(k.schemaLock())).toBe(0);
    } finally {
      for (const r of conns) r.disconnect();
    }
  }, 60_000);

  it('a key present in both layouts is left alone (both kept) and reported; the others move', async () => {
    const p = testPrefix('mig3');
    const k = createKeys(p);
    const c = redis.client;
    const hash = createHash('sha256').update('x').digest('hex');
    await c.sadd(`${p}:owner:${OWNER}:sessions`, 'old-sid');
    await c.sadd(k.ownerSessions(OWNER), 'new-sid');
    await c.set(`${p}:owner:${OWNER}:idem:${hash}`, 'v', 'EX', 100);
    const r = createRedis(redis.url, 'mig-conflict');
    try {
      const report = await migrateKeys(r, k);
      expect(report).toMatchObject({ outcome: 'migrated', renamed: 1, conflictCount: 1, conflicts: [{ from: `${p}:owner:${OWNER}:sessions`, to: k.ownerSessions(OWNER) }] });
    } finally {
      r.disconnect();
    }
    expect(await c.smembers(`${p}:owner:${OWNER}:sessions`)).toEqual(['old-sid']);
    expect(await c.smembers(k.ownerSessions(OWNER))).toEqual(['new-sid']);
    expect(await c.ttl(k.idempotency(OWNER, hash))).toBeGreaterThan(90);
  });

  it('a lock left by a migrator that died expires and the next process migrates', async () => {
    const p = testPrefix('mig4');
    const k = createKeys(p);
    const c = redis.client;
    await c.hset(`${p}:job:job_0a1b`, 'data', '{}', 'owner', OWNER);
    await c.set(k.schemaLock(), 'a-dead-process', 'PX', 600);
    const r = createRedis(redis.url, 'mig-stale');
    const t0 = Date.now();
    try {
      expect(await migrateKeys(r, k, { lockMs: 5000 })).toMatchObject({ outcome: 'migrated', renamed: 1 });
    } finally {
      r.disconnect();
    }
    expect(Date.now() - t0).toBeGreaterThanOrEqual(400);
    expect(await c.hget(k.job('job_0a1b'), 'owner')).toBe(OWNER);
    expect(await c.exists(k.schemaLock())).toBe(0);
  });

  it('on a Redis Cluster it is skipped (the old layout could not be there): no schema key, no lock', async () => {
    const cluster = await startCluster();
    const r = createRedis(cluster.url, 'mig-cluster');
    const k = createKeys(testPrefix('mig5'));
    try {
      expect(await migrateKeys(r, k)).toMatchObject({ outcome: 'cluster', renamed: 0 });
      expect([await r.exists(k.schema()), await r.exists(k.schemaLock())]).toEqual([0, 0]);
    } finally {
      r.disconnect();
      await cluster.stop();
    }
  }, 60_000);
});
