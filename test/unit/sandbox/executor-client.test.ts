// The host side survives any executor output (issue 9): a line is never
// buffered past maxFrameBytes, whatever arrives, and the client then fails
// every pending request with `sandbox_broken` instead of growing or dying.
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Duplex, PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ExecutorClient } from '../../../services/sandbox/executor-client.ts';

/** A fake attach stream: what the test writes to `fromExecutor` arrives as the executor's stdout. */
function channel() {
  const fromExecutor = new PassThrough();
  const toExecutor: string[] = [];
  const stream = new Duplex({
    read() {},
    write(chunk, _enc, cb) {
      toExecutor.push(String(chunk));
      cb();
    },
  });
  const errors: Error[] = [];
  const client = new ExecutorClient(stream, (_s, out) => fromExecutor.pipe(out as NodeJS.WritableStream), {
    maxFrameBytes: 1024 * 1024,
    onError: (e) => errors.push(e),
  });
  return { fromExecutor, toExecutor, client, errors, stream };
}

describe('ExecutorClient frame cap', () => {
  it('answers a request from a normal line', async () => {
    const c = channel();
    const pending = c.client.request<{ pong: boolean }>('ping', {}, 1000);
    const rid = JSON.parse(c.toExecutor[0]!).rid;
    c.fromExecutor.write(`${JSON.stringify({ rid, result: { pong: true } })}\n`);
    expect(await pending).toEqual({ pong: true });
  });

  it('a line past the cap without a newline fails the pending request as sandbox_broken, and memory stays flat', async () => {
    const c = channel();
    const pending = c.client.request('exec', {}, 10_000);
    const before = process.memoryUsage().rss;
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    // 200 MiB with no newline: the old client buffered all of it.
    for (let i = 0; i < 3200 && c.client.alive; i++) c.fromExecutor.write(chunk);
    await expect(pending).rejects.toMatchObject({ code: 'sandbox_broken' });
    expect(c.client.alive).toBe(false);
    expect(c.errors.map((e) => (e as { code?: string }).code)).toContain('sandbox_broken');
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    expect(c.stream.destroyed).toBe(true);
  });

  it('a line past the cap split over many chunks with a newline at the end is refused too', async () => {
    const c = channel();
    const pending = c.client.request('exec', {}, 10_000);
    c.fromExecutor.write(Buffer.alloc(700 * 1024, 0x61));
    c.fromExecutor.write(Buffer.concat([Buffer.alloc(400 * 1024, 0x61), Buffer.from('\n')]));
    await expect(pending).rejects.toMatchObject({ code: 'sandbox_broken' });
  });

  it('many lines under the cap in one chunk are all fine', async () => {
    const c = channel();
    const a = c.client.request('ping', {}, 1000);
    const b = c.client.request('ping', {}, 1000);
    const [ra, rb] = c.toExecutor.map((l) => JSON.parse(l).rid);
    const big = 'x'.repeat(900 * 1024);
    c.fromExecutor.write(`${JSON.stringify({ rid: ra, result: big })}\n${JSON.stringify({ rid: rb, result: 'b' })}\n`);
    expect(await a).toBe(big);
    expect(await b).toBe('b');
    expect(c.client.alive).toBe(true);
  });
});

describe('ExecutorClient on a Unix socket (the control socket: no demux)', () => {
  async function socketPair() {
    const dir = mkdtempSync(path.join(tmpdir(), 'tf-ctl-'));
    const at = path.join(dir, 'executor.sock');
    const peers: net.Socket[] = [];
    // The fake executor's side is reset when the client drops the socket: expected, so only recorded.
    const resets: Error[] = [];
    const server = net.createServer((s) => peers.push(s.on('error', (e) => resets.push(e))));
    await new Promise<void>((r) => server.listen(at, r));
    const sock = net.createConnection({ path: at });
    await new Promise((r) => sock.once('connect', r));
    while (peers.length === 0) await new Promise((r) => setTimeout(r, 5));
    const errors: Error[] = [];
    const client = new ExecutorClient(sock, null, { maxFrameBytes: 1024 * 1024, onError: (e) => errors.push(e) });
    const close = () => {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    };
    return { executor: peers[0]!, client, errors, sock, close };
  }

  it('answers a request, and a line past the cap fails it as sandbox_broken and drops the socket', async () => {
    const p = await socketPair();
    try {
      const lines: string[] = [];
      p.executor.on('data', (c: Buffer) => lines.push(...String(c).split('\n').filter(Boolean)));
      const ping = p.client.request<{ pong: boolean }>('ping', {}, 1000);
      while (lines.length === 0) await new Promise((r) => setTimeout(r, 5));
      p.executor.write(`${JSON.stringify({ rid: JSON.parse(lines[0]!).rid, result: { pong: true } })}\n`);
      expect(await ping).toEqual({ pong: true });
      const pending = p.client.request('exec', {}, 10_000);
      p.executor.write(Buffer.alloc(2 * 1024 * 1024, 0x61));
      await expect(pending).rejects.toMatchObject({ code: 'sandbox_broken' });
      expect(p.client.alive).toBe(false);
      expect(p.sock.destroyed).toBe(true);
    } finally {
      p.close();
    }
  });

  it('an executor that closes the socket fails what is pending as sandbox_unavailable', async () => {
    const p = await socketPair();
    try {
      const pending = p.client.request('exec', {}, 10_000);
      p.executor.destroy();
      await expect(pending).rejects.toMatchObject({ code: 'sandbox_unavailable' });
    } finally {
      p.close();
    }
  });
});
