// The executor's egress relay on the host's loopback, without Docker: bytes
// both ways, half-close, backpressure, the 503 answers and the cap.
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

let dir: string;
let socketPath: string;
let relay: ReturnType<typeof import('../../../sandbox-image/executor/egress-relay.mjs').startEgressRelay>;
let port: number;
let upstream: net.Server | undefined;
const upstreamSockets: net.Socket[] = [];

beforeAll(async () => {
  // identity.mjs reads the command user once, at import: 0:0 keeps this test process's ids as they are.
  process.env.THINKFLOW_RUN_AS = '0:0';
  const { startEgressRelay } = await import('../../../sandbox-image/executor/egress-relay.mjs');
  dir = await mkdtemp(path.join(tmpdir(), 'tf-relay-'));
  socketPath = path.join(dir, 'egress.sock');
  relay = startEgressRelay({ maxConnections: 2, socketPath, port: 0 });
  port = ((await relay.listening).address() as net.AddressInfo).port;
});
afterEach(async () => {
  relay.dropAll();
  for (const s of upstreamSockets.splice(0)) s.destroy();
  await new Promise((r) => (upstream ? upstream.close(r) : r(undefined)));
  upstream = undefined;
});
afterAll(async () => {
  delete process.env.THINKFLOW_RUN_AS;
  (await relay.listening).close();
  await rm(dir, { recursive: true, force: true });
});

async function startUpstream(onSocket: (s: net.Socket) => void): Promise<void> {
  upstream = net.createServer({ allowHalfOpen: true }, (s) => {
    upstreamSockets.push(s);
    onSocket(s);
  });
  await new Promise<void>((r) => upstream!.listen(socketPath, r));
}

/** Sends `data` (then half-closes, when asked) and collects everything until the relay closes. */
function exchange(data: Buffer | string, halfClose = true): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const c = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const chunks: Buffer[] = [];
    c.on('data', (d) => chunks.push(d)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
    c.write(data);
    if (halfClose) c.end();
  });
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('the egress relay', () => {
  it('answers 503 with its reason when no proxy listens', async () => {
    const answer = (await exchange('GET http://x.test/ HTTP/1.1\r\nHost: x.test\r\n\r\n')).toString();
    expect(answer).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(answer.endsWith('\r\n\r\nno egress proxy for this session\n')).toBe(true);
  });

  it('carries bytes both ways, and a half-close, unchanged', async () => {
    await startUpstream((s) => {
      const got: Buffer[] = [];
      s.on('data', (d) => got.push(d)).on('end', () => s.end(`${Buffer.concat(got).length} ${sha(Buffer.concat(got))}`));
    });
    const body = Buffer.alloc(4 * 1024 * 1024, 7);
    expect((await exchange(body)).toString()).toBe(`${body.length} ${sha(body)}`);
  });

  it('reads from the proxy no faster than the client takes it (backpressure)', async () => {
    const big = Buffer.alloc(32 * 1024 * 1024, 1);
    let source: net.Socket | undefined;
    await startUpstream((s) => {
      source = s;
      s.end(big);
    });
    const c = net.connect({ port, host: '127.0.0.1' });
    c.pause();
    c.write('go');
    await new Promise((r) => setTimeout(r, 400));
    // Kernel buffers and the relay's own stream buffers hold a few MiB at most: the rest waits at the source.
    expect(source!.writableLength).toBeGreaterThan(16 * 1024 * 1024);
    let received = 0;
    c.on('data', (d: Buffer) => (received += d.length));
    c.resume();
    await new Promise((r) => c.on('end', r));
    expect(received).toBe(big.length);
  });

  it('relays at most maxConnections at once, answers the next with a 503, and drops all on demand', async () => {
    let closed = 0; // ended or reset by the relay
    await startUpstream((s) => s.on('end', () => closed++).on('error', () => closed++));
    const held = [0, 1].map(() => net.connect({ port, host: '127.0.0.1' }));
    for (const h of held) h.on('error', () => {});
    await new Promise((r) => setTimeout(r, 200));
    expect(upstreamSockets).toHaveLength(2);
    const third = (await exchange('CONNECT x.test:443 HTTP/1.1\r\n\r\n')).toString();
    expect(third).toMatch(/^HTTP\/1\.1 503 /);
    expect(third.endsWith('egress relay: 2 connections are already open in this sandbox\n')).toBe(true);
    expect(upstreamSockets).toHaveLength(2);
    relay.dropAll();
    await new Promise((r) => setTimeout(r, 100));
    expect(closed).toBe(2);
    // The slots are free again.
    const echoed = exchange('again');
    await new Promise((r) => setTimeout(r, 100));
    expect(upstreamSockets).toHaveLength(3);
    upstreamSockets[2]!.end('ok');
    expect((await echoed).toString()).toBe('ok');
  });
});
