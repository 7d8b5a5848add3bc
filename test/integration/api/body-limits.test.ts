import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { suiteService } from '../suite-service.ts';

// Body limits as ordinary clients meet them (API.md, Limits and Additions):
// a client that writes its whole body before reading still gets the 413, and
// no field has a cap tighter than the body limit.

const svc = suiteService('limits');

type Outcome = { status: number | null; body: string; errors: string[]; wroteAll: boolean };

/**
 * Node's http client, writing the whole body at once (as fast as the socket
 * takes it) and reading nothing before all of it is written, like clients
 * that send first and read after (Python's requests); every error is recorded.
 */
function post(path: string, body: Buffer, type: string, chunked: boolean): Promise<Outcome> {
  const u = new URL(svc.url!);
  return new Promise((resolve) => {
    const out: Outcome = { status: null, body: '', errors: [], wroteAll: false };
    const headers: Record<string, string> = { 'content-type': type };
    if (!chunked) headers['content-length'] = String(body.length);
    const req = request({ agent: false, host: u.hostname, port: u.port, path, method: 'POST', headers }, (res) => {
      out.status = res.statusCode ?? null;
      res.on('data', (d: Buffer) => (out.body += d.toString()));
      res.on('error', (e) => out.errors.push(`response: ${e.message}`));
    });
    req.on('error', (e: NodeJS.ErrnoException) => out.errors.push(`request: ${e.code ?? e.message}`));
    req.on('socket', (socket) => socket.pause());
    req.on('finish', () => {
      out.wroteAll = true;
      req.socket?.resume();
    });
    req.on('close', () => setTimeout(() => resolve(out), 20));
    // 256 KiB every few ms: a network slower than loopback, so the body is still
    // on its way when the server answers (on loopback the kernel would swallow it).
    let at = 0;
    const pump = () => {
      if (req.destroyed) return;
      if (at >= body.length) return void req.end();
      req.write(body.subarray(at, at + 256 * 1024));
      at += 256 * 1024;
      setTimeout(pump, 4);
    };
    pump();
  });
}

const MiB = 1024 * 1024;
const json = (task: string) => Buffer.from(JSON.stringify({ task }));

describe('413 reaches clients that write the whole body first', () => {
  const cases = [
    { path: '/v1/sessions/ses_none/commands', size: 17 * MiB, type: 'text/plain', limit: 16 * MiB },
    { path: '/v1/jobs', size: 3 * MiB, type: 'application/json', limit: 2 * MiB },
    { path: '/v1/approvals/tok_none', size: 3 * MiB, type: 'application/json', limit: 2 * MiB },
  ];
  for (const c of cases) {
    for (const chunked of [false, true]) {
      it(`${c.path}, ${c.size / MiB} MiB, ${chunked ? 'chunked' : 'Content-Length'}`, async () => {
        const out = await post(c.path, Buffer.alloc(c.size, 'a'), c.type, chunked);
        expect(out.errors).toEqual([]);
        expect(out.wroteAll).toBe(true);
        expect(out.status).toBe(413);
        expect(JSON.parse(out.body)).toEqual({ error: { code: 'payload_too_large', message: `request body over ${c.limit} bytes`, details: { max_bytes: c.limit } } });
      });
    }
  }

  it('the server keeps serving after lingering (no connection is left hanging)', async () => {
    const res = await fetch(`${svc.url}/healthz`);
    expect(res.status).toBe(200);
  });
});

describe('no field cap tighter than the body limit', () => {
  it('a 1.5 MiB task is accepted', async () => {
    const out = await post('/v1/jobs', json('x'.repeat(1.5 * MiB)), 'application/json', false);
    expect(out.status, out.body).toBe(202);
    await svc.handle.runtime.redis.ping();
  });

  it('a job body just under 2 MiB is accepted, just over is 413', async () => {
    const overhead = json('').length;
    const under = json('y'.repeat(2 * MiB - overhead - 16));
    expect(under.length).toBeLessThan(2 * MiB);
    const a = await post('/v1/jobs', under, 'application/json', false);
    expect(a.status, a.body).toBe(202);
    const over = json('y'.repeat(2 * MiB - overhead + 16));
    expect(over.length).toBeGreaterThan(2 * MiB);
    for (const chunked of [false, true]) {
      const b = await post('/v1/jobs', over, 'application/json', chunked);
      expect(b.errors).toEqual([]);
      expect(b.status).toBe(413);
    }
  });

  it('an approval reason as long as the body allows is not refused for its length', async () => {
    const out = await post('/v1/approvals/tok_none', Buffer.from(JSON.stringify({ decision: 'reject', reason: 'r'.repeat(MiB) })), 'application/json', false);
    expect(out.status, out.body).toBe(404);
  });
});
