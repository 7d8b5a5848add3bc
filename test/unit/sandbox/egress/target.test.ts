// How the egress proxy reads a target (issue 21): one reading (the WHATWG URL
// parser's) is judged, resolved, dialled and sent as Host.
import { describe, expect, it } from 'vitest';
import { clientResponseHeaders, upstreamRequestHeaders } from '../../../../services/sandbox/egress/headers.ts';
import { absoluteTarget, authorityOf, connectTarget } from '../../../../services/sandbox/egress/target.ts';

const ok = (r: ReturnType<typeof connectTarget>) => (r.ok ? { ...r.target } : r.message);

describe('CONNECT authority', () => {
  it.each([
    ['example.com:443', { host: 'example.com', port: 443 }],
    ['Example.COM.:443', { host: 'example.com', port: 443 }],
    ['example.com:80', { host: 'example.com', port: 80 }],
    ['[::1]:8080', { host: '::1', port: 8080 }],
    ['[0:0:0:0:0:0:0:1]:80', { host: '::1', port: 80 }],
    ['0x7f.1:22', { host: '127.0.0.1', port: 22 }],
    ['2130706433:22', { host: '127.0.0.1', port: 22 }],
    ['127.1:22', { host: '127.0.0.1', port: 22 }],
  ])('%s → %o', (authority, want) => {
    expect(ok(connectTarget(authority))).toEqual(want);
  });

  it.each(['example.com', 'example.com:', 'user@example.com:443', 'example.com:443/x', 'example.com:0', 'example.com:65536', ':443', 'exa mple.com:443', '[::1:443', 'a\\b:443'])(
    'refuses %s',
    (authority) => {
      expect(connectTarget(authority).ok).toBe(false);
    },
  );
});

describe('absolute-form target', () => {
  it('takes host, port (80 by default) and the origin-form path', () => {
    expect(absoluteTarget('http://Example.com/a/b?c=d#frag')).toEqual({ ok: true, target: { host: 'example.com', port: 80 }, path: '/a/b?c=d' });
    expect(absoluteTarget('http://[::1]:8080')).toEqual({ ok: true, target: { host: '::1', port: 8080 }, path: '/' });
  });

  it('the host the parser sees is the one judged, also in tricky spellings', () => {
    const t = (u: string) => { const r = absoluteTarget(u); return r.ok ? r.target.host : r.message; };
    expect(t('http://good.example\\@evil.example/')).toBe('good.example');
    expect(t('http://0177.0.0.1/')).toBe('127.0.0.1');
    expect(t('http:evil.example/x')).toBe('evil.example');
  });

  it('refuses origin-form, other schemes and user information', () => {
    expect(absoluteTarget('/path')).toMatchObject({ ok: false, message: expect.stringContaining('absolute URL') });
    expect(absoluteTarget('*')).toMatchObject({ ok: false });
    expect(absoluteTarget('https://example.com/')).toMatchObject({ ok: false, message: expect.stringContaining('CONNECT') });
    expect(absoluteTarget('ftp://example.com/')).toMatchObject({ ok: false });
    expect(absoluteTarget('http://user:pw@example.com/')).toMatchObject({ ok: false, message: expect.stringContaining('user information') });
    expect(absoluteTarget('not a url')).toMatchObject({ ok: false });
  });

  it('authorityOf brackets IPv6 and may leave out port 80', () => {
    expect(authorityOf({ host: '::1', port: 80 })).toBe('[::1]:80');
    expect(authorityOf({ host: '::1', port: 80 }, true)).toBe('[::1]');
    expect(authorityOf({ host: 'a.example', port: 8080 }, true)).toBe('a.example:8080');
  });
});

describe('headers', () => {
  it('the upstream gets Host = the target, no hop-by-hop or Connection-named fields, and Connection: close', () => {
    const raw = ['Host', 'evil.example', 'X-A', '1', 'Connection', 'keep-alive, X-Secret', 'X-Secret', 's', 'Proxy-Authorization', 'Basic x',
      'Transfer-Encoding', 'chunked', 'Expect', '100-continue', 'Content-Length', '3', 'Upgrade', 'websocket', 'TE', 'trailers'];
    expect(upstreamRequestHeaders(raw, { host: 'good.example', port: 8080 })).toEqual(['Host', 'good.example:8080', 'X-A', '1', 'Content-Length', '3', 'Connection', 'close']);
  });

  it('the client gets the response fields without hop-by-hop ones', () => {
    expect(clientResponseHeaders(['Content-Type', 'text/plain', 'Keep-Alive', 'timeout=5', 'Transfer-Encoding', 'chunked', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2']))
      .toEqual(['Content-Type', 'text/plain', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2']);
  });
});
