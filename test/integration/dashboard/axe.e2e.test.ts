// Issue 24's accessibility acceptance in a real browser (Debian's Chromium via
// playwright-core) on the in-process service with the replay model: every
// view of the dashboard — sign-in, Approvals (pending cards, one opened with
// its context, the script it runs and a preview's output), Decided, Jobs, a
// job page with ledger rows and events, an unknown job — in the light and the
// dark scheme at 1366 px and 390 px: axe-core finds no violation at any
// impact (minor and moderate included) and nothing is wider than the screen.
// It also writes the screenshots of every view that the root README shows:
// THINKFLOW_SCREENSHOTS=docs refreshes the ones committed in docs/.
import { mkdirSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { OPERATOR_REVIEW, REVIEW_POLICY, REVIEW_TASK, thinkflowTranscript } from '../../../services/replay-model/scenarios.ts';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';
import { startHarness, type Harness } from '../jobs/harness.ts';
import { axeViolations, checkPagesAndClose, launch, pageErrors, signedIn } from './browser.ts';

const OP = 'op-axe-key-0001';
const SUB = 'sub-axe-key-0002';
const SHOTS = process.env.THINKFLOW_SCREENSHOTS ?? '.tmp/screenshots';
const SCHEMES = ['light', 'dark'] as const;
const SIZES = [{ width: 1366, height: 900 }, { width: 390, height: 844 }];

const SCRIPT = 'rm -rf ./build\nmkdir -p build\necho "billing $(date +%F)" > build/VERSION\ncurl -fsS -X POST https://deploy.example/billing\n';
const transcripts: TranscriptInput[] = [thinkflowTranscript(OPERATOR_REVIEW), {
  name: 'deploy', match: 'deploy the billing service', delay_ms: 0, chunk: 48,
  turns: [
    { text: `Writing the deploy script.\n<tf-write id="1" path="deploy.sh">\n${SCRIPT}</tf-write>\nThe script rebuilds build/ and posts the release; I will now run it.\n<tf-bash id="2" cmd="bash deploy.sh" />\n` },
    { text: 'Stopped.' },
  ],
}];

let h: Harness;
let browser: Browser;
let page: Page;
const jobs: Record<string, { job_id: string; session_id: string }> = {};
const auth = { authorization: `Bearer ${OP}` };

async function pendingOf(jobId: string): Promise<{ token: string; command_id: string }[]> {
  const res = await fetch(`${h.url}/v1/approvals?status=pending&job_id=${jobId}`, { headers: auth });
  return (await res.json()).approvals;
}

async function firstPending(jobId: string): Promise<{ token: string; command_id: string }> {
  for (let i = 0; i < 300; i++) {
    const [a] = await pendingOf(jobId);
    if (a) return a;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending approval for ${jobId}`);
}

async function decide(token: string, body: Record<string, string>): Promise<void> {
  const res = await fetch(`${h.url}/v1/approvals/${token}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
}

async function submit(key: string, body: Record<string, unknown>): Promise<{ job_id: string; session_id: string }> {
  const res = await fetch(`${h.url}/v1/jobs`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status).toBe(202);
  return res.json();
}

const overflow = (p: Page) => p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
/** Toasts come and go with decisions; they stay out of the pictures. */
const hideToast = (p: Page) => p.evaluate(() => { document.getElementById('toast')!.style.visibility = 'hidden'; });

/** The view as it is now, in both schemes at both widths: no overflow, no axe violation at any impact. */
async function checkEverywhere(p: Page, view: string, shot?: (scheme: string, width: number) => Promise<void>): Promise<void> {
  for (const scheme of SCHEMES) {
    await p.emulateMedia({ colorScheme: scheme });
    for (const size of SIZES) {
      await p.setViewportSize(size);
      expect.soft([view, scheme, size.width, 'overflow', await overflow(p)]).toEqual([view, scheme, size.width, 'overflow', 0]);
      expect.soft([view, scheme, size.width, await axeViolations(p)]).toEqual([view, scheme, size.width, []]);
      await shot?.(scheme, size.width);
    }
  }
  await p.emulateMedia({ colorScheme: 'light' });
  await p.setViewportSize(SIZES[0]!);
}

beforeAll(async () => {
  h = await startHarness('dash-axe', transcripts, { THINKFLOW_API_KEYS: `${OP}:operator:olga,${SUB}:submitter:sam` }, SUB);
  browser = await launch();
  mkdirSync(SHOTS, { recursive: true });
}, 180_000);

checkPagesAndClose(() => [browser, h]);

describe('every view, light and dark, 1366 and 390 px: no axe violation at any impact, no overflow', () => {
  it('sign-in', async () => {
    const context = await browser.newContext({ viewport: SIZES[0]! });
    const p = await context.newPage();
    p.on('pageerror', (e) => pageErrors.push(`[sign-in] ${e.message}`));
    await p.goto(`${h.url}/dashboard`);
    await p.locator('#signin-form').waitFor();
    await checkEverywhere(p, 'sign-in', async (scheme, width) => {
      if (scheme === 'light' && width === 1366) await p.screenshot({ path: `${SHOTS}/dashboard-signin.png` });
    });
    await context.close();
  }, 60_000);

  it('a finished job (ledger, events, approvals) makes the history; then Approvals with pending cards, one opened with its context, script and preview', async () => {
    page = (await signedIn(browser, h.url, OP, SIZES[0]!)).page;
    // A finished job: three changes approved, the check rejected with a reason.
    const done = await submit(SUB, { task: REVIEW_TASK, approval: 'on-request', policy: REVIEW_POLICY });
    jobs.done = done;
    for (;;) {
      const a = await Promise.race([firstPending(done.job_id), h.waitFinal(done.job_id).then(() => null)]);
      if (!a) break;
      await decide(a.token, a.command_id === '4' ? { decision: 'reject', reason: 'the plan is enough; no need to check it' } : { decision: 'approve' });
      await expect.poll(async () => (await pendingOf(done.job_id)).some((x) => x.token === a.token)).toBe(false);
    }
    expect((await h.waitFinal(done.job_id)).status).toMatch(/succeeded|failed/);

    // Pending: a write of the same scenario, and two deploy scripts told apart by their tasks.
    jobs.review = await submit(SUB, { task: REVIEW_TASK, approval: 'on-request', policy: REVIEW_POLICY });
    jobs.staging = await submit(SUB, { task: 'Deploy the billing service to staging\nUse the blue slot.\nCheck the health page.\nThen report back.', approval: 'on-request', metadata: { ticket: 'OPS-9', team: 'billing' } });
    jobs.prod = await submit(SUB, { task: 'Deploy the billing service to prod', approval: 'on-request' });
    for (const j of ['review', 'staging', 'prod']) await firstPending(jobs[j]!.job_id);

    await page.goto(`${h.url}/dashboard#/approvals`);
    await expect.poll(() => page.locator('#approval-groups article.card').evaluateAll((cs) => cs.map((c) => c.closest('section.group')?.getAttribute('data-job')).sort()), { timeout: 20_000, message: `cards by job (the finished one: ${done.job_id})` })
      .toEqual([jobs.review.job_id, jobs.staging.job_id, jobs.prod.job_id].sort());
    // The finished job's decided notices leave a few seconds after their outcome.
    await expect.poll(() => page.locator('#approval-groups .card-decided').count(), { timeout: 20_000 }).toBe(0);
    await hideToast(page);
    await checkEverywhere(page, 'approvals', async (scheme, width) => {
      if (scheme === 'light' && width === 1366) await page.screenshot({ path: `${SHOTS}/dashboard-approvals.png` });
      if (scheme === 'light' && width === 390) await page.screenshot({ path: `${SHOTS}/dashboard-approvals-390.png` });
    });

    // One card opened: the task, metadata, the agent's words, deploy.sh with its lines, and a preview.
    const card = page.locator(`#approval-groups section.group[data-job="${jobs.staging.job_id}"] article.card`);
    await card.locator('button.more').click();
    await card.locator('.indirect-content').waitFor();
    await card.locator('.task-all summary').click();
    await card.locator('.preview-btn').click();
    await card.locator('.preview-stdout, .preview-stderr, .preview-reason').first().waitFor({ timeout: 90_000 });
    await card.locator('.preview-changes > li summary').first().click().catch(() => undefined);
    await checkEverywhere(page, 'approvals (a card opened)', async (scheme, width) => {
      if (width !== 1366) return;
      // The opened card whole (it needs its height); in dark, the top of the view with that card open.
      if (scheme === 'light') await card.screenshot({ path: `${SHOTS}/dashboard-approval-card.png` });
      else {
        await page.evaluate(() => window.scrollTo(0, 0));
        await page.screenshot({ path: `${SHOTS}/dashboard-approvals-dark.png` });
      }
    });
  }, 240_000);

  it('Decided', async () => {
    await page.goto(`${h.url}/dashboard#/decided`);
    await expect.poll(() => page.locator('table.decided tbody tr').count(), { timeout: 15_000 }).toBeGreaterThanOrEqual(4);
    await hideToast(page);
    await checkEverywhere(page, 'decided', async (scheme, width) => {
      if (scheme === 'light' && width === 1366) await page.screenshot({ path: `${SHOTS}/dashboard-decided.png` });
    });
  }, 60_000);

  it('Jobs', async () => {
    await page.goto(`${h.url}/dashboard#/jobs`);
    await expect.poll(() => page.locator('table.jobs tbody tr').count(), { timeout: 15_000 }).toBe(4);
    await hideToast(page);
    await checkEverywhere(page, 'jobs', async (scheme, width) => {
      if (scheme === 'light' && width === 1366) await page.screenshot({ path: `${SHOTS}/dashboard-jobs.png` });
    });
  }, 60_000);

  it('a job page with its ledger, events and approvals', async () => {
    await page.goto(`${h.url}/dashboard#/jobs/${jobs.done!.job_id}`);
    await page.locator('#event-log li.ev-job_finished').waitFor({ timeout: 20_000 });
    await expect.poll(() => page.locator('table.ledger tbody tr').count()).toBe(4);
    await hideToast(page);
    await checkEverywhere(page, 'job page', async (scheme, width) => {
      // The whole page: its figures, events, approvals, ledger and files belong in one picture.
      if (scheme === 'light' && width === 1366) await page.screenshot({ path: `${SHOTS}/dashboard-job.png`, fullPage: true });
    });
    // A job that still waits: its pending approvals with Approve / Reject… and Cancel.
    await page.goto(`${h.url}/dashboard#/jobs/${jobs.staging!.job_id}`);
    await page.locator('.job-actions button', { hasText: /^Cancel/ }).first().waitFor({ timeout: 20_000 });
    await expect.poll(() => page.locator('table.ledger tbody tr').count()).toBe(2);
    await checkEverywhere(page, 'waiting job page');
  }, 90_000);

  it('no such job', async () => {
    await page.goto(`${h.url}/dashboard#/jobs/job_doesnotexist0`);
    await page.locator('#no-such-job').waitFor({ timeout: 15_000 });
    await checkEverywhere(page, 'no such job', async (scheme, width) => {
      if (scheme === 'light' && width === 1366) await page.screenshot({ path: `${SHOTS}/dashboard-no-such-job.png` });
    });
    for (const j of ['review', 'staging', 'prod']) for (const a of await pendingOf(jobs[j]!.job_id)) await decide(a.token, { decision: 'reject' });
  }, 60_000);
});
