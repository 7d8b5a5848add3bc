import { describe, expect, it } from 'vitest';
import { createApp, type AppDeps } from '../../../services/api/app.ts';

// API.md: `POST /v1/sessions` takes `{project?, approval?, files?}`, and an
// empty body has always meant `{}` (a pipeline's bare `curl -X POST`),
// whatever content type it was sent with. No Redis or Docker: the pipeline
// here only records what it was asked to create.

function appRecordingSessions() {
  const created: unknown[] = [];
  const pipeline = {
    takeSessionId: async () => ({ id: `ses_${created.length + 1}`, undo: async () => {} }),
    createSession: async (opts: unknown) => {
      created.push(opts);
      return { session_id: `ses_${created.length}` };
    },
  };
  const app = createApp({
    apiKeys: null, apiKeyNames: new Map(),
    limits: { maxJsonBytes: 1024, maxCommandsBytes: 1024, maxStreamsPerKey: 1 },
    metrics: { httpRequests: { inc: () => {} }, render: async () => '', contentType: 'text/plain' },
    pipeline, gate: {}, firehose: {}, redis: {}, keys: {},
  } as unknown as AppDeps);
  return { app, created };
}

const loopback = { incoming: { socket: { remoteAddress: '127.0.0.1' } } };

describe('POST /v1/sessions with an empty body', () => {
  it.each([
    ['application/json', ''],
    ['no content type', ''],
    ['text/plain', ''],
    ['application/json', '  \n'],
  ])('%s, body %j: 201 with the defaults (approval never, no project)', async (type, body) => {
    const { app, created } = appRecordingSessions();
    const headers: Record<string, string> = type === 'no content type' ? {} : { 'content-type': type };
    const res = await app.request('/v1/sessions', { method: 'POST', headers, body: new TextEncoder().encode(body) }, loopback);
    expect([res.status, await res.json()]).toEqual([201, { session_id: 'ses_1' }]);
    expect(created).toEqual([expect.objectContaining({ project: null, approval: 'never', policy: null })]);
  });

  it('a body that is not empty is still read and checked', async () => {
    const { app, created } = appRecordingSessions();
    const res = await app.request('/v1/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: new TextEncoder().encode('{"approval":"on-request"}') }, loopback);
    expect(res.status).toBe(201);
    expect(created).toEqual([expect.objectContaining({ approval: 'on-request' })]);
  });
});
