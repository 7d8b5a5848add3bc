// The egress proxy's limits (issue 21), each with its default and a test of
// what it bounds: connections per session, the request-head timeout
// (slow-loris), the tunnel idle timeout, the connect timeout; and what must
// not be bounded: a slow decision (an operator prompt).
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { DEFAULT_EGRESS_LIMITS, resolveEgressLimits } from '../../../../services/sandbox/egress/types.ts';
import { connectText, echoServer, exchange, fakePolicy, harness, httpServer, readBytes, sleep, until, perTest, type Harness } from './helpers.ts';

const parts = perTest(echoServer);

describe('defaults', () => {
  it('are 64 connections, 10 s for a head, 60 s idle, 10 s to connect; a limit must be a positive integer', () => {
    expect(DEFAULT_EGRESS_LIMITS).toEqual({ maxConnectionsPerSession: 64, headersTimeoutMs: 10_000, idleTimeoutMs: 60_000, connectTimeoutMs: 10_000 });
    expect(resolveEgressLimits({ idleTimeoutMs: 5 })).toEqual({ ...DEFAULT_EGRESS_LIMITS, idleTimeoutMs: 5 });
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => resolveEgressLimits({ maxConnectionsPerSession: bad })).toThrow(/positive integer/);
  });
});

/** One CONNECT attempt; its status (429 expected), or 0 when the socket failed before any answer. */
function attempt(path: string, authority: string): Promise<number> {
  return new Promise((resolve) => {
    const s = net.connect(path);
    let got = '';
    s.on('data', (d) => (got += d));
    const done = () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0));
    s.on('error', () => s.destroy());
    s.on('close', done);
    s.write(connectText(authority));
  });
}

describe('connections per session', () => {
  it('10,000 attempts from one session: at most the cap at once, the rest 429; another session still works', async () => {
    const cap = 8;
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide, limits: { maxConnectionsPerSession: cap } });
    await parts.h.proxy.listen('flood', parts.h.path('flood'));
    await parts.h.proxy.listen('calm', parts.h.path('calm'));
    const held = await Promise.all(Array.from({ length: cap }, () => exchange(parts.h!.path('flood'), connectText(`127.0.0.1:${parts.up.port}`))));
    expect(held.map((r) => r.status)).toEqual(Array(cap).fill(200));

    const statuses = new Map<number, number>();
    let peak = 0;
    const deadline = Date.now() + 90_000; // self-stopping: a bounded loop, and a wall-clock stop
    let sent = 0;
    let calmChecked = false;
    while (sent < 10_000 && Date.now() < deadline) {
      const batch = Array.from({ length: Math.min(250, 10_000 - sent) }, () => attempt(parts.h!.path('flood'), `127.0.0.1:${parts.up.port}`));
      sent += batch.length;
      for (const st of await Promise.all(batch)) statuses.set(st, (statuses.get(st) ?? 0) + 1);
      peak = Math.max(peak, parts.h.proxy.activeConnections('flood'));
      if (!calmChecked && sent >= 5_000) {
        const other = await exchange(parts.h.path('calm'), connectText(`127.0.0.1:${parts.up.port}`));
        expect(other.status).toBe(200);
        other.socket.write('still here');
        expect((await readBytes(other.socket, 10)).toString()).toBe('still here');
        other.socket.destroy();
        calmChecked = true;
      }
    }
    expect(sent).toBe(10_000);
    expect(calmChecked).toBe(true);
    expect(statuses.get(200)).toBeUndefined();
    expect(statuses.get(429)).toBe(10_000);
    expect(peak).toBeLessThanOrEqual(cap);
    expect(policy.decided).toHaveLength(cap + 1);
    expect(parts.h.dialer.calls).toHaveLength(cap + 1);
    const refusal = await exchange(parts.h.path('flood'), connectText(`127.0.0.1:${parts.up.port}`), true);
    expect(refusal.body).toContain(`at most ${cap} connections at once`);
    for (const r of held) r.socket.destroy();
    await until(() => parts.h!.proxy.activeConnections('flood') === 0, 5000, 'slots released');
    expect((await exchange(parts.h.path('flood'), connectText(`127.0.0.1:${parts.up.port}`))).status).toBe(200);
  }, 120_000);

  for (const [path, text] of [
    ['CONNECT', (port: number) => connectText(`127.0.0.1:${port}`)],
    ['plain', (port: number) => `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: x\r\n\r\n`],
  ] as const) {
    it(`${path}: a client going away while its decision is pending frees its slot, aborts the decision, and nothing is dialled`, async () => {
      let release: (allow: boolean) => void = () => undefined;
      let signal: AbortSignal | undefined;
      const finished: unknown[] = [];
      parts.h = harness({
        limits: { maxConnectionsPerSession: 1 },
        decide: async (_s, _t, ctx) => {
          signal = ctx.signal;
          await new Promise<boolean>((r) => (release = r));
          return { allow: true, finish: (u) => finished.push(u) };
        },
      });
      await parts.h.proxy.listen('s1', parts.h.path('s1'));
      const s = net.connect(parts.h.path('s1'));
      s.write(text(parts.up.port));
      await until(() => signal !== undefined, 2000, 'decision asked');
      expect(parts.h.proxy.activeConnections('s1')).toBe(1);
      s.destroy();
      await until(() => parts.h!.proxy.activeConnections('s1') === 0, 2000, 'slot released');
      expect(signal!.aborted).toBe(true);
      release(true);
      await until(() => finished.length === 1, 2000, 'usage');
      expect(finished[0]).toMatchObject({ error: 'client_closed', bytes_in: 0, bytes_out: 0 });
      expect(parts.h.dialer.calls).toEqual([]);
    });
  }
});

describe('timeouts', () => {
  it('slow-loris: a head dribbled byte by byte, or never sent, is cut at the headers timeout (408) and frees its slot', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide, limits: { headersTimeoutMs: 300 } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const t0 = Date.now();
    const silent = net.connect(parts.h.path('s1'));
    const dribbler = net.connect(parts.h.path('s1'));
    let answer = '';
    dribbler.on('data', (d) => (answer += d));
    const text = connectText(`127.0.0.1:${parts.up.port}`);
    let i = 0;
    const drip = setInterval(() => { if (!dribbler.destroyed && i < text.length - 2) dribbler.write(text[i++]!); }, 50);
    const closedAt = (s: net.Socket) => new Promise<number>((r) => { s.on('error', () => undefined); s.on('close', () => r(Date.now() - t0)); s.resume(); });
    const [a, b] = await Promise.all([closedAt(silent), closedAt(dribbler)]);
    clearInterval(drip);
    expect(a).toBeLessThan(2000);
    expect(b).toBeLessThan(2000);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('not received within 300 ms');
    expect(policy.decided).toEqual([]);
    await until(() => parts.h!.proxy.activeConnections('s1') === 0, 2000, 'slots released');
  });

  it('a slow decision (1.5 s, an operator) does not trip the headers timeout (300 ms), on either path', async () => {
    const policy = fakePolicy(async () => { await sleep(1500); return true; });
    parts.h = harness({ decide: policy.decide, limits: { headersTimeoutMs: 300 } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const web = await httpServer();
    const t0 = Date.now();
    const [tunnel, plain] = await Promise.all([
      exchange(parts.h.path('s1'), connectText(`127.0.0.1:${parts.up.port}`)),
      exchange(parts.h.path('s1'), `GET http://127.0.0.1:${web.port}/slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, true),
    ]);
    await web.close();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1400);
    expect(tunnel.status).toBe(200);
    tunnel.socket.write('ping');
    expect((await readBytes(tunnel.socket, 4)).toString()).toBe('ping');
    tunnel.socket.destroy();
    expect(plain.status).toBe(200);
    expect(plain.body).toBe('hello /slow');
  });

  it('a tunnel with no byte either way for the idle timeout is closed and reported idle_timeout', async () => {
    const policy = fakePolicy();
    parts.h = harness({ decide: policy.decide, limits: { idleTimeoutMs: 300 } });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const r = await exchange(parts.h.path('s1'), connectText(`127.0.0.1:${parts.up.port}`));
    r.socket.write('abc');
    await readBytes(r.socket, 3);
    const t0 = Date.now();
    await new Promise((resolve) => { r.socket.on('error', () => undefined); r.socket.on('close', resolve); });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(Date.now() - t0).toBeLessThan(3000);
    await until(() => policy.finished.length === 1);
    expect(policy.finished[0]!.usage).toMatchObject({ error: 'idle_timeout', bytes_in: 3, bytes_out: 3 });
  });

  it('a dial that does not connect is 504 after the connect timeout, and the socket is destroyed', async () => {
    const policy = fakePolicy();
    const dialled: net.Socket[] = [];
    // A socket that is never connected anywhere: the dial "hangs".
    const hang = () => { const s = new net.Socket(); dialled.push(s); return s; };
    parts.h = harness({ decide: policy.decide, limits: { connectTimeoutMs: 300 }, dial: hang });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const t0 = Date.now();
    const r = await exchange(parts.h.path('s1'), connectText(`127.0.0.1:${parts.up.port}`), true);
    expect(r.status).toBe(504);
    expect(r.body).toContain('within 300 ms');
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(dialled[0]!.destroyed).toBe(true);
    await until(() => policy.finished.length === 1);
    expect(policy.finished[0]!.usage).toMatchObject({ error: 'connect_timeout', address: '127.0.0.1' });
  });
});
