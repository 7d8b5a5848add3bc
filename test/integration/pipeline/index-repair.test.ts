import { afterAll, describe, expect, it } from 'vitest';
import { Approvals } from '../../../services/pipeline/approvals.ts';
import { createKeys } from '../../../services/pipeline/keys.ts';
import { createRedis } from '../../../services/pipeline/redis.ts';
import { cleanupPrefix, REDIS_URL, testPrefix } from './helpers.ts';

// The global indexes are written by their own command next to the
// per-session script (Redis Cluster: README "Redis Cluster"); a crash between
// the two leaves drift that the readers repair. Here the crash is simulated
// by running the script without the index write that follows it. Runs on one
// Redis or the cluster (THINKFLOW_TEST_REDIS=cluster).

const prefix = testPrefix('idxrep');
const keys = createKeys(prefix);
const redis = createRedis(REDIS_URL, 'tft-idxrep');
const approvals = new Approvals(redis, keys);
afterAll(async () => {
  await cleanupPrefix(prefix);
  redis.disconnect();
});

const evaluation = { decision: 'prompt' as const, matched_rules: [], reason: 'asks' };
const ask = (sid: string, ttlS = 60) => approvals.requestNetwork({
  sessionId: sid, jobId: null, recordId: 'r1', host: 'example.com', port: 443, target: 'example.com:443', evaluation, ttlS, index: 1,
});

describe('pending-approvals index: drift after a crash is repaired by the listing', () => {
  it('an answer whose removal from the index never happened: the listing drops the token', async () => {
    const kept = await ask('idxrepA');
    const answered = await ask('idxrepB');
    // The answer script alone (what Approvals.answer runs before its ZREM).
    await redis.answerApproval(keys.approval('idxrepB', answered.token), keys.grants('idxrepB'), keys.record('idxrepB', 0), keys.sessionBytes('idxrepB'),
      'reject', 'no', 'op', Date.now(), new Date().toISOString(), answered.token, keys.approvalChannel(), 'exact', '', '');
    expect(await redis.zscore(keys.approvalsPending(), answered.token)).not.toBeNull();
    const listed = (await approvals.listPending()).map((a) => a.token);
    expect(listed).toContain(kept.token);
    expect(listed).not.toContain(answered.token);
    expect(await redis.zscore(keys.approvalsPending(), answered.token)).toBeNull();
    expect(await redis.zscore(keys.approvalsPending(), kept.token)).not.toBeNull();
  });

  it('index entries whose approval was never written: kept while they may be in flight, dropped an hour past expiry', async () => {
    const now = Date.now();
    await redis.zadd(keys.approvalsPending(), now + 60_000, 'inflightTokenAAAAAAAAAAAAAAAAAAAA');
    await redis.set(keys.approvalIndex('inflightTokenAAAAAAAAAAAAAAAAAAAA'), 'idxrepC', 'EX', 60);
    await redis.zadd(keys.approvalsPending(), now - 2 * 3600_000, 'crashedTokenBBBBBBBBBBBBBBBBBBBBB');
    const listed = (await approvals.listPending()).map((a) => a.token);
    expect(listed).not.toContain('inflightTokenAAAAAAAAAAAAAAAAAAAA');
    expect(await redis.zscore(keys.approvalsPending(), 'inflightTokenAAAAAAAAAAAAAAAAAAAA')).not.toBeNull();
    expect(await redis.zscore(keys.approvalsPending(), 'crashedTokenBBBBBBBBBBBBBBBBBBBBB')).toBeNull();
  });

  it('an answer through Approvals takes the token out of the index at once', async () => {
    const a = await ask('idxrepD');
    expect(await approvals.answer(a.token, 'approve', null, 'op')).toBe('ok');
    expect(await redis.zscore(keys.approvalsPending(), a.token)).toBeNull();
    expect(await approvals.answer(a.token, 'approve', null, 'op')).toBe('answered');
  });
});
