// Issue 24's "Preview before deciding" in a real browser (Debian's Chromium
// through playwright-core) against the in-process service on real Redis and
// Docker: a pending card's Preview button shows a progress state, then the
// command's output and the file changes with their diffs, run on a throwaway
// copy; the session's workspace is unchanged afterwards. A workspace over
// THINKFLOW_PREVIEW_MAX_WORKSPACE_MB shows why no preview is possible. The
// test policy (pipeline/helpers.ts): bash `rm` prompts.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { client } from '../pipeline/helpers.ts';
import { suiteService } from '../suite-service.ts';
import { axeViolations, checkPagesAndClose, launch, signedIn } from './browser.ts';

const OP = 'op-preview-key-0001';
const SUB = 'sub-preview-key-0002';
const svc = suiteService('prev-dash', { THINKFLOW_API_KEYS: `${OP}:operator:olga,${SUB}:submitter:sam`, THINKFLOW_PREVIEW_MAX_WORKSPACE_MB: '1' });
let sub: ReturnType<typeof client>;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  sub = client(svc.url!, SUB);
  browser = await launch();
  page = (await signedIn(browser, svc.url!, OP)).page;
}, 120_000);

checkPagesAndClose(() => [browser]);

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A session with `files` whose one bash command waits for an operator; its card and the turn (not awaited). */
async function waitingCard(files: Record<string, string>, cmd: string): Promise<{ sid: string; card: Locator; turn: Promise<Response> }> {
  const created = await sub.json('/v1/sessions', { approval: 'on-request', files });
  expect(created.status).toBe(201);
  const sid = ((await created.json()) as { session_id: string }).session_id;
  const turn = sub.text(`/v1/sessions/${sid}/commands`, `<tf-bash id="1" cmd="${esc(cmd)}" />`);
  turn.catch(() => undefined);
  const card = page.locator('article.card', { has: page.locator(`h3 .target:text-is(${JSON.stringify(cmd)})`) }).filter({ has: page.locator('.preview-btn') });
  await card.first().waitFor({ timeout: 60_000 });
  return { sid, card: card.first(), turn };
}

const names = async (sid: string) => ((await (await sub.get(`/v1/sessions/${sid}/files`)).json()) as { entries: { name: string }[] }).entries.map((e) => e.name).sort();

describe('Preview on a pending card', () => {
  it('shows progress, then the output and the changes with diffs; the workspace is untouched', async () => {
    await expect.poll(() => page.textContent('#conn')).toMatch(/Approvals: live/);
    const cmd = 'rm old.txt; echo hi > new.txt; echo out';
    const { sid, card, turn } = await waitingCard({ 'old.txt': 'old\n' }, cmd);
    // On the compact card, without opening it.
    await card.locator('.preview-btn').click();
    await expect.poll(() => card.locator('.preview-progress').count(), { timeout: 5_000 }).toBe(1);
    const out = card.locator('.preview-stdout');
    await out.waitFor({ timeout: 60_000 });
    expect(await out.textContent()).toBe('out\n');
    expect(await card.locator('.preview-summary').textContent()).toMatch(/^exit code 0, .* 2 files changed\.$/);
    const items = card.locator('.preview-changes > li');
    expect((await items.allTextContents()).map((t) => t.split('Diff of')[0])).toEqual(['added new.txt 3 bytes', 'deleted old.txt']);
    await items.nth(0).locator('summary').click();
    expect(await items.nth(0).locator('pre.diff .add').allTextContents()).toEqual(['added: +hi\n']);
    expect(await items.nth(1).locator('summary').textContent()).toBe('Diff of old.txt');
    expect(await card.locator('.preview-btn').textContent()).toBe('Preview again');
    expect(await axeViolations(page)).toEqual([]);
    expect(await names(sid)).toEqual(['old.txt']);
    await card.locator('button', { hasText: /^Reject/ }).first().waitFor();
    const token = await card.getAttribute('data-token');
    const res = await client(svc.url!, OP).json(`/v1/approvals/${token}`, { decision: 'reject', reason: 'seen enough' });
    expect(res.status).toBe(200);
    await turn;
  }, 120_000);

  it('says why when no preview is possible (a workspace over the limit)', async () => {
    const { card, turn } = await waitingCard({ 'big.txt': 'x'.repeat(1536 * 1024) }, 'rm big.txt');
    await card.locator('.preview-btn').click();
    const reason = card.locator('.preview-reason');
    await reason.waitFor({ timeout: 60_000 });
    expect(await reason.textContent()).toMatch(/^Preview not possible: the workspace is larger than the preview limit of 1 MiB/);
    expect(await axeViolations(page)).toEqual([]);
    const token = await card.getAttribute('data-token');
    await client(svc.url!, OP).json(`/v1/approvals/${token}`, { decision: 'reject' });
    await turn;
  }, 120_000);
});
