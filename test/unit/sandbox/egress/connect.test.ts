// CONNECT through the egress proxy (issue 21): the decision is on the
// authority asked for, the name is resolved once, the address dialled is the
// one checked, and a refusal is a 403 whose body names the rule.
import { describe, expect, it } from 'vitest';
import { connectText, echoServer, exchange, fakePolicy, harness, readBytes, until, perTest, type Harness } from './helpers.ts';

const parts = perTest(echoServer);

describe('CONNECT allowed', () => {
  it('tunnels to the checked address and counts bytes both ways, reported once', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide, names: { 'upstream.test': ['127.0.0.1'] } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await exchange(parts.h.path('s1'), connectText(`upstream.test:${parts.up.port}`));
    expect(r.status).toBe(200);
    const payload = Buffer.alloc(100_000, 7);
    r.socket.write(payload);
    const back = await readBytes(r.socket, payload.length);
    expect(back.equals(payload)).toBe(true);
    r.socket.end();
    await until(() => policy.finished.length === 1, 5000, 'usage');
    expect(policy.decided).toEqual([{ host: 'upstream.test', port: parts.up.port }]);
    expect(parts.h.resolved).toEqual(['upstream.test']);
    expect(parts.h.dialer.calls).toEqual([['127.0.0.1', parts.up.port]]);
    const { usage } = policy.finished[0]!;
    expect(usage).toMatchObject({ bytes_out: 100_000, bytes_in: 100_000, address: '127.0.0.1' });
    expect(usage.error).toBeUndefined();
    expect(usage.duration_ms).toBeGreaterThanOrEqual(0);
    await until(() => parts.h!.proxy.activeConnections('s1') === 0, 2000, 'slot released');
    expect(policy.finished).toHaveLength(1);
  });

  it('sends bytes that arrived with the CONNECT head, and takes the first allowed address of several', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide, names: { 'multi.test': ['10.0.0.5', '127.0.0.1', '169.254.169.254'] } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await exchange(parts.h.path('s1'), `${connectText(`multi.test:${parts.up.port}`)}early`);
    expect(r.status).toBe(200);
    expect((await readBytes(r.socket, 5)).toString()).toBe('early');
    expect(parts.h.dialer.calls).toEqual([['127.0.0.1', parts.up.port]]);
    r.socket.destroy();
  });

  it('judges an IPv4 literal in another spelling as the address it is (0x7f.1 → 127.0.0.1) and never resolves it', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await exchange(parts.h.path('s1'), connectText(`0x7f.1:${parts.up.port}`));
    expect(r.status).toBe(200);
    expect(policy.decided).toEqual([{ host: '127.0.0.1', port: parts.up.port }]);
    expect(parts.h.resolved).toEqual([]);
    r.socket.destroy();
  });
});

describe('CONNECT refused', () => {
  it('by policy: 403, Connection: close, the body names the rule; nothing resolved or dialled, no usage', async () => {
    const policy = fakePolicy(() => false);
    parts.h = harness({ decide: policy.decide, names: { 'evil.example': ['127.0.0.1'] } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await exchange(parts.h.path('s1'), connectText('evil.example:443'), true);
    expect(r.status).toBe(403);
    expect(r.head).toMatch(/\r\nConnection: close/i);
    expect(r.body).toContain('rule "no-evil"');
    expect(parts.h.resolved).toEqual([]);
    expect(parts.h.dialer.calls).toEqual([]);
    expect(policy.finished).toEqual([]);
  });

  for (const [name, address] of [['rebind-private', '10.0.0.5'], ['rebind-metadata', '169.254.169.254'], ['rebind-v6', '::1'], ['rebind-loopback', '127.0.0.1']] as const) {
    it(`a name resolving to ${address} (DNS rebinding) is refused; the dialer is never asked`, async () => {
      const policy = fakePolicy();
      // 127.0.0.1 is not named here: the session's policy allowed the name, no global rule names the address.
      parts.h = harness({ decide: policy.decide, named: [], names: { [`${name}.example`]: [address] } });
      await parts.h.proxy.listen('s1', parts.h.path('s1'));
      const r = await exchange(parts.h.path('s1'), connectText(`${name}.example:443`), true);
      expect(r.status).toBe(403);
      expect(r.body).toContain('special-addresses');
      expect(r.body).toContain(address);
      expect(parts.h.resolved).toEqual([`${name}.example`]);
      expect(parts.h.dialer.calls).toEqual([]);
      await until(() => policy.finished.length === 1, 2000, 'usage');
      expect(policy.finished[0]!.usage).toMatchObject({ bytes_in: 0, bytes_out: 0, error: expect.stringContaining('address_refused') });
      expect(policy.finished[0]!.usage.address).toBeUndefined();
    });
  }

  it('every address refused → refused, with the first refusal named', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide, named: [], names: { 'both.example': ['10.0.0.5', '169.254.169.254'] } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await exchange(parts.h.path('s1'), connectText('both.example:80'), true);
    expect(r.status).toBe(403);
    expect(r.body).toContain('10.0.0.5');
    expect(parts.h.dialer.calls).toEqual([]);
  });

  for (const literal of ['127.0.0.2', '[::1]']) {
    it(`an IP literal no rule names (${literal}) is refused by the address check, not resolved, not dialled`, async () => {
      const policy = fakePolicy();
      parts.h = harness({ decide: policy.decide });
      await parts.h.proxy.listen('s1', parts.h.path('s1'));
      const r = await exchange(parts.h.path('s1'), connectText(`${literal}:${parts.up.port}`), true);
      expect(r.status).toBe(403);
      expect(r.body).toContain(literal.replace(/[[\]]/g, ''));
      expect(policy.decided).toEqual([{ host: literal.replace(/[[\]]/g, ''), port: parts.up.port }]);
      expect(parts.h.resolved).toEqual([]);
      expect(parts.h.dialer.calls).toEqual([]);
    });
  }

  it('an IPv4-mapped IPv6 literal reaches the address check in the parser\'s spelling (::ffff:7f00:1), and is refused', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await exchange(parts.h.path('s1'), connectText(`[::ffff:127.0.0.1]:${parts.up.port}`), true);
    expect(r.status).toBe(403);
    expect(policy.decided).toEqual([{ host: '::ffff:7f00:1', port: parts.up.port }]);
    expect(parts.h.dialer.calls).toEqual([]);
  });

  it('a name that does not resolve is 502 and reports the error', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await exchange(parts.h.path('s1'), connectText('nowhere.test:443'), true);
    expect(r.status).toBe(502);
    expect(r.body).toContain('cannot resolve nowhere.test');
    await until(() => policy.finished.length === 1);
    expect(policy.finished[0]!.usage.error).toContain('ENOTFOUND');
  });

  it('a resolver answer that is not an address is dropped, never dialled', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide, names: { 'cname.test': ['other.example'] } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await exchange(parts.h.path('s1'), connectText('cname.test:443'), true);
    expect(r.status).toBe(502);
    expect(parts.h.dialer.calls).toEqual([]);
  });

  it('a malformed authority is 400 without a decision', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    for (const bad of ['example.com', 'user@example.com:443', 'example.com:0', 'example.com:99999']) {
      const r = await exchange(parts.h.path('s1'), connectText(bad), true);
      expect(r.status, bad).toBe(400);
    }
    expect(policy.decided).toEqual([]);
  });
});
