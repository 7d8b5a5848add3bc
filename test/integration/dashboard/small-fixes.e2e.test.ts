// Issue 24's "smaller issues seen in the same run", each one in a real
// browser (Debian's Chromium via playwright-core) on the in-process service
// with the replay model: what a card and a job page show, in words; focus,
// narrow screens, dark mode and axe-core on every view; what a submitter sees.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { OPERATOR_REVIEW, REVIEW_POLICY, REVIEW_TASK, thinkflowTranscript } from '../../../services/replay-model/scenarios.ts';
import { startHarness, type Harness } from '../jobs/harness.ts';
import { client, newSession } from '../pipeline/helpers.ts';
import { axeViolations, checkPagesAndClose, launch, signedIn } from './browser.ts';

const OP = 'op-small-key-0001';
// Pictures for debugging only; the ones committed in docs/ come from axe.e2e.test.ts (THINKFLOW_SCREENSHOTS=docs).
const SHOTS = '.tmp/screenshots';
const SUB = 'sub-small-key-0002';
// Enum values that must never reach the page as they are.
const RAW_ENUMS = /\b(awaiting_approval|approve_for_session|approve_edited|turn_started|command_queued)\b/;

let h: Harness;
let browser: Browser;
let page: Page;
let job: { job_id: string; session_id: string };
let sid: string;

async function tokenOf(match: (a: any) => boolean): Promise<string> {
  for (let i = 0; i < 150; i++) {
    const res = await fetch(`${h.url}/v1/approvals`, { headers: { authorization: `Bearer ${OP}` } });
    const a = (await res.json()).approvals.find(match);
    if (a) return a.token;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('no such pending approval');
}

async function decideRest(token: string, decision = 'approve'): Promise<void> {
  const res = await fetch(`${h.url}/v1/approvals/${token}`, {
    method: 'POST', headers: { authorization: `Bearer ${OP}`, 'content-type': 'application/json' }, body: JSON.stringify({ decision }),
  });
  expect(res.status).toBe(200);
}

const cardOf = (p: Page, token: string) => p.locator(`#approval-groups article.card[data-token="${token}"]`);
const overflow = (p: Page) => p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

beforeAll(async () => {
  h = await startHarness('dash-small', [thinkflowTranscript(OPERATOR_REVIEW)], { THINKFLOW_API_KEYS: `${OP}:operator:olga,${SUB}:submitter:sam` }, SUB);
  browser = await launch();
  page = (await signedIn(browser, h.url, OP)).page;
}, 180_000);

checkPagesAndClose(() => [browser, h]);

describe('the smaller issues of the second pass', () => {
  it('a card lists only the ledger entries before its command, and its times carry their zone', async () => {
    job = await h.submit({ task: REVIEW_TASK, approval: 'on-request', policy: REVIEW_POLICY });
    const first = await tokenOf((a) => a.job_id === job.job_id && a.command_id === '1');
    const card = cardOf(page, first);
    await card.waitFor({ timeout: 15_000 });
    // Commands 2-4 of the same turn are queued behind it: not "last entries" of this one.
    expect((await h.ledger(job.session_id)).length).toBe(4);
    expect(await card.locator('.recent-wrap summary').textContent()).toBe("Session's last ledger entries (0)");
    expect(await card.locator('.meta').textContent()).toMatch(/asked \d{1,2}:\d{2}:\d{2}(\s?[AP]M)? (UTC|GMT[+-]\d+|[A-Z]{3,5})\b/);

    await decideRest(first);
    const second = await tokenOf((a) => a.job_id === job.job_id && a.command_id === '2');
    await cardOf(page, second).waitFor({ timeout: 15_000 });
    expect(await cardOf(page, second).locator('table.recent tbody tr td:nth-child(2)').allTextContents()).toEqual(['1']);
    expect(await cardOf(page, second).locator('table.recent tbody').textContent()).toContain('approved by olga');
  }, 60_000);

  it('a bash part is shown as written, and "Matched rules" names the default that stopped it', async () => {
    const sub = client(h.url, SUB);
    sid = await newSession(sub, { approval: 'on-request' });
    // shell-quote would read these back as `--separator\=\,` and `'my notes.txt'`.
    const cmd = 'ls -la && tac --separator=, "my notes.txt"';
    // Sent, not awaited: it waits for the operator (rejected below).
    const held = sub.text(`/v1/sessions/${sid}/commands`, `<tf-bash id="1" cmd="${cmd.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}" />`);
    held.catch(() => undefined);
    const token = await tokenOf((a) => a.session_id === sid);
    const card = cardOf(page, token);
    await card.waitFor({ timeout: 15_000 });
    const rows = card.locator('table.segments tbody tr');
    expect(await rows.locator('td:nth-child(2)').allTextContents()).toEqual(['ls -la', 'tac --separator=, "my notes.txt"']);
    expect(await rows.locator('td:nth-child(3)').allTextContents()).toEqual(['allow', 'prompt']);
    // The allow rule of `ls` matched, but the stop came from bash's default prompt: both are listed.
    const rules = card.locator('.why ul.rules > li');
    expect(await rules.allTextContents()).toEqual([expect.stringMatching(/^allow inspect-files/), expect.stringMatching(/^prompt bash default \([^)]+\): no rule decided this/)]);
    expect(await rows.nth(1).locator('li.default-rule').textContent()).toMatch(/^prompt bash default/);
    await decideRest(token, 'reject');
    expect((await held).status).toBe(200);
  }, 60_000);

  it('a waiting job page counts as its ledger does, in words, and its events box follows new events unless scrolled up', async () => {
    await page.goto(`${h.url}/dashboard#/jobs/${job.job_id}`);
    await expect.poll(() => page.locator('table.ledger tbody tr').count()).toBe(4);
    await expect.poll(() => page.textContent('dd[data-fig="commands"]')).toBe('4 total: 1 succeeded, 1 awaiting approval, 2 queued');
    expect(await page.textContent('dd[data-fig="turns"]')).toBe('1 (turn 1 in progress)');
    expect(await page.textContent('.figures dd.status')).toBe('awaiting approval');
    expect(await page.locator('#ledger-filter option[value="awaiting_approval"]').textContent()).toBe('awaiting approval');

    const log = page.locator('#event-log');
    const atEnd = () => log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight < 2);
    await log.evaluate((el) => { el.style.maxHeight = '5em'; el.scrollTop = el.scrollHeight; });
    const before = Number(await log.getAttribute('data-events'));
    await decideRest(await tokenOf((a) => a.job_id === job.job_id && a.command_id === '2'), 'approve_for_session');
    await expect.poll(async () => Number(await log.getAttribute('data-events'))).toBeGreaterThan(before + 2);
    await expect.poll(atEnd).toBe(true);
    expect(await log.evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true);
    // Scrolled up to read: new events do not pull the box down.
    await log.evaluate((el) => { el.scrollTop = 0; });
    const seen = Number(await log.getAttribute('data-events'));
    await decideRest(await tokenOf((a) => a.job_id === job.job_id && a.command_id === '4'), 'reject');
    await expect.poll(async () => Number(await log.getAttribute('data-events'))).toBeGreaterThan(seen);
    expect(await log.evaluate((el) => el.scrollTop)).toBe(0);
    await h.waitFinal(job.job_id);
    await page.locator('#event-log li.ev-job_finished').waitFor({ timeout: 20_000 });
    expect(await page.locator('main').innerText()).not.toMatch(RAW_ENUMS);
    expect(await page.locator('table.approvals').innerText()).toContain('approved for session');
  }, 90_000);

  it('an unknown job says so, with no empty sections and no stale connection line', async () => {
    await page.goto(`${h.url}/dashboard#/jobs/${job.job_id}`);
    await expect.poll(() => page.textContent('#conn')).toMatch(/^Job job_\w+: (live|finished)/);
    await page.goto(`${h.url}/dashboard#/jobs/job_doesnotexist0`);
    await expect.poll(() => page.textContent('#view h1')).toBe('No such job');
    expect(await page.textContent('#no-such-job')).toContain('There is no job job_doesnotexist0');
    expect(await page.locator('#event-log, table.ledger, .figures, section h2').count()).toBe(0);
    expect(await page.textContent('#conn')).toBe('');
  }, 30_000);

  it('every view: no horizontal overflow at 390 px, no axe violations (any impact) in light and dark at 1366 and 390 px', async () => {
    const pendingJob = await h.submit({ task: REVIEW_TASK, approval: 'on-request', policy: REVIEW_POLICY });
    const token = await tokenOf((a) => a.job_id === pendingJob.job_id);
    const views: [string, string][] = [
      ['approvals', `article.card[data-token="${token}"]`], ['jobs', 'table.jobs tbody tr'], [`jobs/${job.job_id}`, '#event-log li.ev-job_finished'],
      ['jobs/job_doesnotexist0', '#no-such-job'],
    ];
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const width of [1366, 390]) {
        await page.setViewportSize({ width, height: 844 });
        for (const [hash, ready] of views) {
          await page.goto(`${h.url}/dashboard#/${hash}`);
          await page.locator(ready).first().waitFor({ timeout: 15_000 });
          if (width === 390) expect([hash, await overflow(page)]).toEqual([hash, 0]);
          if (hash === 'approvals') await page.screenshot({ path: `${SHOTS}/dashboard-approvals-${scheme}-${width}.png` });
          expect([hash, scheme, width, await axeViolations(page)]).toEqual([hash, scheme, width, []]);
        }
      }
    }
    // An opened card too (its segments, diff and tables).
    await page.goto(`${h.url}/dashboard#/approvals`);
    await cardOf(page, token).locator('button.more').click();
    expect(await overflow(page)).toBe(0);
    expect(await axeViolations(page)).toEqual([]);
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 800 });
    await decideRest(token, 'reject');
  }, 180_000);

  it('a submitter has no Approvals link, no count and no alerts', async () => {
    const { page: sam, context } = await signedIn(browser, h.url, SUB);
    const asked: string[] = [];
    sam.on('request', (r) => asked.push(new URL(r.url()).pathname));
    await sam.waitForURL(/#\/jobs$/);
    await sam.locator('table.jobs tbody tr').first().waitFor();
    expect(await sam.locator('nav a[data-nav="approvals"]').isVisible()).toBe(false);
    expect(await sam.locator('#pending-count').isVisible()).toBe(false);
    expect(await sam.locator('#alerts').isVisible()).toBe(false);
    await sam.reload();
    await sam.locator('table.jobs tbody tr').first().waitFor();
    expect(asked).not.toContain('/v1/approvals/events');
    expect(await sam.title()).toBe('ThinkFlow dashboard');
    await context.close();
  }, 30_000);
});
