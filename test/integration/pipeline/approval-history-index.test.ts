import { afterAll, describe, expect, it } from 'vitest';
import { MAX_ENTRIES } from '../../../services/pipeline/approval-history.ts';
import { Approvals } from '../../../services/pipeline/approvals.ts';
import { createKeys } from '../../../services/pipeline/keys.ts';
import { createRedis } from '../../../services/pipeline/redis.ts';
import { cleanupPrefix, REDIS_URL, testPrefix } from './helpers.ts';

// The history index of answered approvals (approval-history.ts): a global
// zset written by its own command after the answer's script, so a crash
// between leaves drift the readers repair; bounded in age and count. Runs on
// one Redis or the cluster (THINKFLOW_TEST_REDIS=cluster).

const prefix = testPrefix('apphidx');
const keys = createKeys(prefix);
const redis = createRedis(REDIS_URL, 'tft-apphidx');
const approvals = new Approvals(redis, keys);
const noRecords = { get: async () => null };
afterAll(async () => {
  await cleanupPrefix(prefix);
  redis.disconnect();
});

const evaluation = { decision: 'prompt' as const, matched_rules: [], reason: 'asks' };
const ask = (sid: string) => approvals.requestNetwork({
  sessionId: sid, jobId: null, recordId: 'r1', host: 'example.com', port: 443, target: 'example.com:443', evaluation, ttlS: 60, index: 1,
});
const decided = () => redis.zrange(keys.approvalsDecided(), 0, -1);

describe('approval history index', () => {
  it('an answer moves the token from the pending zset to the history, scored by its creation time', async () => {
    const a = await ask('apphidxA');
    expect(await approvals.answer(a.token, 'reject', 'no', 'op')).toBe('ok');
    expect(await redis.zscore(keys.approvalsPending(), a.token)).toBeNull();
    expect(Number(await redis.zscore(keys.approvalsDecided(), a.token))).toBe(Date.parse(a.created_at));
    expect((await approvals.history.list({ status: 'decided', limit: 10 }, noRecords)).map((x) => [x.token, x.status, x.reason])).toEqual([[a.token, 'reject', 'no']]);
  });

  it('a crash between the answer script and the move: the pending listing moves it', async () => {
    const a = await ask('apphidxB');
    // The answer script alone (what Approvals.answer runs before the move).
    await redis.answerApproval(keys.approval('apphidxB', a.token), keys.grants('apphidxB'), keys.record('apphidxB', 0), keys.sessionBytes('apphidxB'),
      'approve', '', 'op', Date.now(), new Date().toISOString(), a.token, keys.approvalChannel(), 'exact', '', '');
    expect(await decided()).not.toContain(a.token);
    expect((await approvals.listPending()).map((x) => x.token)).not.toContain(a.token);
    expect(await decided()).toContain(a.token);
    expect(await redis.zscore(keys.approvalsPending(), a.token)).toBeNull();
  });

  it('a read drops tokens whose approval is gone and entries past the age bound, and keeps its page whole', async () => {
    const gone = await ask('apphidxC');
    await approvals.answer(gone.token, 'reject', null, 'op');
    await redis.del(keys.approval('apphidxC', gone.token), keys.approvalIndex(gone.token));
    await redis.zadd(keys.approvalsDecided(), Date.now() - 8 * 24 * 3600_000, 'ancientTokenAAAAAAAAAAAAAAAAAAAAAAA');
    const listed = await approvals.history.list({ status: 'all', limit: 2 }, noRecords);
    expect(listed).toHaveLength(2);
    expect(listed.map((x) => x.token)).not.toContain(gone.token);
    const left = await decided();
    expect(left).not.toContain(gone.token);
    expect(left).not.toContain('ancientTokenAAAAAAAAAAAAAAAAAAAAAAA');
  });

  it(`keeps at most ${MAX_ENTRIES} entries, the newest`, async () => {
    const base = Date.now() - 3600_000;
    const many = Array.from({ length: MAX_ENTRIES + 5 }, (_, i) => ({ token: `bulk${String(i).padStart(6, '0')}`, created_at: new Date(base + i).toISOString() }));
    await approvals.history.move(many);
    expect(await redis.zcard(keys.approvalsDecided())).toBe(MAX_ENTRIES);
    expect(await redis.zscore(keys.approvalsDecided(), 'bulk000000')).toBeNull();
    expect(await redis.zscore(keys.approvalsDecided(), `bulk${String(MAX_ENTRIES + 4).padStart(6, '0')}`)).not.toBeNull();
  });
});
