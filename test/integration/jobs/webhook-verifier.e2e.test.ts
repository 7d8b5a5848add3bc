// Issue 20, "a captured webhook can be replayed": the README's verifier
// snippet, taken from README.md as written and run by a bare `node` (no
// dependencies, its own clock), accepts a real delivery of the service and
// refuses the same request replayed more than 5 minutes later (and a tampered
// body, and another secret). The receiver listens on 127.0.0.1, which
// webhooks reach only when THINKFLOW_WEBHOOK_ALLOW names it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, WEBHOOK_SECRET, type Harness } from './harness.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;

/** The code block between the README's `webhook-verifier` markers. */
function readmeSnippet(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const m = /<!-- webhook-verifier -->\s*```js\n([\s\S]*?)```\s*<!-- \/webhook-verifier -->/.exec(readme);
  if (!m) throw new Error('README.md has no webhook-verifier snippet between its markers');
  return m[1]!;
}

type Received = { headers: IncomingHttpHeaders; body: string };

const dir = mkdtempSync(join(tmpdir(), 'tf-verifier-'));
const verifierFile = join(dir, 'verify-thinkflow.mjs');
let h: Harness;
let receiver: Server;
let hookUrl = '';
const received: Received[] = [];

/**
 * The snippet's verdict on a request, in a fresh `node` whose clock reads
 * `nowMs` (a replay later on), exactly as a receiver would call it.
 */
function verify(r: Received, opts: { nowMs?: number; secret?: string; body?: string } = {}): boolean {
  const driver = [
    "import { readFileSync } from 'node:fs';",
    opts.nowMs === undefined ? '' : `Date.now = () => ${opts.nowMs};`,
    `const { verifyThinkFlowWebhook } = await import(${JSON.stringify(verifierFile)});`,
    "const input = JSON.parse(readFileSync(0, 'utf8'));",
    'process.stdout.write(String(verifyThinkFlowWebhook(input.secret, input.headers, input.body)));',
  ].join('\n');
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', driver], {
    input: JSON.stringify({ secret: opts.secret ?? WEBHOOK_SECRET, headers: r.headers, body: opts.body ?? r.body }), encoding: 'utf8', timeout: 30_000,
  });
  if (run.status !== 0) throw new Error(`the verifier did not run: ${run.stderr}`);
  return run.stdout === 'true';
}

beforeAll(async () => {
  const snippet = readmeSnippet();
  expect(snippet.split('\n').length).toBeLessThanOrEqual(20);
  writeFileSync(verifierFile, snippet);
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  h = await startHarness('verifier', [{ name: 'hello', match: 'say hello', delay_ms: 0, turns: [{ reasoning: '', text: 'hello' }] }], { THINKFLOW_WEBHOOK_ALLOW: '127.0.0.1' });
});
afterAll(async () => {
  receiver?.close();
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the README's webhook verifier", () => {
  it('accepts a real delivery; refuses it replayed more than 5 minutes later, tampered, or under another secret', async () => {
    const { job_id } = await h.submit({ task: 'say hello', webhook: hookUrl });
    await h.waitFinal(job_id);
    for (let i = 0; i < 100 && !received.some((r) => r.body.includes(job_id)); i++) await new Promise((r) => setTimeout(r, 100));
    const real = received.find((r) => r.body.includes(job_id))!;
    const { deliveries } = await (await fetch(`${h.url}/v1/jobs/${job_id}/webhook-deliveries`)).json();
    expect(deliveries).toEqual([{ delivery_id: real.headers['x-thinkflow-delivery'], attempt: 1, at: expect.any(String), ok: true, status_code: 204 }]);

    expect(verify(real)).toBe(true);
    expect(verify(real, { body: real.body.replace('succeeded', 'failed') })).toBe(false);
    expect(verify(real, { secret: 'another secret' })).toBe(false);
    // The same capture replayed later: within 5 minutes it still passes (the
    // delivery id then tells a repeat); past them it is refused.
    const sentAt = Number(real.headers['x-thinkflow-timestamp']) * 1000;
    expect(verify(real, { nowMs: sentAt + 4 * 60_000 })).toBe(true);
    expect(verify(real, { nowMs: sentAt + 5 * 60_000 + 2000 })).toBe(false);
  }, 60_000);
});
