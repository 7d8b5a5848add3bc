// Issue 21's acceptance bullet "a prompted host waits, is approved from the
// dashboard in a real browser, and then answers": a command in a real
// sandbox connects through the session's egress proxy to a loopback test
// upstream (127.0.0.4, named by a global rule; nothing leaves the machine);
// the operator sees the network card in Debian's Chromium, approves it with
// the keyboard, then grants the host:port for the session, after which the
// next connection asks nobody.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { networkPolicyDir } from '../egress/policy-dir.ts';
import { client } from '../pipeline/helpers.ts';
import { startUpstream, type Upstream } from '../sandbox/egress-fixtures.ts';
import { suiteService } from '../suite-service.ts';
import { axeViolations, checkPagesAndClose, launch, signedIn } from './browser.ts';

const ASK = '127.0.0.4';
const OP = 'op-net-key-0001';
const SUB = 'sub-net-key-0002';

function policies(): string {
  return networkPolicyDir([
    `{ id: loopback-upstream, tool: network, cidr: ["${ASK}/32"], decision: allow, justification: the test server on the host's loopback }`,
    `{ id: ask-upstream, tool: network, host: ["${ASK}"], decision: prompt, justification: an operator decides each new host }`,
  ]);
}

// The prompt waits long enough for a browser on a busy machine; urllib waits longer still.
const svc = suiteService('net-dash', {
  THINKFLOW_POLICY_DIR: policies(), THINKFLOW_API_KEYS: `${OP}:operator:olga,${SUB}:submitter:sam`, THINKFLOW_EGRESS_PROMPT_WAIT_S: '90',
});
let up: Upstream;
let sub: ReturnType<typeof client>;
let browser: Browser;
let page: Page;
let sid: string;

beforeAll(async () => {
  up = await startUpstream(ASK);
  sub = client(svc.url!, SUB);
  browser = await launch();
  page = (await signedIn(browser, svc.url!, OP)).page;
}, 120_000);

checkPagesAndClose(() => [browser, up]);

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
const fetchHello = (n: number) => `python3 -c "import urllib.request; print('${n}:', urllib.request.urlopen('http://${ASK}:${up.port}/hello', timeout=120).read().decode())"`;

/** Sent, not awaited: the command holds at the proxy until the operator decides. */
function bash(id: number, cmd: string, session = sid): Promise<{ status: string; stdout: string; stderr: string }> {
  const p = sub.text(`/v1/sessions/${session}/commands`, `<tf-bash id="${id}" cmd="${esc(cmd)}" timeout="150" />`)
    .then(async (res) => ((await res.json()) as { results: any[] }).results[0]);
  // A test that fails before awaiting it leaves it to the service's close: its rejection is not a second failure.
  p.catch(() => undefined);
  return p;
}

const cards = (): Locator => page.locator(`#approval-groups section.group[data-job="${sid}"] article.card[data-tool="network"]`);
const networkRecords = async () => ((await (await sub.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: any[] }).entries.filter((e) => e.tool === 'network');

describe('a network approval in the dashboard', () => {
  it('shows host, port, session and the connecting command; A approves, and the command gets the upstream\'s answer', async () => {
    sid = ((await (await sub.json('/v1/sessions', { approval: 'on-request' })).json()) as { session_id: string }).session_id;
    await expect.poll(() => page.textContent('#conn')).toMatch(/Approvals: live/);
    const cmd = fetchHello(1);
    const first = bash(1, cmd);
    const card = cards();
    await card.waitFor({ timeout: 60_000 });
    expect(await card.locator('h3 .tool').textContent()).toBe('network');
    expect(await card.locator('h3 .target').textContent()).toBe(`${ASK}:${up.port}`);
    const what = card.locator('section.what');
    expect(await what.locator('code').allTextContents()).toEqual([ASK, String(up.port), cmd]);
    expect(await what.textContent()).toContain(`for session ${sid}`);
    expect(await what.textContent()).toContain('Asked while command 1 ran: ');
    expect(await card.locator('.meta').textContent()).toMatch(/^connection net-1 · asked /);
    expect(await card.locator('.why').textContent()).toContain('ask-upstream');
    expect(await axeViolations(page)).toEqual([]);

    await card.focus();
    await page.keyboard.press('a');
    await expect.poll(() => card.count()).toBe(0);
    const r = await first;
    expect(r.status).toBe('succeeded');
    expect(r.stdout.trim()).toBe('1: hello from upstream');
    expect((await networkRecords())[0]).toMatchObject({
      target: `${ASK}:${up.port}`, command_id: '1', status: 'succeeded', approval: { decision: 'approve', decided_by: 'olga' },
    });
  }, 150_000);

  it('approve for session grants the host:port: the next connection goes through without a card', async () => {
    const second = bash(2, fetchHello(2));
    const card = cards();
    await card.waitFor({ timeout: 60_000 });
    await card.locator('button.approve-session').click();
    const dialog = page.locator('dialog.confirm');
    expect(await dialog.locator('.grant').textContent()).toBe(`Grant: connections to ${ASK}:${up.port} for the rest of this session`);
    await dialog.locator('button[type=submit]').click();
    await expect.poll(() => card.count()).toBe(0);
    expect((await second).stdout.trim()).toBe('2: hello from upstream');

    const third = await bash(3, fetchHello(3));
    expect(third.stdout.trim()).toBe('3: hello from upstream');
    expect(await cards().count()).toBe(0);
    const pending = ((await (await client(svc.url!, OP).get('/v1/approvals?status=pending')).json()) as { approvals: any[] }).approvals;
    expect(pending.filter((a) => a.session_id === sid)).toEqual([]);
    const records = await networkRecords();
    expect(records.map((r) => [r.command_id, r.status, r.approval?.decision ?? null, r.approval?.decided_by ?? null])).toEqual([
      ['1', 'succeeded', 'approve', 'olga'],
      ['2', 'succeeded', 'approve_for_session', 'olga'],
      ['3', 'succeeded', null, null],
    ]);
  }, 150_000);

  it('a card about to expire goes to the top, marked: a new connection (90 s to answer) above an older command (15 min)', async () => {
    const policy = { rules: [{ id: 'slow-asks', tool: ['write'], path: 'slow/**', decision: 'prompt', justification: 'an older request with the long TTL' }] };
    const older = ((await (await sub.json('/v1/sessions', { approval: 'on-request', policy })).json()) as { session_id: string }).session_id;
    const write = sub.text(`/v1/sessions/${older}/commands`, '<tf-write id="1" path="slow/a.txt">x</tf-write>');
    write.catch(() => undefined);
    const olderCard = page.locator(`#approval-groups section.group[data-job="${older}"] article.card`);
    await olderCard.waitFor({ timeout: 30_000 });
    expect(await olderCard.getAttribute('class')).not.toMatch(/\bwarn\b/);

    const newer = ((await (await sub.json('/v1/sessions', { approval: 'on-request' })).json()) as { session_id: string }).session_id;
    const fetched = bash(1, fetchHello(4), newer);
    const netCard = page.locator(`#approval-groups section.group[data-job="${newer}"] article.card`);
    await netCard.waitFor({ timeout: 60_000 });
    // Asked later, it expires first: on top, and says so. (Groups left with only a decided notice are not counted.)
    const order = () => page.locator('#approval-groups > section.group').evaluateAll((gs) => gs.filter((g) => g.querySelector('article.card')).map((g) => (g as HTMLElement).dataset.job));
    await expect.poll(order).toEqual([newer, older]);
    expect(await netCard.getAttribute('class')).toMatch(/\bwarn\b/);
    expect(await netCard.locator('.timer').textContent()).toMatch(/^⚠ expires in 1:[0-3]\d: decide now$/);
    expect(await olderCard.locator('.timer').textContent()).toMatch(/^expires in 1[45]:\d\d$/);

    await netCard.locator('button.approve').click();
    expect((await fetched).stdout.trim()).toBe('4: hello from upstream');
    const token = ((await (await client(svc.url!, OP).get('/v1/approvals')).json()) as { approvals: any[] }).approvals.find((a) => a.session_id === older)!.token;
    await client(svc.url!, OP).json(`/v1/approvals/${token}`, { decision: 'reject' });
    expect((await write).status).toBe(200);
  }, 150_000);
});
