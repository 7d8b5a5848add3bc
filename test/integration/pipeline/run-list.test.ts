import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { runCommandsTurn } from '../../../services/pipeline/api-turn.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, testConfig, testPrefix } from './helpers.ts';

// A session's BullMQ job is a run over its run list (queues.ts): one job per
// busy period, not per command. Real Redis and BullMQ, in-memory executor.
const prefix = testPrefix('runlist');
const fake = new FakeSandboxes();
let rt: Runtime;

beforeAll(async () => {
  rt = await createRuntime(testConfig(prefix), { sandboxes: fake });
});
afterAll(async () => {
  await rt?.close();
  await cleanupPrefix(prefix);
});

const session = async () => (await rt.pipeline.createSession({ owner: null })).session_id;
const appends = (from: number, n: number, cmd = (i: number) => `<tf-append id="${i}" path="log.txt">${i},</tf-append>`) =>
  Array.from({ length: n }, (_, i) => cmd(from + i)).join('\n');

describe('run jobs', () => {
  it('starts a run only when the run list was empty: 40 commands while a slow one runs take no job of their own', async () => {
    const sid = await session();
    const starts = vi.spyOn(rt.pipeline.queues, 'startRun');
    try {
      // The first command holds the run for 1 s, so the 40 after it are enqueued while it is active.
      const body = `<tf-bash id="0" cmd="sleep 1" />\n${appends(1, 40)}`;
      const out = await runCommandsTurn(rt.pipeline, sid, body);
      expect(out.results.map((r) => r.status)).toEqual(Array(41).fill('succeeded'));
      expect(starts.mock.calls.filter(([s]) => s === sid)).toHaveLength(1);
      expect(fake.files.get(sid)!.get('log.txt')).toBe(Array.from({ length: 40 }, (_, i) => `${i + 1},`).join(''));
      // the run drops a command from its list right after the command is final
      await expect.poll(() => rt.pipeline.queues.pendingRuns(sid)).toBe(0);
      // The next turn comes while the run lingers on the list (THINKFLOW_RUN_LINGER_MS): that run takes it.
      await runCommandsTurn(rt.pipeline, sid, appends(41, 3));
      expect(starts.mock.calls.filter(([s]) => s === sid)).toHaveLength(1);
      // Once the linger is over, the list is empty again: the next turn starts one more run.
      await expect.poll(() => rt.pipeline.queues.queue(sid).getActiveCount(), { timeout: 5000 }).toBe(0);
      await runCommandsTurn(rt.pipeline, sid, appends(44, 3));
      expect(starts.mock.calls.filter(([s]) => s === sid)).toHaveLength(2);
    } finally {
      starts.mockRestore();
    }
  });

  it('a paused queue stops the run before its next command; resume goes on in order', async () => {
    const sid = await session();
    const turn = runCommandsTurn(rt.pipeline, sid, `<tf-bash id="0" cmd="sleep 1" />\n${appends(1, 5)}`);
    await expect.poll(() => fake.log.some((l) => l.sid === sid && l.id === '0'), { timeout: 10_000 }).toBe(true);
    await rt.pipeline.queues.pause(sid);
    // The running command finishes; the five behind it wait.
    await expect.poll(async () => (await rt.pipeline.entries(sid))[0]?.status, { timeout: 10_000 }).toBe('succeeded');
    await new Promise((r) => setTimeout(r, 500));
    expect(fake.log.filter((l) => l.sid === sid).map((l) => l.id)).toEqual(['0']);
    expect((await rt.pipeline.entries(sid)).slice(1).map((e) => e.status)).toEqual(Array(5).fill('queued'));
    expect(await rt.pipeline.queues.pendingRuns(sid)).toBe(5);
    await rt.pipeline.queues.resume(sid);
    const out = await turn;
    expect(out.results.map((r) => r.status)).toEqual(Array(6).fill('succeeded'));
    expect(fake.log.filter((l) => l.sid === sid).map((l) => l.id)).toEqual(['0', '1', '2', '3', '4', '5']);
  });

  it('a command whose processing throws is closed and the run goes on with the next turn', async () => {
    const sid = await session();
    const sessions = rt.pipeline.workerSide().sessions;
    const original = sessions.withRunningJob.bind(sessions);
    let calls = 0;
    // Deciding the second command throws once, outside the executor's own error handling.
    const load = vi.spyOn(sessions, 'withRunningJob').mockImplementation(async (s: string, job: string | null) => {
      if (s === sid && ++calls === 2) throw new Error('simulated read failure');
      return original(s, job);
    });
    try {
      const out = await runCommandsTurn(rt.pipeline, sid, appends(1, 3));
      expect(out.results.map((r) => [r.status, r.code])).toEqual([['succeeded', undefined], ['failed', 'queue_error'], ['skipped', 'skipped']]);
      // the run drops a command from its list right after the command is final
      await expect.poll(() => rt.pipeline.queues.pendingRuns(sid)).toBe(0);
    } finally {
      load.mockRestore();
    }
    const next = await runCommandsTurn(rt.pipeline, sid, appends(4, 2));
    expect(next.results.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
  });
});
