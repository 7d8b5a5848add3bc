// Issue 24, "History and outcomes", in a real browser (Debian's Chromium via
// playwright-core) against the in-process service on real Redis and Docker
// with the replay model: a decided card says what was decided and what the
// command did before it leaves; the "Decided" view lists answers with their
// outcomes and filters them; a job page lets an operator approve its pending
// commands and cancel it (a submitter sees neither). The test policy
// (helpers.ts): bash `rm` prompts.
import { mkdirSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startHarness, type Harness } from '../jobs/harness.ts';
import { policyDir } from '../pipeline/helpers.ts';
import { axeViolations, checkPagesAndClose, launch, signedIn } from './browser.ts';

const ALICE = 'op-alice-decided-1';
const BOB = 'op-bob-decided-002';
const SAM = 'sub-sam-decided-03';
const KEYS = `${ALICE}:operator:alice,${BOB}:operator:bob,${SAM}:submitter:sam`;
// Pictures for debugging only; the ones committed in docs/ come from axe.e2e.test.ts (THINKFLOW_SCREENSHOTS=docs).
const SHOTS = '.tmp/screenshots';
const TASK = 'Decided view check: remove the two stale files.';

let h: Harness;
let browser: Browser;
let alice: Page;
const jobs: Record<string, { job_id: string; session_id: string }> = {};

async function pending(jobId: string, id: string): Promise<{ token: string }> {
  for (let i = 0; i < 300; i++) {
    const res = await fetch(`${h.url}/v1/approvals?status=pending&job_id=${jobId}`, { headers: { authorization: `Bearer ${ALICE}` } });
    const hit = ((await res.json()) as { approvals: { token: string; command_id: string }[] }).approvals.find((a) => a.command_id === id);
    if (hit) return hit;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending approval for ${jobId} command ${id}`);
}

const group = (page: Page, job: string) => page.locator(`#approval-groups section.group[data-job="${jobs[job]!.job_id}"]`);

beforeAll(async () => {
  h = await startHarness('decided', [{
    name: 'decided', match: 'decided view check', flow: 'thinkflow',
    turns: [
      { reasoning: 'Both files are stale.\n<tf-bash id="1" cmd="rm -f one.txt" />\n<tf-bash id="2" cmd="rm -f two.txt" />\n', text: '' },
      { reasoning: '', text: 'Both stale files are gone.' },
    ],
  }], { THINKFLOW_API_KEYS: KEYS, THINKFLOW_POLICY_DIR: policyDir() }, SAM);
  browser = await launch();
  alice = (await signedIn(browser, h.url, ALICE)).page;
  mkdirSync(SHOTS, { recursive: true });
}, 180_000);

checkPagesAndClose(() => [browser, h]);

describe('history and outcomes in the dashboard', () => {
  it('a decided card shows the decision and the outcome for a few seconds, for this operator\'s answer and another\'s', async () => {
    jobs.A = await h.submit({ task: TASK, approval: 'on-request' });
    const first = group(alice, 'A').locator('article.card');
    await first.waitFor({ timeout: 30_000 });
    await first.locator('button.approve').click();
    const notice = group(alice, 'A').locator('.card-decided').first();
    await expect.poll(() => notice.textContent(), { timeout: 3000 }).toMatch(/approved .*rm -f one\.txt/);
    expect(await notice.locator('button').count()).toBe(0);
    await expect.poll(() => notice.locator('.decided-outcome').textContent(), { timeout: 12_000 }).toBe('Outcome: succeeded, exit code 0');
    expect(await notice.textContent()).toMatch(/by alice at /);

    // Command 2, answered by another operator over REST: the card here turns into the notice, then leaves.
    const second = await pending(jobs.A.job_id, '2');
    const res = await fetch(`${h.url}/v1/approvals/${second.token}`, {
      method: 'POST', headers: { authorization: `Bearer ${BOB}`, 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'approve' }),
    });
    expect(res.status).toBe(200);
    const bobs = alice.locator(`.card-decided[data-token="${second.token}"]`);
    await expect.poll(() => bobs.textContent(), { timeout: 3000 }).toMatch(/approved .*rm -f two\.txt.*by bob at /);
    await expect.poll(() => bobs.locator('.decided-outcome').textContent(), { timeout: 12_000 }).toBe('Outcome: succeeded, exit code 0');
    await expect.poll(() => alice.locator('#approval-groups .card-decided').count(), { timeout: 8000 }).toBe(0);
    expect(await group(alice, 'A').count()).toBe(0);
    expect((await h.waitFinal(jobs.A.job_id)).status).toBe('succeeded');
  }, 90_000);

  it('"Decided" lists each answer with who, when and the outcome, and filters by operator and by job', async () => {
    jobs.B = await h.submit({ task: TASK, approval: 'on-request' });
    const b1 = await pending(jobs.B.job_id, '1');
    const rej = await fetch(`${h.url}/v1/approvals/${b1.token}`, {
      method: 'POST', headers: { authorization: `Bearer ${BOB}`, 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'reject', reason: 'keep one.txt' }),
    });
    expect(rej.status).toBe(200);
    await h.waitFinal(jobs.B.job_id);

    await alice.click('nav a[data-nav="decided"]');
    const rows = alice.locator('table.decided tbody tr');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(3);
    // Newest first: job B's rejection, then job A's two approvals.
    expect(await rows.evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.decision))).toEqual(['reject', 'approve', 'approve']);
    expect(await rows.nth(0).locator('td.why').textContent()).toBe('keep one.txt');
    expect(await rows.nth(0).locator('td.outcome').textContent()).toBe('not run');
    expect(await rows.locator('td.outcome').nth(1).textContent()).toBe('succeeded, exit code 0');
    expect(await rows.locator('td.decided-by').allTextContents()).toEqual(['bob', 'bob', 'alice']);
    expect(await rows.nth(2).locator('a').getAttribute('href')).toBe(`#/jobs/${jobs.A!.job_id}`);
    await alice.evaluate(() => { document.getElementById('toast')!.style.visibility = 'hidden'; });
    await alice.screenshot({ path: `${SHOTS}/dashboard-decided.png`, fullPage: true });
    await alice.evaluate(() => { document.getElementById('toast')!.style.visibility = ''; });
    expect(await axeViolations(alice)).toEqual([]);

    await alice.fill('#f-decided_by', 'bob');
    await alice.click('#decided-filters button[type=submit]');
    await expect.poll(() => alice.evaluate(() => location.hash)).toBe('#/decided?decided_by=bob');
    await expect.poll(() => rows.locator('td.decided-by').allTextContents()).toEqual(['bob', 'bob']);

    await alice.fill('#f-decided_by', '');
    await alice.fill('#f-job_id', jobs.A!.job_id);
    await alice.click('#decided-filters button[type=submit]');
    await expect.poll(() => rows.locator('td.decided-by').allTextContents()).toEqual(['bob', 'alice']);
    expect(await rows.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href')))).toEqual([`#/jobs/${jobs.A!.job_id}`, `#/jobs/${jobs.A!.job_id}`]);

    await alice.selectOption('#f-decision', 'reject');
    await alice.fill('#f-job_id', '');
    await alice.click('#decided-filters button[type=submit]');
    await expect.poll(() => rows.evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.decision))).toEqual(['reject']);
  }, 90_000);

  it('a job page: an operator approves its pending command and cancels the job after a confirmation; a submitter sees neither', async () => {
    jobs.C = await h.submit({ task: TASK, approval: 'on-request' });
    await alice.goto(`${h.url}/dashboard#/jobs/${jobs.C.job_id}`);
    const items = alice.locator('#job-pending li[data-token]');
    await items.first().waitFor({ timeout: 30_000 });
    expect(await items.first().textContent()).toContain('rm -f one.txt');
    await items.first().locator('button.approve').click();
    await expect.poll(() => items.first().textContent(), { timeout: 20_000 }).toContain('rm -f two.txt');
    const ledger = await h.ledger(jobs.C.session_id);
    expect([ledger[0]!.approval.decision, ledger[0]!.approval.decided_by]).toEqual(['approve', 'alice']);

    const { page: sam } = await signedIn(browser, h.url, SAM);
    await sam.goto(`${h.url}/dashboard#/jobs/${jobs.C.job_id}`);
    await sam.locator('#event-log li').first().waitFor();
    expect(await sam.locator('button.approve, button.reject, button.cancel-job, #job-pending').count()).toBe(0);
    expect(await sam.locator('nav a[data-nav="decided"]').isVisible()).toBe(false);
    await sam.context().close();

    await alice.locator('button.cancel-job').click();
    const dialog = alice.locator('dialog.cancel-confirm');
    await expect.poll(() => dialog.locator('h2').textContent()).toBe(`Cancel job ${jobs.C.job_id}?`);
    await dialog.locator('button', { hasText: 'Keep it running' }).click();
    // The dialog leaves once its close has run (a task later than the click).
    await expect.poll(() => alice.locator('dialog.cancel-confirm').count()).toBe(0);
    expect((await h.job(jobs.C.job_id)).status).toBe('awaiting_approval');
    await alice.locator('button.cancel-job').click();
    await alice.locator('dialog.cancel-confirm button[type=submit]').click();
    expect((await h.waitFinal(jobs.C.job_id)).status).toBe('cancelled');
    await expect.poll(() => alice.locator('button.cancel-job').isVisible(), { timeout: 10_000 }).toBe(false);
    expect(await axeViolations(alice)).toEqual([]);
  }, 120_000);
});
