// A session's DELETE gives every key of it the retention TTL (retention.ts);
// a DELETE repeated after that finished must neither redo nor undo anything.
// Before, a repeated DELETE whose sandbox removal failed took `deleted_at`
// back while the TTL stayed: a live session whose meta expired under it.
// And a key written while the meta has a TTL gets that TTL (createRecord's
// followTtl), so nothing of a session outlives its retention.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, testConfig, testPrefix } from './helpers.ts';

const prefix = testPrefix('delete-again');
const fake = new FakeSandboxes();
let rt: Runtime;

beforeAll(async () => {
  rt = await createRuntime(testConfig(prefix, { THINKFLOW_RETENTION_S: '3600' }), { sandboxes: fake });
});
afterAll(async () => {
  await rt?.close();
  await cleanupPrefix(prefix);
});

const session = async () => (await rt.pipeline.createSession({ owner: null, approval: 'on-request' })).session_id;

describe('a DELETE repeated after one that finished', () => {
  it('answers at once, leaves the session deleted even when its sandbox could not be removed now, and takes no command', async () => {
    const sid = await session();
    await rt.pipeline.deleteSession(sid);
    const meta = rt.keys.sessionMeta(sid);
    const deletedAt = await rt.redis.hget(meta, 'deleted_at');
    expect(await rt.redis.pttl(meta)).toBeGreaterThan(0);
    const removed = fake.removed.length;
    const remove = fake.remove;
    fake.remove = async () => { throw new Error('docker engine unreachable'); };
    try {
      await rt.pipeline.deleteSession(sid); // no cleanup_failed: there is nothing left to clean
    } finally {
      fake.remove = remove;
    }
    expect(fake.removed.length).toBe(removed);
    expect(await rt.redis.hget(meta, 'deleted_at')).toBe(deletedAt);
    const turn = await rt.pipeline.nextTurn(sid).catch(() => 1);
    await expect(rt.pipeline.enqueue(sid, turn, { id: '1', tool: 'bash', cmd: 'echo hi', need_result: false }, 'text'))
      .rejects.toMatchObject({ code: 'session_deleted' });
  });

  it('a session deleted as soon as it is made: its queue\'s settings (set beside its creation) take the TTL too', async () => {
    // The setting is slow to land (a loaded Redis): the deletion's TTLs must not go out before it.
    const queues = rt.pipeline.queues;
    const queueOf = queues.queue.bind(queues);
    const slowed = new WeakSet<object>();
    queues.queue = (sid: string) => {
      const q = queueOf(sid);
      if (!slowed.has(q)) {
        slowed.add(q);
        const set = q.setGlobalConcurrency.bind(q);
        q.setGlobalConcurrency = async (n: number) => { await new Promise((r) => setTimeout(r, 150)); return set(n); };
      }
      return q;
    };
    try {
      const sid = await session();
      const meta = queueOf(sid).keys.meta!;
      // Only the setting is still on its way (BullMQ's own first write of the key has landed: taken away, as if not yet).
      await new Promise((r) => setTimeout(r, 30));
      await rt.redis.del(meta);
      await rt.pipeline.deleteSession(sid);
      await new Promise((r) => setTimeout(r, 250)); // the setting has landed by now
      expect(await rt.redis.hget(meta, 'concurrency')).toBe('1');
      expect(await rt.redis.pttl(meta)).toBeGreaterThan(0); // expiring with the session, not kept for good
    } finally {
      queues.queue = queueOf;
    }
  });

  it('a record written while the meta has a TTL (a DELETE under way elsewhere) gets that TTL', async () => {
    const sid = await session();
    await rt.redis.pexpire(rt.keys.sessionMeta(sid), 3_600_000); // as retention.expire leaves it, before deleted_at is seen
    const turn = await rt.pipeline.nextTurn(sid);
    const h = await rt.pipeline.enqueue(sid, turn, { id: '1', tool: 'bash', cmd: 'echo hi', need_result: false }, 'text');
    expect((await rt.pipeline.awaitResult(h)).status).toBe('succeeded');
    expect(await rt.redis.pttl(rt.keys.record(sid, h.index))).toBeGreaterThan(0);
    expect(await rt.redis.pttl(rt.keys.runList(sid))).not.toBe(-1); // gone (empty) or expiring
  });
});
