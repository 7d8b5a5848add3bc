// Issue 18, "Redis grows without bound", second round (h9): the session's own
// keys expired after DELETE, but three global indexes kept an entry per
// request for good: the sessions zset (a member per session ever created),
// the approvals index hash (a field per approval ever requested, even after
// the approval's own hash expired) and the jobs zset (a member per job, its
// hash long expired). A create/delete loop grew Redis without bound. Own
// redis-server: every key of the instance is scanned.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { JobStore } from '../../../services/jobs/job-store.ts';
import { createKeys } from '../../../services/pipeline/keys.ts';
import type { JobView } from '../../../services/jobs/job-schemas.ts';
import { startOwnRedis, type OwnRedis } from '../own-redis.ts';
import { client, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from './helpers.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every key, hash field, set and zset member of the instance that names one of `needles`. */
async function mentions(redis: OwnRedis, needles: string[]): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.client.scan(cursor, 'COUNT', 1000);
    cursor = next;
    for (const k of keys) {
      if (k.endsWith(':busy')) continue; // the worker pool prunes it a minute after a session's last work
      const type = await redis.client.type(k);
      const parts = type === 'hash' ? await redis.client.hkeys(k) : type === 'zset' ? await redis.client.zrange(k, 0, -1)
        : type === 'set' ? await redis.client.smembers(k) : [];
      for (const n of needles) {
        if (k.includes(n)) out.push(k);
        for (const p of parts) if (p.includes(n)) out.push(`${k} ∋ ${p}`);
      }
    }
  } while (cursor !== '0');
  return out;
}

describe('global indexes follow the retention (own redis-server)', () => {
  let redis: OwnRedis;
  let svc: ServiceHandle;
  const boxes = sandboxPrefix('h9idx');
  beforeAll(async () => {
    redis = await startOwnRedis();
    svc = await startService(testConfig(testPrefix('h9idx'), {
      PORT: '0', REDIS_URL: redis.url, THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_RETENTION_S: '2', THINKFLOW_APPROVAL_TTL_S: '1',
    }), {});
  });
  afterAll(async () => {
    await svc?.close();
    await removeSandboxes(boxes);
    await redis?.stop();
  });

  it('after DELETE and the retention, nothing names the session or its approval: no sessions-zset member, no approvals-index field', async () => {
    const c = client(svc.url!);
    const sids: string[] = [];
    const tokens: string[] = [];
    for (let i = 0; i < 3; i++) {
      const sid = ((await (await c.json('/v1/sessions', { approval: 'on-request' })).json()) as { session_id: string }).session_id;
      sids.push(sid);
      // `rm` prompts under the test policy; nobody answers, the approval expires after 1 s.
      const res = await c.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="1" cmd="rm -f x" />');
      expect(res.status).toBe(200);
      const ledger = ((await (await c.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: { approval: { token: string } | null }[] }).entries;
      tokens.push(ledger[0]!.approval!.token);
      expect((await c.del(`/v1/sessions/${sid}`)).status).toBe(204);
    }
    expect(await mentions(redis, [...sids, ...tokens])).not.toEqual([]);
    await sleep(3500);
    expect(await mentions(redis, [...sids, ...tokens])).toEqual([]);
  }, 60_000);

  it('the jobs list drops jobs whose record expired, as new jobs come', async () => {
    const keys = createKeys('h9jobs');
    const store = new JobStore(redis.client, keys, 1);
    // Made an hour ago (their retention, 1 s here, has long ended by the time a real list prunes them), and two now.
    const view = (n: number) => ({ job_id: `job_h9x${n}`, created_at: new Date(Date.now() - (n < 100 ? 3_600_000 : 0) + n).toISOString() }) as unknown as JobView;
    for (let n = 0; n < 30; n++) {
      await store.create(view(n), null, 'r');
      await redis.client.expire(keys.job(`job_h9x${n}`), 1); // what a final job's record gets (its retention)
    }
    await sleep(1500);
    for (let n = 100; n < 102; n++) await store.create(view(n), null, 'r');
    expect(await store.list(1000)).toEqual(['job_h9x101', 'job_h9x100']);
  }, 30_000);
});
