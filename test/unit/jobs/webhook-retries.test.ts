// Webhooks a receiver can trust (API.md additions 2026-12-01): each attempt
// carries its own timestamp and the HMAC of "<timestamp>.<body>", one delivery
// id for all its retries; retries back off, a 4xx other than 408/429 ends the
// delivery, a Retry-After is honoured up to the cap. Real HTTP on 127.0.0.1.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookDelivery } from '../../../services/jobs/job-schemas.ts';
import { signBody, signTimestamped, WebhookSender } from '../../../services/jobs/webhooks.ts';

type Hit = { path: string; headers: IncomingHttpHeaders; body: string; at: number };
let receiver: Server;
let base = '';
const hits: Hit[] = [];
/** path → the statuses to answer, in order (then 204) */
const script = new Map<string, { status: number; headers?: Record<string, string> }[]>();

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      hits.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const next = script.get(path)?.shift() ?? { status: 204 };
      res.writeHead(next.status, next.headers ?? {}).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(() => {
  receiver?.close();
});

async function deliver(path: string, opts: { attempts?: number; baseDelayMs?: number; maxDelayMs?: number } = {}) {
  const recorded: WebhookDelivery[] = [];
  const s = new WebhookSender({ secret: 'k', attempts: 5, baseDelayMs: 20, allow: '127.0.0.1', record: async (_id, d) => { recorded.push(d); }, ...opts });
  s.send(`${base}${path}`, 'job_finished', { event: 'job_finished', job: { job_id: 'job_x', path } }, 'job_x');
  await s.drain();
  return { recorded, seen: hits.filter((h) => h.path === path) };
}

describe('webhook signatures and delivery ids', () => {
  it('every attempt: its own timestamp, both signatures, the same delivery id; recorded with that id', async () => {
    script.set('/flaky', [{ status: 500 }, { status: 503 }]);
    const { recorded, seen } = await deliver('/flaky');
    expect(seen).toHaveLength(3);
    const id = seen[0]!.headers['x-thinkflow-delivery'];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    for (const hit of seen) {
      const ts = Number(hit.headers['x-thinkflow-timestamp']);
      expect(Number.isInteger(ts)).toBe(true);
      expect(Math.abs(ts - hit.at / 1000)).toBeLessThan(2);
      expect(hit.headers['x-thinkflow-delivery']).toBe(id);
      expect(hit.headers['x-thinkflow-signature']).toBe(`sha256=${createHmac('sha256', 'k').update(hit.body).digest('hex')}`);
      expect(hit.headers['x-thinkflow-signature-256']).toBe(`sha256=${createHmac('sha256', 'k').update(`${ts}.${hit.body}`).digest('hex')}`);
    }
    expect(recorded.map((d) => [d.delivery_id, d.attempt, d.ok, d.status_code])).toEqual([[id, 1, false, 500], [id, 2, false, 503], [id, 3, true, 204]]);
  });

  it('two deliveries have two ids', async () => {
    const a = await deliver('/one');
    const b = await deliver('/two');
    expect(a.recorded[0]!.delivery_id).not.toBe(b.recorded[0]!.delivery_id);
  });

  it('signBody and signTimestamped are the documented HMACs', () => {
    expect(signBody('k', 'b')).toBe(`sha256=${createHmac('sha256', 'k').update('b').digest('hex')}`);
    expect(signTimestamped('k', 1700000000, 'b')).toBe(`sha256=${createHmac('sha256', 'k').update('1700000000.b').digest('hex')}`);
  });
});

describe('webhook retries', () => {
  it.each([400, 401, 404, 410, 422])('%i ends the delivery: one attempt', async (status) => {
    script.set(`/final-${status}`, [{ status }]);
    const { recorded, seen } = await deliver(`/final-${status}`);
    expect(seen).toHaveLength(1);
    expect(recorded).toEqual([{ delivery_id: expect.any(String), attempt: 1, at: expect.any(String), ok: false, status_code: status }]);
  });

  it.each([408, 429, 500, 502])('%i is retried', async (status) => {
    script.set(`/again-${status}`, [{ status }]);
    const { recorded } = await deliver(`/again-${status}`);
    expect(recorded.map((d) => [d.attempt, d.status_code])).toEqual([[1, status], [2, 204]]);
  });

  it('gives up after the bounded number of attempts, backing off between them', async () => {
    script.set('/down', Array(10).fill({ status: 500 }));
    const { recorded, seen } = await deliver('/down', { attempts: 4, baseDelayMs: 100 });
    expect(recorded.map((d) => d.attempt)).toEqual([1, 2, 3, 4]);
    const gaps = seen.slice(1).map((h, i) => h.at - seen[i]!.at);
    // Each wait is between half and all of 100, 200, 400 ms.
    gaps.forEach((g, i) => expect(g).toBeGreaterThanOrEqual((100 * 2 ** i) / 2 - 5));
  });

  it("honours a 429's Retry-After, bounded by maxDelayMs", async () => {
    script.set('/slow-down', [{ status: 429, headers: { 'retry-after': '1' } }]);
    const slow = await deliver('/slow-down', { baseDelayMs: 10 });
    expect(slow.seen[1]!.at - slow.seen[0]!.at).toBeGreaterThanOrEqual(950);
    script.set('/capped', [{ status: 503, headers: { 'retry-after': '3600' } }]);
    const capped = await deliver('/capped', { baseDelayMs: 10, maxDelayMs: 200 });
    expect(capped.recorded.map((d) => d.ok)).toEqual([false, true]);
    expect(capped.seen[1]!.at - capped.seen[0]!.at).toBeLessThan(2000);
  });
});
