// The HTTP answers of sandbox calls (pipeline/sandbox-calls) in an API-only
// process: 504 sandbox_timeout, 502 sandbox_answer_too_large, 503
// sandbox_unavailable, each with a message that says what happened. The
// worker is a `role=worker` service in this process whose sandboxes are the
// in-memory ones of call-sandboxes.ts (a read that never answers, a file over
// the answer cap); real Redis. Real Docker: api-without-docker.test.ts.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { CallSandboxes, patternSha } from '../pipeline/call-sandboxes.ts';
import { cleanupPrefix, client, newSession, testConfig, testPrefix } from '../pipeline/helpers.ts';

const prefix = testPrefix('callerr');
const box = new CallSandboxes();
let api: ServiceHandle;
let worker: ServiceHandle;

beforeAll(async () => {
  box.bigFile = Buffer.alloc(2 * 1024 * 1024, 7);
  box.archiveBytes = 3 * 1024 * 1024;
  worker = await startService(testConfig(prefix, { THINKFLOW_ROLE: 'worker' }), { sandboxes: box });
  api = await startService(testConfig(prefix, {
    PORT: '0', THINKFLOW_ROLE: 'api', THINKFLOW_SANDBOX_CALL_PICKUP_MS: '400', THINKFLOW_SANDBOX_CALL_ANSWER_MS: '800', THINKFLOW_SANDBOX_CALL_MAX_ANSWER_MB: '1',
  }));
});
afterAll(async () => {
  await api?.close();
  await worker?.close();
  await cleanupPrefix(prefix);
});

type ErrorBody = { error: { code: string; message: string; details: Record<string, unknown> } };

describe('an API-only process answers what went wrong with the worker', () => {
  let sid = '';

  it('serves through the worker when it answers (changes, the archive)', async () => {
    expect(api.runtime.calls).toBeNull();
    expect(worker.runtime.calls?.status).toBe('running');
    const c = client(api.url!);
    sid = await newSession(c);
    const changes = await c.get(`/v1/sessions/${sid}/changes`);
    expect(changes.status).toBe(200);
    expect(((await changes.json()) as { changes: unknown[] }).changes).toHaveLength(10);
    const tar = await c.get(`/v1/sessions/${sid}/workspace?format=tar`);
    expect(tar.status).toBe(200);
    expect(createHash('sha256').update(Buffer.from(await tar.arrayBuffer())).digest('hex')).toBe(patternSha(3 * 1024 * 1024));
  });

  it('504 sandbox_timeout when the worker took the read and did not answer in THINKFLOW_SANDBOX_CALL_ANSWER_MS', async () => {
    const t0 = Date.now();
    const res = await client(api.url!).get(`/v1/sessions/${sid}/files/hang`);
    expect(res.status).toBe(504);
    const body = (await res.json()) as ErrorBody;
    expect(body.error.code).toBe('sandbox_timeout');
    expect(body.error.message).toMatch(/took the readPath call of session .* but did not answer within 800 ms/);
    expect(Date.now() - t0).toBeLessThan(4000);
  });

  it('502 sandbox_answer_too_large for a file over THINKFLOW_SANDBOX_CALL_MAX_ANSWER_MB', async () => {
    const res = await client(api.url!).get(`/v1/sessions/${sid}/files/big`);
    expect(res.status).toBe(502);
    const body = (await res.json()) as ErrorBody;
    expect(body.error).toMatchObject({ code: 'sandbox_answer_too_large', details: { limit: 1024 * 1024 } });
  });

  it('503 sandbox_unavailable once no worker runs, within THINKFLOW_SANDBOX_CALL_PICKUP_MS', async () => {
    await worker.close();
    const t0 = Date.now();
    const res = await client(api.url!).get(`/v1/sessions/${sid}/changes`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as ErrorBody).error.code).toBe('sandbox_unavailable');
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});
