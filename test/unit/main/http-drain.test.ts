// The HTTP side of a graceful shutdown, on a real Node server (@hono/node-server):
// a request in flight is answered, a new connection is refused, a request on a
// kept-alive connection gets 503 shutting_down, and the grace bounds the wait.
import { serve, type ServerType } from '@hono/node-server';
import { request, Agent } from 'node:http';
import type { Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpDrain } from '../../../services/main/http-drain.ts';

const servers: ServerType[] = [];
afterEach(() => { for (const s of servers.splice(0)) (s as Server).closeAllConnections(); });

/** `/slow?ms=N` answers after N ms; anything else at once. */
async function start(drain: HttpDrain, onRun: () => void = () => {}): Promise<{ server: Server; port: number }> {
  const app = async (req: Request) => {
    onRun();
    const ms = Number(new URL(req.url).searchParams.get('ms') ?? 0);
    await new Promise((r) => setTimeout(r, ms));
    return new Response(`waited ${ms}`);
  };
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: drain.wrap(app), port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  servers.push(server);
  return { server: server as Server, port: (server.address() as AddressInfo).port };
}

function get(port: number, path: string, agent?: Agent): Promise<{ status: number; body: string; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: agent ?? false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('HttpDrain', () => {
  it('answers the request in flight, closes idle kept-alive connections and refuses new ones', async () => {
    const drain = new HttpDrain();
    const { server, port } = await start(drain);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect((await get(port, '/', agent)).status).toBe(200); // the agent now holds an idle kept-alive socket
    const slow = get(port, '/slow?ms=800', new Agent({ keepAlive: true }));
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    const drained = drain.drain(server, 5000);
    await new Promise((r) => setTimeout(r, 50));
    await expect(get(port, '/')).rejects.toThrow(/ECONNREFUSED/);
    expect(await slow).toMatchObject({ status: 200, body: 'waited 800' });
    await drained;
    expect(Date.now() - t0).toBeLessThan(3000);
    agent.destroy();
  });

  it('answers in flight during the drain carry connection: close; a pipelined request after them is not run', async () => {
    let ran = 0;
    const drain = new HttpDrain();
    const { server, port } = await start(drain, () => { ran += 1; });
    const sock = connect(port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    let raw = '';
    sock.on('data', (d: Buffer) => (raw += d.toString()));
    const ended = new Promise((r) => sock.once('close', r));
    sock.write('GET /slow?ms=300 HTTP/1.1\r\nhost: x\r\n\r\n');
    await new Promise((r) => setTimeout(r, 100));
    const drained = drain.drain(server, 5000);
    // Pipelined on the busy connection once the drain began: never run.
    sock.write('GET /slow?ms=0 HTTP/1.1\r\nhost: x\r\n\r\n');
    await drained;
    await ended;
    expect(raw).toMatch(/^HTTP\/1\.1 200[\s\S]*\r\nconnection: close\r\n[\s\S]*waited 300$/i);
    expect(ran).toBe(1);
  });

  it('a request that reaches the app once the drain began is refused: 503 shutting_down, connection close', async () => {
    const drain = new HttpDrain();
    const { server } = await start(drain);
    const wrapped = drain.wrap(async () => new Response('ran'));
    expect((await wrapped(new Request('http://x/'), {})).status).toBe(200);
    const drained = drain.drain(server, 1000);
    const res = await wrapped(new Request('http://x/'), {});
    expect(res.status).toBe(503);
    expect(res.headers.get('connection')).toBe('close');
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ error: { code: 'shutting_down' } });
    await drained;
  });

  it('cuts a request still in flight when the grace is over', async () => {
    const drain = new HttpDrain();
    const { server, port } = await start(drain);
    const stuck = get(port, '/slow?ms=10000').then(() => 'answered', (err: Error) => err.message);
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    await drain.drain(server, 500);
    expect(Date.now() - t0).toBeLessThan(2500);
    expect(await stuck).toMatch(/socket hang up|ECONNRESET/);
  });
});
