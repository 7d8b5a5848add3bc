// Issue 10: webhooks were a server-side request forgery tool. With
// THINKFLOW_WEBHOOK_ALLOW unset, loopback, link-local, unspecified and
// metadata destinations are refused at submission (400), in every spelling.
// (Loopback stands in for every refused range: tests reach 127.0.0.1 only.)
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.ts';
import { TRANSCRIPTS } from './transcripts.ts';

let h: Harness;
let receiver: Server;
let port = 0;
let hits = 0;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    hits++;
    req.resume();
    res.writeHead(204).end();
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  port = (receiver.address() as AddressInfo).port;
  h = await startHarness('hookref', TRANSCRIPTS); // THINKFLOW_WEBHOOK_ALLOW unset
});
afterAll(async () => {
  receiver?.close();
  await h?.close();
});

describe('webhook destinations at submission', () => {
  it.each([
    () => `http://127.0.0.1:${port}/hook`,
    () => `http://[::1]:${port}/hook`,
    () => `http://0x7f000001:${port}/hook`,
    () => `http://[::ffff:127.0.0.1]:${port}/hook`,
    () => `http://0.0.0.0:${port}/hook`,
    () => 'http://localhost:6379/',
    () => 'http://169.254.169.254/latest/meta-data/',
  ])('refuses %s with 400 webhook_refused, and no job is created', async (url) => {
    const res = await fetch(`${h.url}/v1/jobs`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ task: 'five files please', webhook: url() }),
    });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe('webhook_refused');
    expect(body.error.message).toMatch(/refused: .* is a loopback, link-local, unspecified or cloud metadata address/);
    expect(hits).toBe(0);
  });
});
