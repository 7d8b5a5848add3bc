// Issue 24, "never miss a request", in a real browser (Debian's Chromium via
// playwright-core) on the in-process service with the replay model: the
// pending count on every view, sound and desktop notifications, the outage
// banner with decisions paused until a fresh snapshot, and compact cards (4 of
// 7 on a 1366×900 screen). The tests run in order and build on each other's jobs.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { OPERATOR_REVIEW, REVIEW_POLICY, REVIEW_TASK, thinkflowTranscript } from '../../../services/replay-model/scenarios.ts';
import { startHarness, type Harness } from '../jobs/harness.ts';
import { checkPagesAndClose, launch, signedIn, startProxy } from './browser.ts';
import { readJobEvents } from './events.ts';

const OP = 'op-attn-key-0001';
const SUB = 'sub-attn-key-0002';
// Pictures for debugging only; the ones committed in docs/ come from axe.e2e.test.ts (THINKFLOW_SCREENSHOTS=docs).
const SHOTS = '.tmp/screenshots';

let h: Harness;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let browser: Browser;
let page: Page;
const jobs: { job_id: string; session_id: string }[] = [];

/** Runs in the page before its scripts: records every Notification made and every tone played. */
function recordAlerts(): void {
  const w = window as any;
  const Real = w.Notification;
  w.__notes = [];
  w.__tones = 0;
  function Recorded(title: string, opts: { body?: string } = {}) {
    w.__notes.push({ title, body: opts.body ?? '' });
    return new Real(title, opts);
  }
  Object.defineProperty(Recorded, 'permission', { get: () => Real.permission });
  (Recorded as any).requestPermission = (...a: unknown[]) => Real.requestPermission(...a);
  w.Notification = Recorded;
  const RealAudio = w.AudioContext;
  w.AudioContext = class extends RealAudio {
    createOscillator() { w.__tones += 1; return super.createOscillator(); }
  };
}

async function review(): Promise<{ job_id: string; session_id: string }> {
  const j = await h.submit({ task: REVIEW_TASK, approval: 'on-request', policy: REVIEW_POLICY });
  jobs.push(j);
  return j;
}

async function pending(): Promise<any[]> {
  const res = await fetch(`${h.url}/v1/approvals`, { headers: { authorization: `Bearer ${OP}` } });
  return (await res.json()).approvals;
}

async function tokenOf(jobId: string, commandId: string): Promise<string> {
  for (let i = 0; i < 150; i++) {
    const a = (await pending()).find((x) => x.job_id === jobId && x.command_id === commandId);
    if (a) return a.token;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending approval for ${jobId} command ${commandId}`);
}

async function decideRest(token: string, decision = 'approve'): Promise<void> {
  const res = await fetch(`${h.url}/v1/approvals/${token}`, {
    method: 'POST', headers: { authorization: `Bearer ${OP}`, 'content-type': 'application/json' }, body: JSON.stringify({ decision }),
  });
  expect(res.status).toBe(200);
}

const byToken = (p: Page, token: string) => p.locator(`#approval-groups article.card[data-token="${token}"]`);

beforeAll(async () => {
  h = await startHarness('dash-attention', [thinkflowTranscript(OPERATOR_REVIEW)], { THINKFLOW_API_KEYS: `${OP}:operator:olga,${SUB}:submitter:sam` }, SUB);
  proxy = await startProxy(h.url);
  browser = await launch();
}, 180_000);

checkPagesAndClose(() => [browser, proxy, h]);

describe('never miss a request', () => {
  it('on the Jobs view a new request updates the title and navigation count within 1 s and raises a notification and a tone once turned on; none for what was pending at load', async () => {
    const first = await review();
    await tokenOf(first.job_id, '1');
    page = (await signedIn(browser, proxy.url, OP, { width: 1280, height: 800 }, { permissions: ['notifications'], init: recordAlerts })).page;
    await expect.poll(() => page.title()).toBe('(1) ThinkFlow dashboard');
    // Off by default; turned on by the operator's click, kept for this browser.
    expect(await page.locator('#alert-notify').isChecked()).toBe(false);
    expect(await page.locator('#alert-sound').isChecked()).toBe(false);
    await page.locator('#alert-notify').check();
    await page.locator('#alert-sound').check();
    expect(JSON.parse((await page.evaluate(() => localStorage.getItem('thinkflow.alerts')))!)).toEqual({ sound: true, notify: true });
    const tonesBefore = await page.evaluate(() => (window as any).__tones);
    expect(tonesBefore).toBeGreaterThan(0);

    await page.click('nav a[data-nav="jobs"]');
    await page.locator('table.jobs tbody tr').first().waitFor();
    expect(await page.locator('#pending-count').isVisible()).toBe(true);
    expect(await page.evaluate(() => (window as any).__notes)).toEqual([]);

    const second = await review();
    await expect.poll(() => page.title(), { timeout: 15_000, interval: 20 }).toBe('(2) ThinkFlow dashboard');
    const seenAt = Date.now();
    const events = await readJobEvents(h.url, SUB, second.job_id, { until: (e) => e.type === 'approval_requested' });
    const asked = events.find((e) => e.type === 'approval_requested')!;
    const latency = seenAt - Date.parse(asked.data.at);
    process.stdout.write(`dashboard: title count on the Jobs view ${latency} ms after the request\n`);
    expect(latency).toBeLessThan(1000);
    expect(await page.textContent('#pending-count')).toBe('2');
    await expect.poll(() => page.evaluate(() => (window as any).__notes)).toEqual([
      { title: 'ThinkFlow: approval requested', body: expect.stringContaining(second.job_id) },
    ]);
    expect(await page.evaluate(() => (window as any).__tones)).toBeGreaterThan(tonesBefore);

    // A reload shows both as already pending: no notification for them; the switches are remembered.
    await page.reload();
    await expect.poll(() => page.title()).toBe('(2) ThinkFlow dashboard');
    await new Promise((r) => setTimeout(r, 1000));
    expect(await page.evaluate(() => (window as any).__notes)).toEqual([]);
    expect(await page.locator('#alert-notify').isChecked()).toBe(true);
  }, 90_000);

  it('a cut connection shows a banner within 2 s and pauses deciding; a card decided meanwhile is gone after the fresh snapshot', async () => {
    await page.click('nav a[data-nav="approvals"]');
    const [a, b] = jobs;
    const tokenA = await tokenOf(a!.job_id, '1');
    const tokenB = await tokenOf(b!.job_id, '1');
    await byToken(page, tokenA).waitFor();
    await byToken(page, tokenB).waitFor();
    expect(await page.locator('#approval-groups button.approve:enabled').count()).toBe(2);
    const posts: string[] = [];
    page.on('request', (r) => { if (r.method() === 'POST' && r.url().includes('/v1/approvals/')) posts.push(r.url()); });

    proxy.hold(true);
    const cut = Date.now();
    expect(proxy.dropAll()).toBeGreaterThan(0);
    const banner = page.locator('#outage[role="alert"]');
    await expect.poll(() => banner.textContent(), { timeout: 2000, interval: 20 }).toMatch(/^Live connection lost \(Approvals\): reconnecting\. .*deciding is paused/);
    process.stdout.write(`dashboard: outage banner ${Date.now() - cut} ms after the cut\n`);
    await expect.poll(() => page.locator('#approval-groups button.approve:enabled').count()).toBe(0);
    expect(await page.locator('button.batch-approve').isDisabled()).toBe(true);

    // Decided by REST while the page cannot hear it: still shown, but nothing can be sent from it.
    await decideRest(tokenA);
    await byToken(page, tokenA).focus();
    await page.keyboard.press('a');
    expect(await byToken(page, tokenA).count()).toBe(1);
    expect(posts).toEqual([]);

    proxy.hold(false);
    await expect.poll(() => byToken(page, tokenA).count(), { timeout: 20_000 }).toBe(0);
    await expect.poll(() => banner.textContent()).toBe('');
    expect(await byToken(page, tokenB).locator('button.approve').isEnabled()).toBe(true);
    expect(await page.locator('#approval-groups article.card button.approve:disabled').count()).toBe(0);
    await expect.poll(() => page.textContent('#conn')).toMatch(/Approvals: live again \(current state reloaded\)/);
  }, 90_000);

  it('compact cards: at least 4 of 7 fit a 1366×900 screen; a click or the keyboard opens one; A moves focus to the next card', async () => {
    while (jobs.length < 7) await review();
    await expect.poll(async () => (await pending()).length, { timeout: 30_000 }).toBe(7);
    const { page: wide } = await signedIn(browser, proxy.url, OP, { width: 1366, height: 900 });
    const cards = wide.locator('#approval-groups article.card');
    await expect.poll(() => cards.count(), { timeout: 15_000 }).toBe(7);
    const boxes = await cards.evaluateAll((els) => els.map((e) => e.getBoundingClientRect().bottom));
    const headerBottom = await wide.locator('header.top').evaluate((e) => e.getBoundingClientRect().bottom);
    process.stdout.write(`dashboard: card bottoms at 1366×900: ${boxes.map(Math.round).join(', ')} (header ends at ${Math.round(headerBottom)})\n`);
    await wide.screenshot({ path: `${SHOTS}/dashboard-compact.png` });
    for (const bottom of boxes.slice(0, 4)) expect(bottom).toBeLessThanOrEqual(900);
    expect(boxes[0]).toBeGreaterThan(headerBottom);

    // Compact: the details are there but hidden until opened.
    const one = cards.nth(0);
    expect(await one.locator('section.what').isVisible()).toBe(false);
    await one.locator('.gist').click();
    expect(await one.locator('section.what').isVisible()).toBe(true);
    await one.locator('button.more').click();
    expect(await one.locator('section.what').isVisible()).toBe(false);
    // The keyboard opens the card it reaches and closes the one it leaves.
    await one.focus();
    await wide.keyboard.press('j');
    await expect.poll(() => cards.nth(1).getAttribute('class')).toMatch(/\bopen\b/);
    expect(await cards.nth(1).locator('section.what').isVisible()).toBe(true);
    await wide.keyboard.press('j');
    await expect.poll(() => cards.nth(1).getAttribute('class')).not.toMatch(/\bopen\b/);

    // A on a focused card approves it, and the focus goes on to the next card (never to <body>).
    const target = cards.nth(2);
    const token = await target.getAttribute('data-token');
    const next = await cards.nth(3).getAttribute('data-token');
    expect(await target.evaluate((e) => e === document.activeElement)).toBe(true);
    await wide.keyboard.press('a');
    await expect.poll(() => byToken(wide, token!).count()).toBe(0);
    await expect.poll(() => wide.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.token ?? document.activeElement?.tagName)).toBe(next);
    await wide.context().close();
  }, 120_000);
});
