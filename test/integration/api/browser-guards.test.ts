import { request } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ServiceHandle } from '../../../services/main/index.ts';
import { servicesForSuite } from '../suite-service.ts';

// Issue 18, dev mode safe on a laptop, against the real service (real HTTP,
// Redis): a foreign Host (DNS rebinding) is 421, a foreign Origin is 403 and
// creates nothing, curl-like requests work as before; keyed mode answers no
// other origin unless THINKFLOW_CORS_ORIGINS lists it. The browser itself:
// test/integration/dashboard/cross-origin.e2e.test.ts.

const startService = servicesForSuite('guards');
const KEY = 'guards-admin-key-0001';
let dev: ServiceHandle;
let keyed: ServiceHandle;

beforeAll(async () => {
  dev = await startService();
  keyed = await startService({ THINKFLOW_API_KEYS: `${KEY}:admin`, THINKFLOW_CORS_ORIGINS: 'http://ops.example:3000' });
}, 60_000);

/** One request with exactly these headers (fetch would not send a foreign Host). */
function send(svc: ServiceHandle, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; json: any }> {
  const url = new URL(path, svc.url!);
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d) => { text += d; }).on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text ? JSON.parse(text) : null });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const sessionCount = (svc: ServiceHandle) => svc.runtime.redis.zcard(svc.runtime.keys.sessions());

describe('dev mode', () => {
  it('Host evil.example (a DNS-rebinding page) is 421 host_not_allowed, on reads and writes', async () => {
    const host = `evil.example:${new URL(dev.url!).port}`;
    const before = await sessionCount(dev);
    const read = await send(dev, 'GET', '/v1/jobs', { host });
    expect(read.status).toBe(421);
    expect(read.json.error).toMatchObject({ code: 'host_not_allowed', details: { host } });
    expect((await send(dev, 'POST', '/v1/sessions', { host }, '{}')).status).toBe(421);
    expect(await sessionCount(dev)).toBe(before);
  });

  it('Origin http://evil.example is 403 cross_origin_refused and creates nothing', async () => {
    const before = await sessionCount(dev);
    const host = new URL(dev.url!).host;
    for (const headers of [{ origin: 'http://evil.example' }, { origin: 'http://evil.example', 'x-thinkflow-client': 'dashboard' }, { 'sec-fetch-site': 'cross-site' }] as Record<string, string>[]) {
      const r = await send(dev, 'POST', '/v1/sessions', { host, ...headers }, '{}');
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect(r.json.error.code).toBe('cross_origin_refused');
    }
    const job = await send(dev, 'POST', '/v1/jobs', { host, origin: 'http://evil.example' }, JSON.stringify({ task: 'x' }));
    expect(job.json.error.code).toBe('cross_origin_refused');
    expect(await sessionCount(dev)).toBe(before);
  });

  it('a same-origin browser write needs X-ThinkFlow-Client', async () => {
    const host = new URL(dev.url!).host;
    const own = { host, origin: dev.url!, 'sec-fetch-site': 'same-origin' };
    expect((await send(dev, 'POST', '/v1/sessions', own, '{}')).json.error.code).toBe('client_header_required');
    expect((await send(dev, 'POST', '/v1/sessions', { ...own, 'x-thinkflow-client': 'dashboard' }, '{}')).status).toBe(201);
  });

  it('curl-like requests (no Origin, no Sec-Fetch-*) and node fetch (the CLI) work unchanged, on every loopback name', async () => {
    const port = new URL(dev.url!).port;
    const before = await sessionCount(dev);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
      const r = await send(dev, 'POST', '/v1/sessions', { host, 'user-agent': 'curl/8.5.0', accept: '*/*' }, '{}');
      expect(r.status, host).toBe(201);
    }
    const cli = await fetch(`${dev.url}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(cli.status).toBe(201);
    expect(await sessionCount(dev)).toBe(before + 4);
  });
});

describe('keyed mode', () => {
  const auth = { authorization: `Bearer ${KEY}` };
  it('another origin is refused even with a key; no answer carries CORS headers for it', async () => {
    const r = await send(keyed, 'GET', '/v1/jobs', { ...auth, origin: 'http://evil.example' });
    expect(r.status).toBe(403);
    expect(r.json.error.code).toBe('cross_origin_refused');
    expect(r.headers['access-control-allow-origin']).toBeUndefined();
    const pre = await send(keyed, 'OPTIONS', '/v1/jobs', { origin: 'http://evil.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' });
    expect(pre.status).toBe(403);
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('a THINKFLOW_CORS_ORIGINS origin gets its preflight and CORS answers; the Host is not checked', async () => {
    const origin = 'http://ops.example:3000';
    const pre = await send(keyed, 'OPTIONS', '/v1/sessions', { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' });
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe(origin);
    const created = await send(keyed, 'POST', '/v1/sessions', { ...auth, origin, host: 'api.example' }, '{}');
    expect(created.status).toBe(201);
    expect(created.headers['access-control-allow-origin']).toBe(origin);
    expect((await send(keyed, 'GET', '/v1/jobs', { ...auth })).status).toBe(200);
  });
});
