// One Unix socket per session (issue 21): the socket is the session's
// identity, closing a session ends its connections and removes its socket,
// and other sessions go on.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../../services/log/index.ts';
import { EgressProxy } from '../../../../services/sandbox/egress/proxy.ts';
import { connectText, echoServer, exchange, fakePolicy, harness, readBytes, specialAddressCheck, until, perTest, type Harness } from './helpers.ts';

const parts = perTest(echoServer);

describe('sessions', () => {
  it('each socket asks the policy for its own session', async () => {
    const asked: string[] = [];
    parts.h = harness({ decide: async (session) => { asked.push(session); return { allow: true }; } });
    await parts.h.proxy.listen('alpha', parts.h.path('alpha'));
    await parts.h.proxy.listen('beta', parts.h.path('beta'));
    for (const s of ['beta', 'alpha']) (await exchange(parts.h.path(s), connectText(`127.0.0.1:${parts.up.port}`))).socket.destroy();
    expect(asked).toEqual(['beta', 'alpha']);
    expect(parts.h.proxy.sessionIds().sort()).toEqual(['alpha', 'beta']);
  });

  it('the socket file is 0666 (the in-container relay dials it with the command user\'s ids) in a directory made 0700', async () => {
    parts.h = harness({ decide: fakePolicy().decide });
    const path = join(parts.h.dir, 'nested', 'sess', 'proxy.sock');
    await parts.h.proxy.listen('s1', path);
    expect(statSync(path).mode & 0o777).toBe(0o666);
    expect(statSync(join(parts.h.dir, 'nested', 'sess')).mode & 0o777).toBe(0o700);
  });

  it('close(session) ends its tunnels and pending decisions, reports session_closed, removes the socket; others go on', async () => {
    const policy = fakePolicy((t) => (t.port === 1 ? new Promise<boolean>(() => undefined) : true));
    parts.h = harness({ decide: policy.decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    await parts.h.proxy.listen('s2', parts.h.path('s2'));
    const tunnel = await exchange(parts.h.path('s1'), connectText(`127.0.0.1:${parts.up.port}`));
    const waiting = net.connect(parts.h.path('s1'));
    waiting.write(connectText('127.0.0.1:1'));
    await until(() => policy.decided.length === 2, 2000, 'pending decision');
    const closed = (s: net.Socket) => new Promise((r) => { s.on('error', () => undefined); s.on('close', r); s.resume(); });
    const ends = Promise.all([closed(tunnel.socket), closed(waiting)]);
    await parts.h.proxy.close('s1');
    await ends;
    expect(existsSync(parts.h.path('s1'))).toBe(false);
    expect(parts.h.proxy.activeConnections('s1')).toBe(0);
    await until(() => policy.finished.length === 1, 2000, 'usage');
    expect(policy.finished[0]!.usage.error).toBe('session_closed');
    const other = await exchange(parts.h.path('s2'), connectText(`127.0.0.1:${parts.up.port}`));
    other.socket.write('ok');
    expect((await readBytes(other.socket, 2)).toString()).toBe('ok');
    other.socket.destroy();
    await parts.h.proxy.close('s1'); // again: a no-op
    await parts.h.proxy.listen('s1', parts.h.path('s1')); // and it can be served again
    expect((await exchange(parts.h.path('s1'), connectText(`127.0.0.1:${parts.up.port}`))).status).toBe(200);
  });

  it('listen twice on the same path is a no-op; on another path an error', async () => {
    parts.h = harness({ decide: fakePolicy().decide });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    await expect(parts.h.proxy.listen('s1', parts.h.path('other'))).rejects.toThrow(/already listens/);
  });

  it('a stale socket file is replaced; any other file is left alone and refused', async () => {
    parts.h = harness({ decide: fakePolicy().decide });
    // a process that died leaves its socket file behind
    execFileSync(process.execPath, ['-e', "require('net').createServer().listen(process.argv[1], () => process.exit(0))", parts.h.path('stale')]);
    expect(existsSync(parts.h.path('stale'))).toBe(true);
    await parts.h.proxy.listen('s1', parts.h.path('stale'));
    expect((await exchange(parts.h.path('stale'), connectText(`127.0.0.1:${parts.up.port}`))).status).toBe(200);
    writeFileSync(parts.h.path('plain'), 'not a socket');
    await expect(parts.h.proxy.listen('s2', parts.h.path('plain'))).rejects.toThrow(/not a socket/);
    expect(existsSync(parts.h.path('plain'))).toBe(true);
    expect(parts.h.proxy.sessionIds()).toEqual(['s1']);
  });

  it('a socket path too long for sun_path is a clear error', async () => {
    parts.h = harness({ decide: fakePolicy().decide });
    await expect(parts.h.proxy.listen('s1', join(parts.h.dir, 'x'.repeat(120)))).rejects.toThrow(/longer than 107 bytes/);
  });

  it('a failing decision is logged with the session id', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write(chunk, _e, cb) { lines.push(String(chunk)); cb(); } });
    const proxy = new EgressProxy({
      decide: async () => { throw new Error('policy store down'); },
      checkAddress: specialAddressCheck(['127.0.0.1']).check,
      log: createLogger({ level: 'error', pretty: false, destination: sink }),
    });
    parts.h = harness({ decide: fakePolicy().decide });
    try {
      await proxy.listen('s9', parts.h.path('s9'));
      const r = await exchange(parts.h.path('s9'), connectText(`127.0.0.1:${parts.up.port}`), true);
      expect(r.status).toBe(500);
      const rec = JSON.parse(lines.find((l) => l.includes('egress decision failed'))!);
      expect(rec).toMatchObject({ session_id: 's9', target: { host: '127.0.0.1', port: parts.up.port }, err: { message: 'policy store down' } });
    } finally {
      await proxy.closeAll();
    }
  });

  it('a finish callback that throws is logged, and the proxy goes on', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write(chunk, _e, cb) { lines.push(String(chunk)); cb(); } });
    parts.h = harness({
      decide: async () => ({ allow: true, finish: () => { throw new Error('ledger down'); } }),
      log: createLogger({ level: 'error', pretty: false, destination: sink }),
    });
    await parts.h.proxy.listen('s1', parts.h.path('s1'));
    const a = await exchange(parts.h.path('s1'), connectText(`127.0.0.1:${parts.up.port}`));
    a.socket.end();
    await until(() => lines.some((l) => l.includes('egress usage report failed') && l.includes('ledger down')), 2000, 'logged');
    expect((await exchange(parts.h.path('s1'), connectText(`127.0.0.1:${parts.up.port}`))).status).toBe(200);
  });
});
