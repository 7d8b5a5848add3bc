// Time-outs in the dashboard, on a service whose approvals live 8 s: the card
// warns in its last minutes, says in words that it expired while open, and
// the approvals stream survives a dropped connection without losing the card.
import { beforeAll, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { OPERATOR_REVIEW, REVIEW_POLICY, REVIEW_TASK, thinkflowTranscript } from '../../../services/replay-model/scenarios.ts';
import { startHarness, type Harness } from '../jobs/harness.ts';
import { checkPagesAndClose, launch, signedIn, startProxy } from './browser.ts';

const OP = 'op-expiry-key-01';
const SUB = 'sub-expiry-key-02';

let h: Harness;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  h = await startHarness('dash-expiry', [thinkflowTranscript(OPERATOR_REVIEW)], {
    THINKFLOW_API_KEYS: `${OP}:operator:olga,${SUB}:submitter`, THINKFLOW_APPROVAL_TTL_S: '8',
  }, SUB);
  proxy = await startProxy(h.url);
  browser = await launch();
  page = (await signedIn(browser, proxy.url, OP)).page;
}, 180_000);

checkPagesAndClose(() => [browser, proxy, h]);

it('warns before expiry, survives a dropped stream, and says the approval expired while open', async () => {
  const job = await h.submit({ task: REVIEW_TASK, approval: 'on-request', policy: REVIEW_POLICY });
  const card = page.locator(`section.group[data-job="${job.job_id}"] article.card`);
  await card.waitFor({ timeout: 15_000 });
  await expect.poll(() => card.getAttribute('class')).toMatch(/\bwarn\b/);
  expect(await card.locator('.timer').textContent()).toMatch(/^⚠ expires in 0:0\d: decide now$/);

  expect(proxy.dropAll()).toBeGreaterThan(0);
  await expect.poll(() => page.textContent('#conn')).toMatch(/Approvals: connection lost .*reconnecting in/);
  await expect.poll(() => page.textContent('#conn')).toMatch(/Approvals: live again \(current state reloaded\)/);
  expect(await card.count()).toBe(1);

  await expect.poll(() => card.getAttribute('class'), { timeout: 15_000 }).toMatch(/\bexpired\b/);
  expect(await card.locator('.card-status').textContent()).toMatch(/expired while it was open: the command was not run/);
  expect(await card.locator('button.approve').isDisabled()).toBe(true);
  await expect.poll(async () => (await h.ledger(job.session_id))[0]?.approval?.decision, { timeout: 15_000 }).toBe('expired');
  expect(await card.count()).toBe(1);
  await card.locator('button.dismiss').click();
  expect(await card.count()).toBe(0);
}, 90_000);
