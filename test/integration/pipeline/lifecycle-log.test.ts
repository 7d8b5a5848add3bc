import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, log, setLogger } from '../../../services/log/index.ts';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, testConfig, testPrefix } from './helpers.ts';

// A command that fails leaves one log line that finds it again: job, session, command.
const prefix = testPrefix('lifelog');
const lines: Record<string, unknown>[] = [];
const previous = log();
let rt: Runtime;

beforeAll(async () => {
  const stream = new PassThrough();
  let buf = '';
  stream.on('data', (chunk: Buffer) => {
    buf += chunk.toString('utf8');
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      lines.push(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
      buf = buf.slice(nl + 1);
    }
  });
  setLogger(createLogger({ destination: stream, pretty: false, level: 'info' }));
  rt = await createRuntime(testConfig(prefix), { sandboxes: new FakeSandboxes() });
});
afterAll(async () => {
  setLogger(previous);
  await rt?.close();
  await cleanupPrefix(prefix);
});

describe('lifecycle logging', () => {
  it('a failed command logs its job_id, session_id and command_id; a succeeded one logs nothing', async () => {
    const sid = (await rt.pipeline.createSession({ owner: null, jobId: 'job_log_1' })).session_id;
    const turn = await rt.pipeline.nextTurn(sid);
    const ok = await rt.pipeline.enqueue(sid, turn, { id: 'fine', tool: 'bash', cmd: 'true', need_result: false }, 'reasoning');
    const bad = await rt.pipeline.enqueue(sid, turn, { id: 'boom', tool: 'read', path: 'missing.txt', need_result: true }, 'reasoning');
    const after = await rt.pipeline.enqueue(sid, turn, { id: 'later', tool: 'bash', cmd: 'true', need_result: false }, 'reasoning');
    const records = await rt.pipeline.awaitAll(sid, [ok.index, bad.index, after.index]);
    expect(records.map((r) => r.status)).toEqual(['succeeded', 'failed', 'skipped']);
    await expect.poll(() => lines.filter((l) => l.session_id === sid).length).toBeGreaterThan(0);
    const mine = lines.filter((l) => l.session_id === sid);
    expect(mine).toEqual([expect.objectContaining({
      level: 30, job_id: 'job_log_1', session_id: sid, command_id: 'boom', status: 'failed', error_code: 'not_found', msg: 'command failed',
    })]);
  });

  it('a command refused at enqueue logs its ids too', async () => {
    const sid = (await rt.pipeline.createSession({ owner: null, jobId: 'job_log_2' })).session_id;
    const h = await rt.pipeline.enqueue(sid, await rt.pipeline.nextTurn(sid), { id: 'net', tool: 'bash', cmd: 'curl http://x', need_result: false }, 'text');
    expect(h.status).toBe('forbidden');
    expect(lines.filter((l) => l.session_id === sid)).toEqual([expect.objectContaining({
      job_id: 'job_log_2', command_id: 'net', status: 'forbidden', error_code: 'forbidden', msg: 'command forbidden',
    })]);
  });

  it('a job the worker cannot process is logged by the pool, with its session, not dropped', async () => {
    const sid = (await rt.pipeline.createSession({ owner: null })).session_id;
    // A record hash without its base: reading it throws, so the job fails inside BullMQ.
    await rt.redis.hset(rt.keys.record(sid, 1), 'status', 'queued');
    await rt.redis.rpush(rt.keys.runList(sid), '1');
    await rt.pipeline.queues.startRun(sid, 1);
    await rt.pool!.ensure(sid);
    await expect.poll(() => lines.filter((l) => l.session_id === sid).map((l) => l.msg), { timeout: 15_000 })
      .toEqual(['a command failed in its run', 'could not close the record of a failed command', 'a run job failed']);
    const [failed] = lines.filter((l) => l.session_id === sid);
    expect(failed).toMatchObject({ level: 50, index: 1, err: { message: 'ledger record 1 is incomplete' } });
  });
});
