import { createApp, type AppDeps } from '../../../services/api/app.ts';

// The app as the document sees it: every route, with dependencies that fail
// loudly if a request ever reaches them (building the app must not touch them).

const unused = (name: string) => new Proxy({}, { get: (_t, prop) => { throw new Error(`${name}.${String(prop)} used while only building the app`); } });

export function docApp() {
  return createApp({
    apiKeys: null, apiKeyNames: new Map(),
    limits: { maxJsonBytes: 1024, maxCommandsBytes: 1024, maxStreamsPerKey: 1 },
    metrics: { httpRequests: { inc: () => {} }, render: async () => '', contentType: 'text/plain' },
    pipeline: unused('pipeline'), gate: unused('gate'), firehose: unused('firehose'), redis: unused('redis'), keys: unused('keys'), jobs: unused('jobs'),
  } as unknown as AppDeps);
}

export async function servedDocument(): Promise<{ paths: Record<string, Record<string, { operationId: string; parameters?: { name: string; in: string }[] }>> }> {
  const res = await docApp().request('/openapi.json');
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  return res.json();
}
