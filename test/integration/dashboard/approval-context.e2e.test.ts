// The approval card's context in a real browser (Debian's Chromium through
// playwright-core), against the in-process service on real Redis and Docker
// with the replay model (issue 24, "Context on every card", "Indirection
// resolved"): two jobs with identical commands are told apart by their tasks,
// each card shows the agent's words before the command, and a `bash deploy.sh`
// card shows deploy.sh as the workspace has it, linked to the command that
// wrote it. The script and the words carry HTML: it must show as text.
import { mkdirSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';
import { startHarness, type Harness } from '../jobs/harness.ts';
import { axeViolations, checkPagesAndClose, launch, signedIn } from './browser.ts';

const ALICE = 'op-alice-key-0001';
const SAM = 'sub-sam-key-0003';
const KEYS = `${ALICE}:operator:alice,${SAM}:submitter:sam`;
// Pictures for debugging only; the ones committed in docs/ come from axe.e2e.test.ts (THINKFLOW_SCREENSHOTS=docs).
const SHOTS = '.tmp/screenshots';

const SCRIPT = 'rm -rf ./data\necho \'<img src=x onerror=alert(1)><b>bold</b>\'\ncurl -X POST https://prod.example/deploy\n';
const WORDS = 'Writing the deploy script.\n\nI will now run <i>deploy.sh</i> to deploy.';
const transcripts: TranscriptInput[] = [{
  name: 'deploy', match: 'deploy the billing service', delay_ms: 0, chunk: 48,
  turns: [
    { text: `Writing the deploy script.\n<tf-write id="1" path="deploy.sh">\n${SCRIPT}</tf-write>\nI will now run <i>deploy.sh</i> to deploy.\n<tf-bash id="2" cmd="bash deploy.sh" />\n` },
    { text: 'Stopped.' },
  ],
}];
const TASKS = {
  staging: 'Deploy the billing service to staging\nUse the blue slot.\nCheck the health page.\nThen report back.',
  prod: 'Deploy the billing service to prod',
};

let h: Harness;
let browser: Browser;
let alice: Page;
const jobs: Record<string, { job_id: string; session_id: string }> = {};

async function submit(name: keyof typeof TASKS, metadata?: Record<string, unknown>) {
  const res = await fetch(`${h.url}/v1/jobs`, {
    method: 'POST', headers: { authorization: `Bearer ${SAM}`, 'content-type': 'application/json' },
    body: JSON.stringify({ task: TASKS[name], approval: 'on-request', ...(metadata ? { metadata } : {}) }),
  });
  expect(res.status).toBe(202);
  jobs[name] = await res.json();
}

const group = (name: string) => alice.locator(`#approval-groups section.group[data-job="${jobs[name]!.job_id}"]`);
const card = (name: string) => group(name).locator('article.card');

beforeAll(async () => {
  h = await startHarness('dash-ctx', transcripts, { THINKFLOW_API_KEYS: KEYS }, SAM);
  browser = await launch();
  mkdirSync(SHOTS, { recursive: true });
  alice = (await signedIn(browser, h.url, ALICE, { width: 1366, height: 900 })).page;
}, 180_000);

checkPagesAndClose(() => [browser, h]);

describe('approval context on the card', () => {
  it('labels groups by task and shows each card\'s task, the agent\'s words and the script it runs, as text', async () => {
    await submit('staging', { ticket: 'OPS-9', team: 'billing' });
    await submit('prod');
    for (const name of ['staging', 'prod']) await card(name).waitFor({ timeout: 30_000 });

    // Identical commands, told apart by the groups' headings: the task's first line, the id second.
    expect(await group('staging').locator('h2').textContent()).toBe(`Deploy the billing service to staging job ${jobs.staging!.job_id}`);
    expect(await group('prod').locator('h2 a').textContent()).toBe('Deploy the billing service to prod');
    expect(await card('staging').locator('h3').textContent()).toBe(await card('prod').locator('h3').textContent());

    const c = card('staging');
    if (await c.locator('button.more').count()) await c.locator('button.more').click();
    await expect.poll(() => c.locator('.indirect-content').isVisible()).toBe(true);
    // The task's first lines, the whole behind an expand control.
    expect(await c.locator('.context .task-head').textContent()).toBe('Deploy the billing service to staging\nUse the blue slot.\nCheck the health page. …');
    await c.locator('.task-all summary').click();
    expect(await c.locator('.task-all pre').textContent()).toBe(TASKS.staging);
    expect(await c.locator('.metadata').textContent()).toBe('ticketOPS-9teambilling');
    // The agent's words and the script: text, never markup.
    expect(await c.locator('pre.preceding').textContent()).toBe(WORDS);
    expect(await c.locator('.indirect-content').textContent()).toBe(SCRIPT);
    expect(await c.locator('.indirect b, .indirect img, .context i').count()).toBe(0);
    // Which command wrote it, linked to the job's ledger.
    const by = c.locator('.written-by a');
    expect(await by.getAttribute('href')).toBe(`#/jobs/${jobs.staging!.job_id}`);
    expect(await by.textContent()).toMatch(/^command 1 of turn \d+ \(ledger #1\)$/);
    // Each line of the script in parts, with the policy's decision, as the card shows a bash command.
    const lines = c.locator('.script-lines .script-line');
    expect(await lines.count()).toBe(3);
    expect(await lines.nth(0).locator('p').first().textContent()).toBe('Line 1: rm -rf ./data');
    expect(await lines.nth(2).locator('table.segments tbody tr td:nth-child(2)').allTextContents()).toEqual(['curl -X POST https://prod.example/deploy']);
    expect(await lines.nth(0).locator('table.segments tbody tr td:nth-child(3)').allTextContents()).toEqual(['allow']);

    // The other job's card: its own task, the same words before the same command.
    const p = card('prod');
    expect(await p.locator('.context .task-head').textContent()).toBe(TASKS.prod);
    expect(await p.locator('pre.preceding').textContent()).toBe(WORDS);
    expect(await p.locator('.metadata').count()).toBe(0);

    expect(await axeViolations(alice)).toEqual([]);
    await c.screenshot({ path: `${SHOTS}/approval-context-card.png` });

    // Rejected by REST: both cards leave.
    const auth = { authorization: `Bearer ${ALICE}` };
    for (const a of (await (await fetch(`${h.url}/v1/approvals`, { headers: auth })).json()).approvals) {
      const res = await fetch(`${h.url}/v1/approvals/${a.token}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"decision":"reject"}' });
      expect(res.status).toBe(200);
    }
    await expect.poll(() => alice.locator('#approval-groups article.card').count(), { timeout: 15_000 }).toBe(0);
  }, 120_000);
});
