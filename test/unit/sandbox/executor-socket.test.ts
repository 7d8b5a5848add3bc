// openControlSocket on a real Unix socket: the host dials the executor's
// control socket only when the executor said on the attach stream that it
// listens (`control`), and keeps it only when the same executor (`instance`)
// answers there.
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExecutorClient } from '../../../services/sandbox/executor-client.ts';
import { openControlSocket } from '../../../services/sandbox/executor-socket.ts';

let dir: string;
let server: net.Server;
let connections = 0;
let attached: ExecutorClient;

/** A stand-in executor on the socket: answers every request with `instance`. */
function listen(socketPath: string, instance: string): Promise<void> {
  server = net.createServer((conn) => {
    connections += 1;
    let buf = '';
    conn.on('data', (c: Buffer) => {
      buf += c.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const req = JSON.parse(buf.slice(0, i)) as { rid: string };
        buf = buf.slice(i + 1);
        conn.write(JSON.stringify({ rid: req.rid, result: { pong: true, instance } }) + '\n');
      }
    });
  });
  return new Promise((resolve) => server.listen(socketPath, resolve));
}

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tf-ctl-'));
  connections = 0;
  attached = new ExecutorClient(new PassThrough(), null, {});
});
afterEach(async () => {
  attached.close();
  await new Promise((r) => server?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const open = (socketPath: string, o: { instance?: string; control?: boolean }) =>
  openControlSocket(socketPath, attached, { sessionId: 'ses_unit', maxFrameBytes: 1 << 20, timeoutMs: 2_000, ...o });

describe('openControlSocket', () => {
  it('uses the socket when the executor said it listens and the same executor answers there', async () => {
    const sock = path.join(dir, 'executor.sock');
    await listen(sock, 'abc');
    const client = await open(sock, { instance: 'abc', control: true });
    expect(client).not.toBeNull();
    expect(await client!.request<{ instance: string }>('ping', {}, 2_000)).toMatchObject({ instance: 'abc' });
    client!.close();
  });

  it('does not dial when the executor said its socket does not listen, or said nothing of it (an older image)', async () => {
    const sock = path.join(dir, 'executor.sock');
    await listen(sock, 'abc');
    expect(await open(sock, { instance: 'abc', control: false })).toBeNull();
    expect(await open(sock, { instance: 'abc' })).toBeNull();
    expect(await open(sock, {})).toBeNull();
    expect(connections).toBe(0);
  });

  it('drops a socket where another executor answers', async () => {
    const sock = path.join(dir, 'executor.sock');
    await listen(sock, 'someone-else');
    expect(await open(sock, { instance: 'abc', control: true })).toBeNull();
    expect(connections).toBe(1);
  });

  it('keeps the attach stream, without waiting, when the socket said to listen is gone', async () => {
    const sock = path.join(dir, 'executor.sock');
    await listen(path.join(dir, 'elsewhere.sock'), 'abc');
    const t0 = performance.now();
    expect(await open(sock, { instance: 'abc', control: true })).toBeNull();
    expect(performance.now() - t0).toBeLessThan(500);
  });
});
