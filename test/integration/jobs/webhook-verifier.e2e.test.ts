// Issue 20, "a captured webhook can be replayed": the README's verifier
// snippet, taken from README.md as written, accepts a real delivery of the
// service and refuses the same request replayed more than 5 minutes later
// (and a tampered body, and another secret). The receiver listens on
// 127.0.0.1, which webhooks reach only when THINKFLOW_WEBHOOK_ALLOW names it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startHarness, WEBHOOK_SECRET, type Harness } from './harness.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;

/** The code block between the README's `webhook-verifier` markers. */
function readmeSnippet(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const m = /<!-- webhook-verifier -->\s*```js\n([\s\S]*?)```\s*<!-- \/webhook-verifier -->/.exec(readme);
  if (!m) throw new Error('README.md has no webhook-verifier snippet between its markers');
  return m[1]!;
}

type Verify = (secret: string, headers: IncomingHttpHeaders, rawBody: string) => boolean;
type Received = { headers: IncomingHttpHeaders; body: string; accepted: boolean };

const dir = mkdtempSync(join(tmpdir(), 'tf-verifier-'));
let verify: Verify;
let h: Harness;
let receiver: Server;
let hookUrl = '';
const received: Received[] = [];

beforeAll(async () => {
  const file = join(dir, 'verify-thinkflow.mjs');
  const snippet = readmeSnippet();
  expect(snippet.split('\n').length).toBeLessThanOrEqual(20);
  writeFileSync(file, snippet);
  verify = (await import(file)).verifyThinkFlowWebhook as Verify;
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const accepted = verify(WEBHOOK_SECRET, req.headers, body);
      received.push({ headers: req.headers, body, accepted });
      res.writeHead(accepted ? 204 : 401).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  h = await startHarness('verifier', [{ name: 'hello', match: 'say hello', delay_ms: 0, turns: [{ reasoning: '', text: 'hello' }] }], { THINKFLOW_WEBHOOK_ALLOW: '127.0.0.1' });
});
afterEach(() => {
  vi.useRealTimers();
});
afterAll(async () => {
  receiver?.close();
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends a captured delivery again, as an attacker who recorded it would. */
async function replay(r: Received, body = r.body): Promise<number> {
  const headers: Record<string, string> = {};
  for (const name of ['content-type', 'x-thinkflow-event', 'x-thinkflow-delivery', 'x-thinkflow-timestamp', 'x-thinkflow-signature', 'x-thinkflow-signature-256']) {
    headers[name] = String(r.headers[name]);
  }
  return (await fetch(hookUrl, { method: 'POST', headers, body })).status;
}

describe("the README's webhook verifier", () => {
  it('accepts a real delivery; refuses it replayed more than 5 minutes later, tampered, or under another secret', async () => {
    const { job_id } = await h.submit({ task: 'say hello', webhook: hookUrl });
    await h.waitFinal(job_id);
    for (let i = 0; i < 100 && !received.some((r) => r.body.includes(job_id)); i++) await new Promise((r) => setTimeout(r, 100));
    const real = received.find((r) => r.body.includes(job_id))!;
    expect(real.accepted).toBe(true);
    const { deliveries } = await (await fetch(`${h.url}/v1/jobs/${job_id}/webhook-deliveries`)).json();
    expect(deliveries).toEqual([{ delivery_id: real.headers['x-thinkflow-delivery'], attempt: 1, at: expect.any(String), ok: true, status_code: 204 }]);

    expect(await replay(real, real.body.replace('succeeded', 'failed'))).toBe(401);
    expect(verify('another secret', real.headers, real.body)).toBe(false);
    // The same capture later: within 5 minutes it still passes (the delivery id then tells a repeat);
    // past them it is refused. Only Date is faked: the receiver and fetch run as usual.
    vi.useFakeTimers({ toFake: ['Date'] });
    const sentAt = Number(real.headers['x-thinkflow-timestamp']) * 1000;
    vi.setSystemTime(sentAt + 4 * 60_000);
    expect(await replay(real)).toBe(204);
    vi.setSystemTime(sentAt + 5 * 60_000 + 2000);
    expect(await replay(real)).toBe(401);
    expect(received.slice(-1)[0]).toMatchObject({ accepted: false });
  }, 60_000);
});
