// The operator dashboard in a real browser (Debian's Chromium through
// playwright-core), against the in-process service on real Redis and Docker
// with the replay model. One test per acceptance bullet of issue 13; they run
// in order on one service and build on each other's jobs.
import { mkdirSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { OPERATOR_REVIEW, REVIEW_POLICY, REVIEW_TASK, thinkflowTranscript } from '../../../services/replay-model/scenarios.ts';
import { startHarness, type Harness } from '../jobs/harness.ts';
import { axeViolations, checkPagesAndClose, launch, signedIn, startProxy } from './browser.ts';
import { readJobEvents } from './events.ts';

const ALICE = 'op-alice-key-0001';
const BOB = 'op-bob-key-0002';
const SAM = 'sub-sam-key-0003';
const SUE = 'sub-sue-key-0004';
const KEYS = `${ALICE}:operator:alice,${BOB}:operator:bob,${SAM}:submitter:sam,${SUE}:submitter:sue`;
// Pictures for debugging only; the ones committed in docs/ come from axe.e2e.test.ts (THINKFLOW_SCREENSHOTS=docs).
const SHOTS = '.tmp/screenshots';

let h: Harness;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let browser: Browser;
let alice: Page;
const jobs: Record<string, { job_id: string; session_id: string }> = {};

async function submitReview(name: string, key = SAM) {
  const res = await fetch(`${h.url}/v1/jobs`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ task: REVIEW_TASK, approval: 'on-request', policy: REVIEW_POLICY }),
  });
  expect(res.status).toBe(202);
  jobs[name] = await res.json();
  return jobs[name]!;
}

const card = (page: Page, job: string, id: string) => page.locator(`#approval-groups section.group[data-job="${jobs[job]!.job_id}"] article.card`, { has: page.locator(`.meta:text-matches("^command ${id} ")`) });

async function ledger(job: string) {
  return h.ledger(jobs[job]!.session_id);
}

async function pendingToken(job: string, id: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${h.url}/v1/approvals`, { headers: { authorization: `Bearer ${ALICE}` } });
    const a = (await res.json()).approvals.find((x: any) => x.job_id === jobs[job]!.job_id && x.command_id === id);
    if (a) return a.token;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending approval for ${job} command ${id}`);
}

async function approveRest(job: string, id: string) {
  const res = await fetch(`${h.url}/v1/approvals/${await pendingToken(job, id)}`, {
    method: 'POST', headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'approve' }),
  });
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  h = await startHarness('dashboard', [thinkflowTranscript(OPERATOR_REVIEW)], { THINKFLOW_API_KEYS: KEYS }, SAM);
  proxy = await startProxy(h.url);
  browser = await launch();
  alice = (await signedIn(browser, proxy.url, ALICE)).page;
  mkdirSync(SHOTS, { recursive: true });
}, 180_000);

checkPagesAndClose(() => [browser, proxy, h]);

describe('dashboard in a browser', () => {
  it('refuses an unknown key in words, and shows an approval within 1 s of its command being parsed', async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`${proxy.url}/dashboard`);
    await page.fill('#key', 'not-a-key');
    await page.click('#signin-form button[type=submit]');
    await expect.poll(() => page.textContent('#signin-error')).toMatch(/not accepted.*Sign in again/);
    await ctx.close();

    await expect.poll(() => alice.textContent('#conn')).toMatch(/Approvals: live/);
    const a = await submitReview('A');
    await card(alice, 'A', '1').waitFor({ timeout: 15_000 });
    const seenAt = Date.now();
    const events = await readJobEvents(h.url, SAM, a.job_id, { until: (e) => e.type === 'approval_requested' });
    const parsed = events.find((e) => e.type === 'command_parsed' && e.data.command.id === '1');
    expect(parsed).toBeDefined();
    const latency = seenAt - Date.parse(parsed!.data.at);
    process.stdout.write(`dashboard: approval card shown ${latency} ms after its command was parsed\n`);
    expect(latency).toBeLessThan(1000);
  }, 60_000);

  it('approve, approve for session and reject change the course as the ledger shows; edit diff and bash segments are shown', async () => {
    await card(alice, 'A', '1').locator('button.approve').click();
    const edit = card(alice, 'A', '2');
    await edit.waitFor();
    await expect.poll(() => edit.locator('.diff .del').allTextContents()).toEqual([expect.stringContaining('- Status: draft')]);
    expect(await edit.locator('.diff .add').allTextContents()).toEqual([expect.stringContaining('+ Status: ready for review'), expect.stringContaining('+ Owner: platform team')]);

    // Keyboard: S on the focused card asks for the session grant.
    await edit.focus();
    await alice.keyboard.press('s');
    const dialog = alice.locator('dialog.confirm');
    await expect.poll(() => dialog.locator('.grant').textContent()).toMatch(/`edit` on docs\/plan\.md runs without asking again/);
    await dialog.locator('button[type=submit]').click();
    await expect.poll(() => alice.evaluate(() => document.activeElement?.outerHTML.slice(0, 80) ?? 'none')).toMatch(/^<(article|h1)/);

    // Command 3 (a second edit of the same file) is covered by the grant: the next card is the bash script.
    const bash = card(alice, 'A', '4');
    await bash.waitFor({ timeout: 20_000 });
    const rows = bash.locator('table.segments tbody tr');
    await expect.poll(() => rows.count()).toBe(3);
    expect(await rows.locator('td:nth-child(2)').allTextContents()).toEqual(['ls -la docs', 'tac docs/plan.md', 'head -n 3']);
    expect(await rows.locator('td:nth-child(3)').allTextContents()).toEqual(['allow', 'prompt', 'allow']);
    expect(await rows.nth(0).textContent()).toContain('inspect-files');
    expect(await bash.locator('.why .reason').textContent()).toMatch(/no rule matched `tac docs\/plan.md`; bash default/);

    // A second job waits at its edit (approved by keyboard: A on the focused card), for the screenshot.
    await submitReview('B');
    const bWrite = card(alice, 'B', '1');
    await bWrite.waitFor({ timeout: 15_000 });
    await bWrite.focus();
    await alice.keyboard.press('a');
    await card(alice, 'B', '2').waitFor({ timeout: 15_000 });
    await alice.evaluate(() => { document.getElementById('toast')!.style.visibility = 'hidden'; });
    await alice.screenshot({ path: `${SHOTS}/dashboard-approvals.png`, fullPage: true });
    await alice.evaluate(() => { document.getElementById('toast')!.style.visibility = ''; });
    expect(await axeViolations(alice)).toEqual([]);

    await bash.locator('button.reject').click();
    await dialog.locator('textarea').fill('tac is not needed; stop here');
    await dialog.locator('button[type=submit]').click();
    const view = await h.waitFinal(jobs.A!.job_id);
    expect(view.status).toBe('succeeded');
    const l = await ledger('A');
    expect(l.map((r) => [r.id, r.tool, r.status, r.approval?.decision ?? null, r.approval?.decided_by ?? null])).toEqual([
      ['1', 'write', 'succeeded', 'approve', 'alice'],
      ['2', 'edit', 'succeeded', 'approve_for_session', 'alice'],
      ['3', 'edit', 'succeeded', null, null],
      ['4', 'bash', 'rejected', 'reject', 'alice'],
    ]);
    expect(l[3]!.approval.reason).toBe('tac is not needed; stop here');
    expect(await h.file(jobs.A!.session_id, 'docs/plan.md')).toMatch(/^# Gateway migration plan\n\nStatus: ready for review\nOwner: platform team/);
  }, 120_000);

  it('a batch of three lists all three in the confirmation and runs them in order', async () => {
    await submitReview('C');
    await submitReview('D');
    const picked = [card(alice, 'B', '2'), card(alice, 'C', '1'), card(alice, 'D', '1')];
    for (const c of picked) await c.waitFor({ timeout: 20_000 });
    for (const c of picked) await c.locator('input.sel').check();
    await alice.locator('button.batch-approve').click();
    const items = alice.locator('dialog.confirm ol.confirm-items > li');
    await expect.poll(() => items.count()).toBe(3);
    const listed = await items.allTextContents();
    expect(listed[0]).toContain(`command 2 of ${jobs.B!.job_id}`);
    expect(listed[1]).toContain(`command 1 of ${jobs.C!.job_id}`);
    expect(listed[2]).toContain(`command 1 of ${jobs.D!.job_id}`);
    await alice.locator('dialog.confirm button[type=submit]').click();
    await expect.poll(() => alice.locator('dialog.confirm').count()).toBe(0);
    for (const c of picked) await expect.poll(() => c.count()).toBe(0);
    const decided = [(await ledger('B'))[1]!.approval, (await ledger('C'))[0]!.approval, (await ledger('D'))[0]!.approval];
    expect(decided.map((a) => [a.decision, a.decided_by])).toEqual([['approve', 'alice'], ['approve', 'alice'], ['approve', 'alice']]);
    const times = decided.map((a) => Date.parse(a.decided_at));
    expect(times[0]).toBeLessThanOrEqual(times[1]!);
    expect(times[1]).toBeLessThanOrEqual(times[2]!);
  }, 90_000);

  it('two operators: the second sees the card vanish, and a late click says who decided and when', async () => {
    const bob = (await signedIn(browser, proxy.url, BOB)).page;
    const target = card(bob, 'C', '2');
    await target.waitFor({ timeout: 20_000 });
    await target.locator('button.approve-session').click();
    await bob.locator('dialog.confirm .grant').waitFor();
    const clicked = Date.now();
    await card(alice, 'C', '2').locator('button.approve').click();
    await expect.poll(() => target.count(), { timeout: 5000, interval: 20 }).toBe(0);
    process.stdout.write(`dashboard: card left the second operator's page ${Date.now() - clicked} ms after the first one's click\n`);
    const late = bob.waitForResponse((r) => r.url().includes('/v1/approvals/') && r.request().method() === 'POST');
    await bob.locator('dialog.confirm button[type=submit]').click();
    expect((await late).status()).toBe(409);
    await expect.poll(() => bob.locator('dialog.confirm .outcome').textContent()).toMatch(/^Already decided by alice at .+ \(approved\)\.$/);
    await bob.context().close();
  }, 60_000);

  it('a submitter sees only its own jobs and no decide buttons; a forged decide is 403', async () => {
    const e = await submitReview('E', SUE);
    const { page: sam } = await signedIn(browser, proxy.url, SAM);
    await sam.waitForURL(/#\/jobs$/);
    const rows = sam.locator('table.jobs tbody tr');
    await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(4);
    const shown = await rows.evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.job));
    expect(shown).not.toContain(e.job_id);
    for (const id of shown) expect(Object.values(jobs).filter((j) => j !== e).map((j) => j.job_id)).toContain(id);

    await sam.goto(`${proxy.url}/dashboard#/approvals`);
    await expect.poll(() => sam.textContent('#view')).toMatch(/is a submitter: it sees only its own jobs and cannot decide/);
    expect(await sam.locator('button.approve, button.reject, button.approve-session').count()).toBe(0);
    await sam.goto(`${proxy.url}/dashboard#/jobs/${jobs.D!.job_id}`);
    await sam.locator('#event-log li').first().waitFor();
    expect(await sam.locator('button.approve, button.reject, button.approve-session').count()).toBe(0);

    const token = await pendingToken('E', '1');
    const status = await sam.evaluate(async ([t, k]) => (await fetch(`/v1/approvals/${t}`, {
      method: 'POST', headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'approve' }),
    })).status, [token, SAM]);
    expect(status).toBe(403);
    const stream = await fetch(`${h.url}/v1/approvals/events`, { headers: { authorization: `Bearer ${SAM}` } });
    expect(stream.status).toBe(403);
    expect((await fetch(`${h.url}/v1/approvals/events`)).status).toBe(401);
    await sam.context().close();
  }, 60_000);

  it('the job page follows its events; a server-dropped stream reconnects with Last-Event-ID and misses nothing', async () => {
    const resumes: string[] = [];
    alice.on('request', (r) => {
      if (r.url().endsWith(`/v1/jobs/${jobs.B!.job_id}/events`) && r.headers()['last-event-id']) resumes.push(r.headers()['last-event-id']!);
    });
    await alice.goto(`${proxy.url}/dashboard#/jobs/${jobs.B!.job_id}`);
    const log = alice.locator('#event-log');
    await expect.poll(async () => Number(await log.getAttribute('data-events'))).toBeGreaterThan(5);
    const before = await log.getAttribute('data-last-seq');
    expect(proxy.dropAll()).toBeGreaterThan(0);
    await expect.poll(async () => Number(await log.getAttribute('data-reconnects'))).toBeGreaterThanOrEqual(1);
    // The reconnect asked for what came after the last event it had, not the whole stream again.
    await expect.poll(() => resumes[0]).toBe(before);
    // Work goes on while the page is away and after it is back.
    await approveRest('B', '3');
    await approveRest('B', '4');
    await h.waitFinal(jobs.B!.job_id);
    await alice.locator('#event-log li.ev-job_finished').waitFor({ timeout: 20_000 });
    const server = await readJobEvents(h.url, SAM, jobs.B!.job_id, { until: (e) => e.type === 'job_finished' });
    expect(Number(await log.getAttribute('data-events'))).toBe(new Set(server.map((e) => e.id)).size);
    expect(await log.getAttribute('data-missing')).toBe('0');
    expect(Number(await log.getAttribute('data-last-seq'))).toBe(server.at(-1)!.id);
    await expect.poll(() => alice.textContent('#conn')).toMatch(/finished|live again/);

    // Ledger filter, approvals with who decided, files.
    await expect.poll(() => alice.locator('table.ledger tbody tr').count()).toBe(4);
    await alice.selectOption('#ledger-filter', 'succeeded');
    expect(await alice.locator('table.ledger tbody tr').evaluateAll((trs) => trs.map((t) => (t as HTMLElement).dataset.status))).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    expect(await alice.locator('table.approvals .decided-by').allTextContents()).toEqual(['alice', 'alice', 'alice', 'alice']);
    // Where each command's time went, from its ledger timings (these waited for an operator, so "waited" is there).
    const times = await alice.locator('table.ledger tbody td.timings').allTextContents();
    expect(times).toHaveLength(4);
    for (const t of times) expect(t).toMatch(/^admitted \d+ ms · waited \d+ ms · ran \d+ ms$/);
    await alice.locator('.files button', { hasText: 'docs/' }).click();
    await alice.locator('.files button', { hasText: 'plan.md' }).click();
    await expect.poll(() => alice.locator('.files pre.file').textContent()).toMatch(/^# Gateway migration plan/);
    await alice.evaluate(() => { document.getElementById('toast')!.style.visibility = 'hidden'; window.scrollTo(0, 0); });
    await alice.screenshot({ path: `${SHOTS}/dashboard-job.png`, fullPage: true });
    expect(await axeViolations(alice)).toEqual([]);
  }, 120_000);

  it('the jobs list updates live and the pages stay usable at 390 px wide', async () => {
    await alice.goto(`${proxy.url}/dashboard#/jobs`);
    await alice.locator('table.jobs tbody tr').first().waitFor();
    const f = await submitReview('F');
    const row = alice.locator(`table.jobs tbody tr[data-job="${f.job_id}"]`);
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 15_000 }).toBe('awaiting_approval');
    await alice.setViewportSize({ width: 390, height: 844 });
    await alice.goto(`${proxy.url}/dashboard#/approvals`);
    await card(alice, 'F', '1').waitFor();
    const overflow = await alice.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await card(alice, 'F', '1').locator('button.approve').click();
    await card(alice, 'F', '2').waitFor({ timeout: 15_000 });
    await alice.setViewportSize({ width: 1280, height: 800 });
    // Command counts follow each finished command, mid-turn (the turn waits at command 2).
    await alice.goto(`${proxy.url}/dashboard#/jobs`);
    await expect.poll(() => row.locator('td:nth-child(6)').textContent(), { timeout: 10_000 }).toBe('4 total: 1 succeeded');
    expect(await row.getAttribute('data-status')).toBe('awaiting_approval');
  }, 60_000);
});
