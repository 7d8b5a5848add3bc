// "Edit, then approve" in Debian's Chromium (playwright-core, axe-core): the
// card's Edit action opens an editor prefilled with the command or content; a
// forbidden edit shows the API's message on the card and leaves it pending;
// an allowed edit runs in place of the asked command, as the ledger shows.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';
import { startHarness, type Harness } from '../jobs/harness.ts';
import { axeViolations, checkPagesAndClose, launch, signedIn } from './browser.ts';

const OP = 'op-edit-key-0001';
const SUB = 'sub-edit-key-0002';
const TRANSCRIPTS: TranscriptInput[] = [
  {
    name: 'dash-edit-bash', match: 'frobnicate from the dashboard', delay_ms: 0,
    turns: [
      { reasoning: '<tf-bash id="1" cmd="frobnicate --all > frob.txt" need_result="true" />', text: '' },
      { reasoning: '<tf-bash id="2" cmd="frobnicate --again" />', text: 'Frobnicated.' },
    ],
  },
  {
    name: 'dash-edit-write', match: 'guarded notes from the dashboard', delay_ms: 0,
    turns: [{ reasoning: '<tf-write id="1" path="guarded/notes.md">\nasked by the model\n</tf-write>\n<tf-touch id="2" path="guarded/stamp" />', text: 'Done.' }],
  },
];
const GUARDED = {
  version: 1,
  rules: [
    { id: 'guarded-write', tool: 'write', path: 'guarded/**', decision: 'prompt', justification: 'needs a person' },
    { id: 'guarded-touch', tool: 'touch', path: 'guarded/**', decision: 'prompt', justification: 'needs a person' },
  ],
};

let h: Harness;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  h = await startHarness('dash-edit', TRANSCRIPTS, { THINKFLOW_API_KEYS: `${OP}:operator:olga,${SUB}:submitter:sam` }, SUB);
  browser = await launch();
  page = (await signedIn(browser, h.url, OP)).page;
}, 180_000);

checkPagesAndClose(() => [browser, h]);

async function pending(jobId: string, commandId: string): Promise<string> {
  for (let i = 0; i < 150; i++) {
    const res = await fetch(`${h.url}/v1/approvals`, { headers: { authorization: `Bearer ${OP}` } });
    const a = (await res.json()).approvals.find((x: any) => x.job_id === jobId && x.command_id === commandId);
    if (a) return a.token;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending approval for ${jobId} command ${commandId}`);
}

const cardOf = (token: string) => page.locator(`article.card[data-token="${token}"]`);

describe('Edit, then approve (dashboard)', () => {
  it('edits a bash command: a forbidden edit shows its rule on the card and stays pending, an allowed one runs', async () => {
    const job = await h.submit({ task: 'frobnicate from the dashboard', approval: 'on-request' });
    const token = await pending(job.job_id, '1');
    const card = cardOf(token);
    await card.waitFor({ timeout: 15_000 });
    const edit = card.locator('button.edit');
    expect(await edit.getAttribute('aria-expanded')).toBe('false');
    await edit.click();
    const area = card.locator('.edit-form textarea');
    await expect.poll(() => area.inputValue()).toBe('frobnicate --all > frob.txt');
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('TEXTAREA');
    expect(await edit.getAttribute('aria-expanded')).toBe('true');
    expect(await axeViolations(page)).toEqual([]);

    await area.fill('curl https://example.com > frob.txt');
    await card.locator('button.approve-edited').click();
    await expect.poll(() => card.locator('.edit-error').textContent()).toMatch(/forbidden by rule no-network-tools/);
    expect(await card.isVisible()).toBe(true);
    expect(await pending(job.job_id, '1')).toBe(token);

    await area.fill('echo from-the-dashboard > frob.txt');
    await card.locator('button.approve-edited').click();
    await card.waitFor({ state: 'detached', timeout: 15_000 });
    // The next card's ledger entries show what ran, not what was asked.
    const next = cardOf(await pending(job.job_id, '2'));
    await next.waitFor({ timeout: 15_000 });
    await expect.poll(() => next.locator('table.recent').textContent()).toContain('echo from-the-dashboard > frob.txt');
    expect(await next.locator('table.recent').textContent()).not.toContain('frobnicate --all');
    await next.locator('button.edit').click();
    await next.locator('.edit-form textarea').fill('true');
    await next.locator('button.approve-edited').click();
    const done = await h.waitFinal(job.job_id);
    expect(done.status).toBe('succeeded');
    expect(await h.file(job.session_id, 'frob.txt')).toBe('from-the-dashboard\n');
    const [rec] = await h.ledger(job.session_id);
    expect(rec).toMatchObject({
      cmd: 'echo from-the-dashboard > frob.txt', status: 'succeeded', approval: { decision: 'approve_edited', decided_by: 'olga' },
      edited_from: { tool: 'bash', cmd: 'frobnicate --all > frob.txt' },
    });
  }, 90_000);

  it('edits a write\'s content (Cancel and Escape close the editor untouched); a touch card offers no Edit', async () => {
    const job = await h.submit({ task: 'guarded notes from the dashboard', approval: 'on-request', policy: GUARDED });
    const token = await pending(job.job_id, '1');
    const card = cardOf(token);
    await card.waitFor({ timeout: 15_000 });
    const edit = card.locator('button.edit');
    await edit.click();
    const area = card.locator('.edit-form textarea');
    await expect.poll(() => area.inputValue()).toBe('asked by the model\n');
    await card.locator('button.edit-cancel').click();
    expect(await card.locator('.edit-form').count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.className)).toBe('edit');
    await edit.click();
    await area.press('Escape');
    expect(await card.locator('.edit-form').count()).toBe(0);

    await edit.click();
    await area.fill('written from the dashboard\n');
    await card.locator('button.approve-edited').click();
    await card.waitFor({ state: 'detached', timeout: 15_000 });

    // The touch that follows waits for its own approval: not editable.
    const touch = cardOf(await pending(job.job_id, '2'));
    await touch.waitFor({ timeout: 15_000 });
    expect(await touch.locator('button.edit').count()).toBe(0);
    await touch.locator('button.approve').click();
    expect((await h.waitFinal(job.job_id)).status).toBe('succeeded');
    expect(await h.file(job.session_id, 'guarded/notes.md')).toBe('written from the dashboard\n');
    const [rec] = await h.ledger(job.session_id);
    expect(rec).toMatchObject({ content: 'written from the dashboard\n', edited_from: { content: 'asked by the model\n' } });
  }, 90_000);
});
