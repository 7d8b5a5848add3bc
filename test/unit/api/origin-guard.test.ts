// The browser guards of issue 18 (services/api/middleware/origin.ts), request
// by request: Host names in dev mode, foreign origins in both modes, the
// dashboard's header on a browser's writes, CORS for configured origins only.
// The same guards against the real service: test/integration/api/browser-guards.test.ts.
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/config/index.ts';
import { toAppError } from '../../../services/api/errors.ts';
import { hostName, originGuard, sameOrigin, type OriginGuardOptions } from '../../../services/api/middleware/origin.ts';

function app(opts: Partial<OriginGuardOptions> = {}) {
  const a = new Hono();
  a.use('*', originGuard({ devMode: true, allowedHosts: [], corsOrigins: [], ...opts }));
  a.all('*', (c) => c.text('reached'));
  a.onError((err, c) => {
    const e = toAppError(err);
    if (!e) throw err;
    return c.json(e.toBody(), e.status);
  });
  return (method: string, headers: Record<string, string>) => a.request('/v1/sessions', { method, headers });
}

const code = async (res: Response) => (res.status < 400 ? res.status : `${res.status} ${(await res.json()).error.code}`);

describe('dev mode: Host', () => {
  const req = app();
  it.each(['localhost', 'localhost:8080', '127.0.0.1', '127.0.0.1:8080', '[::1]', '[::1]:8080', 'LOCALHOST:1'])('%s is answered', async (host) => {
    expect(await code(await req('GET', { host }))).toBe(200);
  });
  it.each(['evil.example', 'evil.example:8080', '127.0.0.1.evil.example', 'localhost.', '127.0.0.2:8080', '10.0.0.5', ' ', '127.0.0.1:80@evil.example', 'localhost:x'])('%j is 421 host_not_allowed', async (host) => {
    expect(await code(await req('GET', { host }))).toBe('421 host_not_allowed');
  });
  it('THINKFLOW_ALLOWED_HOSTS adds names (any port) or name:port', async () => {
    const r = app({ allowedHosts: ['devbox.lan', 'other.lan:9000'] });
    expect(await code(await r('GET', { host: 'devbox.lan:8080' }))).toBe(200);
    expect(await code(await r('GET', { host: 'other.lan:9000' }))).toBe(200);
    expect(await code(await r('GET', { host: 'other.lan:9001' }))).toBe('421 host_not_allowed');
  });
  it('keyed mode does not check the Host (the key is the guard)', async () => {
    expect(await code(await app({ devMode: false })('GET', { host: 'thinkflow.example.com' }))).toBe(200);
  });
});

describe('origins', () => {
  const host = '127.0.0.1:8080';
  it.each([true, false])('devMode=%s: another origin, a cross-site or same-site fetch is 403 cross_origin_refused', async (devMode) => {
    const req = app({ devMode });
    for (const headers of [
      { origin: 'http://evil.example' },
      { origin: 'http://127.0.0.1:9999' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' },
      { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' },
    ] as Record<string, string>[]) {
      for (const method of ['POST', 'GET', 'OPTIONS']) expect(await code(await req(method, { host, ...headers })), JSON.stringify([method, headers])).toBe('403 cross_origin_refused');
    }
  });
  it('a cross-site link (a top-level GET navigation) still opens a page', async () => {
    expect(await code(await app()('GET', { host, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' }))).toBe(200);
    expect(await code(await app()('POST', { host, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', origin: 'http://evil.example' }))).toBe('403 cross_origin_refused');
  });
  it('curl and the CLI (no Origin, no Sec-Fetch-Site; node fetch sends Sec-Fetch-Mode: cors) pass', async () => {
    for (const devMode of [true, false]) expect(await code(await app({ devMode })('POST', { host, 'sec-fetch-mode': 'cors' }))).toBe(200);
  });
});

describe("dev mode: a browser's writes need X-ThinkFlow-Client", () => {
  const host = 'localhost:8080';
  const own = { host, origin: 'http://localhost:8080', 'sec-fetch-site': 'same-origin' };
  it('same origin without the header: 403 client_header_required; with it, or a read: passes', async () => {
    const req = app();
    for (const method of ['POST', 'DELETE', 'PUT', 'PATCH']) expect(await code(await req(method, own))).toBe('403 client_header_required');
    expect(await code(await req('POST', { host, 'sec-fetch-site': 'same-origin' }))).toBe('403 client_header_required');
    expect(await code(await req('POST', { ...own, 'x-thinkflow-client': 'dashboard' }))).toBe(200);
    expect(await code(await req('GET', own))).toBe(200);
  });
  it('keyed mode needs no such header (a form cannot send the Authorization key)', async () => {
    expect(await code(await app({ devMode: false })('POST', own))).toBe(200);
  });
});

describe('THINKFLOW_CORS_ORIGINS', () => {
  const req = app({ devMode: false, corsOrigins: ['https://ops.example'] });
  const host = 'api.example';
  it('a listed origin gets CORS answers, a preflight 204; others none', async () => {
    const ok = await req('POST', { host, origin: 'https://ops.example' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://ops.example');
    expect(ok.headers.get('vary')).toMatch(/Origin/);
    const pre = await req('OPTIONS', { host, origin: 'https://ops.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    expect(pre.headers.get('access-control-allow-methods')).toMatch(/POST/);
    expect(await code(await req('OPTIONS', { host, origin: 'https://ops.example.evil', 'access-control-request-method': 'POST' }))).toBe('403 cross_origin_refused');
    const same = await req('GET', { host, origin: 'https://api.example' });
    expect(same.status).toBe(200);
    expect(same.headers.get('access-control-allow-origin')).toBeNull();
  });
  it('without the setting no answer carries CORS headers', async () => {
    const r = await app({ devMode: false })('GET', { host, origin: 'https://api.example' });
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('helpers and settings', () => {
  it('hostName and sameOrigin', () => {
    expect(hostName('[::1]:8080')).toBe('[::1]');
    expect(hostName('Localhost:80')).toBe('localhost');
    expect(hostName('a b')).toBeNull();
    expect(sameOrigin('http://localhost', 'localhost:80')).toBe(true);
    expect(sameOrigin('http://localhost:8080', 'localhost:8081')).toBe(false);
    expect(sameOrigin('http://localhost:8080/', 'localhost:8080')).toBe(true);
    expect(sameOrigin('null', 'localhost')).toBe(false);
  });
  it('defaults: no extra hosts, no CORS origins; a CORS origin must be exact', () => {
    expect(loadConfig({}).web).toEqual({ allowedHosts: [], corsOrigins: [] });
    expect(loadConfig({ THINKFLOW_ALLOWED_HOSTS: 'DevBox.lan, x.lan:9000', THINKFLOW_CORS_ORIGINS: 'https://ops.example,http://127.0.0.1:5173' }).web)
      .toEqual({ allowedHosts: ['devbox.lan', 'x.lan:9000'], corsOrigins: ['https://ops.example', 'http://127.0.0.1:5173'] });
    for (const bad of ['*', 'https://ops.example/', 'ops.example', 'https://ops.example/path', 'ftp://ops.example']) {
      expect(() => loadConfig({ THINKFLOW_CORS_ORIGINS: bad }), bad).toThrow(/THINKFLOW_CORS_ORIGINS/);
    }
  });
});
