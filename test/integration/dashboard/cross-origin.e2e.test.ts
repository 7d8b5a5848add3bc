// Issue 18, dev mode safe on a laptop, in a real browser (Debian's Chromium):
// a page from another origin (another 127.0.0.1 port: cross-origin, still
// loopback) tries to create sessions and jobs with forms and no-cors fetches;
// a DNS-rebinding name that resolves to 127.0.0.1 gets no answer; the
// dashboard itself still decides approvals in dev mode.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { OPERATOR_REVIEW, REVIEW_POLICY, REVIEW_TASK, thinkflowTranscript } from '../../../services/replay-model/scenarios.ts';
import { startHarness, type Harness } from '../jobs/harness.ts';
import { CHROMIUM, CHROMIUM_ARGS, checkPagesAndClose, signedIn } from './browser.ts';

const REBIND = 'rebind.test';

let h: Harness;
let browser: Browser;
let attacker: Server;
let attackerUrl = '';

/** The attack: every way a page can POST to another origin without a preflight. */
function attackPage(api: string): string {
  const job = JSON.stringify({ task: REVIEW_TASK, approval: 'never' });
  return `<!doctype html><meta charset="utf-8"><title>cute cats</title>
<iframe name="f1"></iframe><iframe name="f2"></iframe>
<form id="s" method="POST" action="${api}/v1/sessions" enctype="text/plain" target="f1"><input name='{"project":"x","a":"' value='"}'></form>
<form id="j" method="POST" action="${api}/v1/jobs" enctype="text/plain" target="f2"><input name='${job.slice(0, -1)},"a":"' value='"}'></form>
<script>
const API = ${JSON.stringify(api)};
const loaded = [...document.querySelectorAll('iframe')].map((f) => new Promise((r) => f.addEventListener('load', r, { once: true })));
window.results = [];
(async () => {
  document.getElementById('s').submit();
  document.getElementById('j').submit();
  for (const [path, body] of [['/v1/sessions', '{}'], ['/v1/jobs', ${JSON.stringify(job)}]]) {
    // A Blob without a type sends no Content-Type: the API reads such a body as JSON.
    for (const init of [{ body: new Blob([body]) }, { body, headers: { 'content-type': 'text/plain' } }, { body: new URLSearchParams({ x: body }) }]) {
      try { await fetch(API + path, { method: 'POST', mode: 'no-cors', credentials: 'include', ...init }); results.push('sent'); }
      catch (e) { results.push('error ' + e.message); }
    }
    // With the dashboard's header: needs a preflight, which is refused.
    try { const r = await fetch(API + path, { method: 'POST', headers: { 'x-thinkflow-client': 'dashboard', 'content-type': 'application/json' }, body }); results.push('read ' + r.status); }
    catch (e) { results.push('blocked'); }
  }
  await Promise.all(loaded);
  window.done = true;
})();
</script>`;
}

async function counts(): Promise<{ sessions: number; jobs: number }> {
  const { redis, keys } = h.service.runtime;
  const jobs = (await (await fetch(`${h.url}/v1/jobs`)).json()).jobs.length;
  return { sessions: await redis.zcard(keys.sessions()), jobs };
}

beforeAll(async () => {
  h = await startHarness('xorigin', [thinkflowTranscript(OPERATOR_REVIEW)]); // dev mode: no keys
  attacker = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(attackPage(h.url));
  });
  await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
  // The rebinding name resolves to 127.0.0.1 inside this browser only: no DNS, no other address.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, `--host-resolver-rules=MAP ${REBIND} 127.0.0.1`], headless: true });
}, 180_000);

checkPagesAndClose(() => [browser, { close: () => new Promise<void>((r) => attacker.close(() => r())) }, h]);

describe('dev mode against other origins, in a browser', () => {
  it('a page on another 127.0.0.1 port creates no session and no job (forms, no-cors fetches, a fetch with the header)', async () => {
    const before = await counts();
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(attackerUrl);
    await page.waitForFunction(() => (window as any).done === true, undefined, { timeout: 30_000 });
    const results: string[] = await page.evaluate(() => (window as any).results);
    expect(results).toHaveLength(8);
    expect(results.filter((r) => r.startsWith('read '))).toEqual([]); // the preflighted fetches never got through
    await ctx.close();
    expect(await counts()).toEqual(before);
    // The same count sees a curl-like request at once.
    expect((await fetch(`${h.url}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(201);
    expect((await counts()).sessions).toBe(before.sessions + 1);
  }, 60_000);

  it('a DNS-rebinding name (resolving to 127.0.0.1) gets 421 for the page and its requests', async () => {
    const port = new URL(h.url).port;
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    const res = await page.goto(`http://${REBIND}:${port}/dashboard`);
    expect(res?.status()).toBe(421);
    const status = await page.evaluate(async () => (await fetch('/v1/sessions', { method: 'POST', headers: { 'x-thinkflow-client': 'dashboard', 'content-type': 'application/json' }, body: '{}' })).status);
    expect(status).toBe(421);
    await ctx.close();
  }, 30_000);

  it('the dashboard still works in dev mode: any text signs in, an approval is decided', async () => {
    const { page } = await signedIn(browser, h.url, 'anything');
    const submitted = await fetch(`${h.url}/v1/jobs`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task: REVIEW_TASK, approval: 'on-request', policy: REVIEW_POLICY }),
    });
    expect(submitted.status).toBe(202);
    const job: { job_id: string; session_id: string } = await submitted.json();
    const card = (p: Page, id: string) => p.locator(`#approval-groups section.group[data-job="${job.job_id}"] article.card`, { has: p.locator(`.meta:text-matches("^command ${id} ")`) });
    await card(page, '1').waitFor({ timeout: 30_000 });
    await card(page, '1').locator('button.approve').click();
    await card(page, '2').waitFor({ timeout: 30_000 });
    const ledger = await h.ledger(job.session_id);
    expect(ledger[0]).toMatchObject({ id: '1', status: 'succeeded', approval: { decision: 'approve', decided_by: 'dev' } });
    await page.context().close();
  }, 90_000);
});
