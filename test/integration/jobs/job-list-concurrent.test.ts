// Jobs created at once by two API processes (two connections) all stay in the jobs list: the prune beside a job's
// own write drops only places older than its grace, never one whose record is on its way (review helper-58; CI).
import { afterAll, describe, expect, it } from 'vitest';
import { JobStore } from '../../../services/jobs/job-store.ts';
import { createKeys } from '../../../services/pipeline/keys.ts';
import { createRedis } from '../../../services/pipeline/redis.ts';
import { cleanupPrefix, REDIS_URL, testPrefix } from '../pipeline/helpers.ts';

const prefix = testPrefix('joblist');
const keys = createKeys(prefix);
const conns = [createRedis(REDIS_URL, 'joblist-a'), createRedis(REDIS_URL, 'joblist-b')];
afterAll(async () => {
  for (const c of conns) c.disconnect();
  await cleanupPrefix(prefix);
});

const view = (id: string) => ({
  job_id: id, session_id: 'ses_x', status: 'queued', task: 't', project: null, approval: 'never', flow: 'thinkflow',
  limits: { max_turns: 1, max_commands: 1, timeout_s: 1, max_failed_turns_in_a_row: 1 }, model: 'm', model_source: 'env',
  turns: 0, api_calls: 0, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, commands: {}, final_text: null, files_seeded: [],
  validate: null, validation: null, error: null, changes: null, webhook: null, metadata: {}, created_at: new Date().toISOString(), started_at: null, finished_at: null,
}) as never;

describe('the jobs list under concurrent creates', () => {
  it('no job made by one process is pruned from the list by the other\'s create', async () => {
    const stores = conns.map((c) => new JobStore(c as never, keys, 3600));
    let n = 0;
    for (let round = 0; round < 200; round++) {
      const ids = [`job_r${round}a`, `job_r${round}b`];
      await Promise.all(ids.map((id, i) => stores[i]!.create(view(id), null, 'runner')));
      n += 2;
    }
    const listed = await stores[0]!.list(10_000);
    expect(listed.length).toBe(n);
  }, 60_000);

  it('a place whose record is not written yet stays listed through another create; one left from long ago goes', async () => {
    const store = new JobStore(conns[0] as never, keys, 3600);
    await conns[0]!.del(keys.jobs()); // a short list: every place is among the oldest a prune reads
    await conns[1]!.zadd(keys.jobs(), Date.now(), 'job_onitsway'); // another process, between its list entry and its record
    await conns[1]!.zadd(keys.jobs(), Date.now() - 3_600_000, 'job_longgone'); // a creation that died an hour ago
    await store.create(view('job_next'), null, 'runner');
    const listed = await conns[0]!.zrange(keys.jobs(), 0, -1);
    expect(listed).toContain('job_onitsway');
    expect(listed).not.toContain('job_longgone');
  });
});
