// One Unix socket per session (issue 21): the socket is the session's
// identity, closing a session ends its connections and removes its socket,
// and other sessions go on.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../services/log/index.ts';
import { EgressProxy } from '../../../../services/sandbox/egress/proxy.ts';
import { connectText, echoServer, exchange, fakePolicy, harness, readBytes, specialAddressCheck, until, type Harness } from './helpers.ts';

let echo: Awaited<ReturnType<typeof echoServer>>;
let h: Harness | undefined;

beforeEach(async () => {
  echo = await echoServer();
});
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
  await echo.close();
});

describe('sessions', () => {
  it('each socket asks the policy for its own session', async () => {
    const asked: string[] = [];
    h = harness({ decide: async (session) => { asked.push(session); return { allow: true }; } });
    await h.proxy.listen('alpha', h.path('alpha'));
    await h.proxy.listen('beta', h.path('beta'));
    for (const s of ['beta', 'alpha']) (await exchange(h.path(s), connectText(`127.0.0.1:${echo.port}`))).socket.destroy();
    expect(asked).toEqual(['beta', 'alpha']);
    expect(h.proxy.sessionIds().sort()).toEqual(['alpha', 'beta']);
  });

  it('the socket file is 0600 in a directory made 0700', async () => {
    h = harness({ decide: fakePolicy().decide });
    const path = join(h.dir, 'nested', 'sess', 'proxy.sock');
    await h.proxy.listen('s1', path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(h.dir, 'nested', 'sess')).mode & 0o777).toBe(0o700);
  });

  it('close(session) ends its tunnels and pending decisions, reports session_closed, removes the socket; others go on', async () => {
    const policy = fakePolicy((t) => (t.port === 1 ? new Promise<boolean>(() => undefined) : true));
    h = harness({ decide: policy.decide });
    await h.proxy.listen('s1', h.path('s1'));
    await h.proxy.listen('s2', h.path('s2'));
    const tunnel = await exchange(h.path('s1'), connectText(`127.0.0.1:${echo.port}`));
    const waiting = net.connect(h.path('s1'));
    waiting.write(connectText('127.0.0.1:1'));
    await until(() => policy.decided.length === 2, 2000, 'pending decision');
    const closed = (s: net.Socket) => new Promise((r) => { s.on('error', () => undefined); s.on('close', r); s.resume(); });
    const ends = Promise.all([closed(tunnel.socket), closed(waiting)]);
    await h.proxy.close('s1');
    await ends;
    expect(existsSync(h.path('s1'))).toBe(false);
    expect(h.proxy.activeConnections('s1')).toBe(0);
    await until(() => policy.finished.length === 1, 2000, 'usage');
    expect(policy.finished[0]!.usage.error).toBe('session_closed');
    const other = await exchange(h.path('s2'), connectText(`127.0.0.1:${echo.port}`));
    other.socket.write('ok');
    expect((await readBytes(other.socket, 2)).toString()).toBe('ok');
    other.socket.destroy();
    await h.proxy.close('s1'); // again: a no-op
    await h.proxy.listen('s1', h.path('s1')); // and it can be served again
    expect((await exchange(h.path('s1'), connectText(`127.0.0.1:${echo.port}`))).status).toBe(200);
  });

  it('listen twice on the same path is a no-op; on another path an error', async () => {
    h = harness({ decide: fakePolicy().decide });
    await h.proxy.listen('s1', h.path('s1'));
    await h.proxy.listen('s1', h.path('s1'));
    await expect(h.proxy.listen('s1', h.path('other'))).rejects.toThrow(/already listens/);
  });

  it('a stale socket file is replaced; any other file is left alone and refused', async () => {
    h = harness({ decide: fakePolicy().decide });
    // a process that died leaves its socket file behind
    execFileSync(process.execPath, ['-e', "require('net').createServer().listen(process.argv[1], () => process.exit(0))", h.path('stale')]);
    expect(existsSync(h.path('stale'))).toBe(true);
    await h.proxy.listen('s1', h.path('stale'));
    expect((await exchange(h.path('stale'), connectText(`127.0.0.1:${echo.port}`))).status).toBe(200);
    writeFileSync(h.path('plain'), 'not a socket');
    await expect(h.proxy.listen('s2', h.path('plain'))).rejects.toThrow(/not a socket/);
    expect(existsSync(h.path('plain'))).toBe(true);
    expect(h.proxy.sessionIds()).toEqual(['s1']);
  });

  it('a socket path too long for sun_path is a clear error', async () => {
    h = harness({ decide: fakePolicy().decide });
    await expect(h.proxy.listen('s1', join(h.dir, 'x'.repeat(120)))).rejects.toThrow(/longer than 107 bytes/);
  });

  it('a failing decision is logged with the session id', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write(chunk, _e, cb) { lines.push(String(chunk)); cb(); } });
    const proxy = new EgressProxy({
      decide: async () => { throw new Error('policy store down'); },
      checkAddress: specialAddressCheck(['127.0.0.1']).check,
      log: createLogger({ level: 'error', pretty: false, destination: sink }),
    });
    h = harness({ decide: fakePolicy().decide });
    try {
      await proxy.listen('s9', h.path('s9'));
      const r = await exchange(h.path('s9'), connectText(`127.0.0.1:${echo.port}`), true);
      expect(r.status).toBe(500);
      const rec = JSON.parse(lines.find((l) => l.includes('egress decision failed'))!);
      expect(rec).toMatchObject({ session_id: 's9', target: { host: '127.0.0.1', port: echo.port }, err: { message: 'policy store down' } });
    } finally {
      await proxy.closeAll();
    }
  });

  it('a finish callback that throws is logged, and the proxy goes on', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write(chunk, _e, cb) { lines.push(String(chunk)); cb(); } });
    h = harness({
      decide: async () => ({ allow: true, finish: () => { throw new Error('ledger down'); } }),
      log: createLogger({ level: 'error', pretty: false, destination: sink }),
    });
    await h.proxy.listen('s1', h.path('s1'));
    const a = await exchange(h.path('s1'), connectText(`127.0.0.1:${echo.port}`));
    a.socket.end();
    await until(() => lines.some((l) => l.includes('egress usage report failed') && l.includes('ledger down')), 2000, 'logged');
    expect((await exchange(h.path('s1'), connectText(`127.0.0.1:${echo.port}`))).status).toBe(200);
  });
});
