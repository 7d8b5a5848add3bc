// Plain HTTP through the egress proxy (issue 21): an absolute-form request is
// judged, dialled and sent on its absolute-form target, whatever its Host
// header says; it reaches the upstream in origin-form with Host replaced.
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { exchange, fakePolicy, harness, httpServer, until, perTest, type Harness } from './helpers.ts';

const parts = perTest(httpServer);

/** A plain request through the proxy with Node's client: the proxy socket, the absolute URL as the path. */
function viaProxy(socketPath: string, url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = http.request({ socketPath, path: url, method: init.method ?? 'GET', headers: init.headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

describe('plain HTTP allowed', () => {
  it('forwards an absolute-form GET in origin-form with Host set to the target, and reports its usage', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide, names: { 'upstream.test': ['127.0.0.1'] } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await viaProxy(parts.h.path('s1'), `http://upstream.test:${parts.up.port}/a/b?c=1`, { headers: { 'x-keep': 'yes', 'proxy-authorization': 'Basic eDp5' } });
    expect(r).toMatchObject({ status: 200, body: 'hello /a/b?c=1' });
    expect(parts.up.seen[0]).toMatchObject({ url: '/a/b?c=1', headers: { host: `upstream.test:${parts.up.port}`, 'x-keep': 'yes' } });
    expect(parts.up.seen[0]!.headers['proxy-authorization']).toBeUndefined();
    expect(parts.h.dialer.calls).toEqual([['127.0.0.1', parts.up.port]]);
    await until(() => policy.finished.length === 1);
    const { usage } = policy.finished[0]!;
    expect(usage.address).toBe('127.0.0.1');
    expect(usage.bytes_out).toBeGreaterThan(40);
    expect(usage.bytes_in).toBeGreaterThan('hello /a/b?c=1'.length);
    expect(usage.error).toBeUndefined();
  });

  it('a Host header naming another host is ignored: judged, dialled and sent on the absolute-form target', async () => {
    const policy = fakePolicy((t) => t.host === '127.0.0.1');
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await viaProxy(parts.h.path('s1'), `http://127.0.0.1:${parts.up.port}/x`, { headers: { host: 'evil.example' } });
    expect(r.status).toBe(200);
    expect(policy.decided).toEqual([{ host: '127.0.0.1', port: parts.up.port }]);
    expect(parts.up.seen[0]!.headers.host).toBe(`127.0.0.1:${parts.up.port}`);
  });

  it('and the other way: an allowed Host header does not carry a forbidden absolute-form target', async () => {
    const policy = fakePolicy((t) => t.host === 'good.example');
    parts.h = harness({ decide: policy.decide, names: { 'good.example': ['127.0.0.1'] } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await viaProxy(parts.h.path('s1'), `http://127.0.0.1:${parts.up.port}/x`, { headers: { host: 'good.example' } });
    expect(r.status).toBe(403);
    expect(policy.decided).toEqual([{ host: '127.0.0.1', port: parts.up.port }]);
    expect(parts.h.dialer.calls).toEqual([]);
    expect(parts.up.seen).toEqual([]);
  });

  it('forwards a request body and the upstream status', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const body = 'x'.repeat(50_000);
    const r = await viaProxy(parts.h.path('s1'), `http://127.0.0.1:${parts.up.port}/post`, { method: 'POST', body, headers: { 'content-type': 'text/plain' } });
    expect(r.status).toBe(200);
    expect(parts.up.seen[0]).toMatchObject({ method: 'POST', body });
    await until(() => policy.finished.length === 1);
    expect(policy.finished[0]!.usage.bytes_out).toBeGreaterThan(50_000);
  });

  it('decides each request of a kept-alive client connection on its own target', async () => {
    const policy = fakePolicy((t) => t.port === parts.up.port);
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const first = `GET http://127.0.0.1:${parts.up.port}/one HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
    const second = `GET http://127.0.0.1:1/two HTTP/1.1\r\nHost: 127.0.0.1:${parts.up.port}\r\nConnection: close\r\n\r\n`;
    const r = await exchange(parts.h.path('s1'), first + second, true);
    expect(r.status).toBe(200);
    expect(r.body).toContain('hello /one');
    expect(r.body).toMatch(/HTTP\/1\.1 403 Forbidden/);
    expect(policy.decided).toEqual([{ host: '127.0.0.1', port: parts.up.port }, { host: '127.0.0.1', port: 1 }]);
    expect(parts.h.dialer.calls).toEqual([['127.0.0.1', parts.up.port]]);
  });
});

describe('plain HTTP refused', () => {
  it('by policy: 403 with Connection: close and the rule in the body', async () => {
    const policy = fakePolicy(() => false);
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await viaProxy(parts.h.path('s1'), `http://127.0.0.1:${parts.up.port}/x`);
    expect(r.status).toBe(403);
    expect(r.headers.connection).toBe('close');
    expect(r.body).toContain('rule "no-evil"');
    expect(parts.up.seen).toEqual([]);
  });

  it('an origin-form request is 400 (no absolute target to judge), without a decision', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await viaProxy(parts.h.path('s1'), '/x', { headers: { host: `127.0.0.1:${parts.up.port}` } });
    expect(r.status).toBe(400);
    expect(r.body).toContain('absolute URL');
    expect(policy.decided).toEqual([]);
  });

  it('an https:// absolute-form target is 400 (TLS goes through CONNECT)', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await viaProxy(parts.h.path('s1'), `https://127.0.0.1:${parts.up.port}/x`);
    expect(r.status).toBe(400);
    expect(r.body).toContain('CONNECT');
    expect(policy.decided).toEqual([]);
  });

  it('a rebinding name on the plain path is refused the same way', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide, named: [], names: { 'meta.example': ['169.254.169.254'] } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await viaProxy(parts.h.path('s1'), 'http://meta.example/latest/meta-data/');
    expect(r.status).toBe(403);
    expect(r.body).toContain('169.254.169.254');
    expect(parts.h.dialer.calls).toEqual([]);
  });

  it('a protocol upgrade on the plain path is 501 (use CONNECT), without a decision', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await exchange(parts.h.path('s1'), `GET http://127.0.0.1:${parts.up.port}/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`, true);
    expect(r.status).toBe(501);
    expect(r.body).toContain('use CONNECT');
    expect(policy.decided).toEqual([]);
  });

  it('an upstream that never answers is 504 after the idle timeout, reported as idle_timeout', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide, limits: { idleTimeoutMs: 300 } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const t0 = Date.now();
    const r = await viaProxy(parts.h.path('s1'), `http://127.0.0.1:${parts.up.port}/hang`);
    expect(r.status).toBe(504);
    expect(Date.now() - t0).toBeLessThan(3000);
    await until(() => policy.finished.length === 1);
    expect(policy.finished[0]!.usage.error).toBe('idle_timeout');
  });
});
