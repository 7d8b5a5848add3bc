import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalsStreamEvent } from '../../../services/api/live-events.ts';
import { suiteService } from '../suite-service.ts';
import { client } from '../pipeline/helpers.ts';

// Issue 18, "one request freezes the service for every tenant": a session that
// tightens its policy to `prompt` on `edit`, then sends large edits, while an
// operator stream is open. The approval card's diff once ran jsdiff on the
// event loop for every stream and reconnect (seconds per card). Now it is
// bounded, off the event loop, and computed once per approval.
const MIB = 1024 * 1024;
const svc = suiteService('cardload', {
  THINKFLOW_API_KEYS: 'k-sub:submitter,k-other:submitter,k-op:operator',
  THINKFLOW_APPROVAL_TTL_S: '600',
  // The 16 MiB edit of the issue: one tag body that large needs the tag limit (8 MiB by default) raised to the POST cap.
  THINKFLOW_MAX_TAG_BODY_BYTES: String(16 * MIB),
});
let sub: ReturnType<typeof client>;
let other: ReturnType<typeof client>;
let op: ReturnType<typeof client>;
const turns: Promise<unknown>[] = [];

/** An operator stream: every event it gets, read in the background until closed. */
function operatorStream(url: string) {
  const ctl = new AbortController();
  const events: { type: string; data: any }[] = [];
  const done = (async () => {
    const res = await fetch(`${url}/v1/approvals/events`, { headers: { authorization: 'Bearer k-op' }, signal: ctl.signal });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) return;
      buf += value;
      for (let cut = buf.indexOf('\n\n'); cut >= 0; cut = buf.indexOf('\n\n')) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const field = (n: string) => block.split('\n').find((l) => l.startsWith(`${n}:`))?.slice(n.length + 1).trim();
        const data = field('data');
        if (data) events.push({ type: field('event') ?? 'message', data: JSON.parse(data) });
      }
    }
  })().then(() => null, (err: unknown) => (ctl.signal.aborted ? null : err));
  return {
    events,
    /** Ends the stream; throws what broke it before, if anything did, or an event that is not of the stream's schema. */
    close: async () => {
      ctl.abort();
      const err = await done;
      if (err) throw err;
      for (const e of events) ApprovalsStreamEvent.parse({ event: e.type, data: e.data });
    },
  };
}

async function until<T>(what: string, f: () => Promise<T | undefined> | T | undefined, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await f();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function timed(f: () => Promise<Response>): Promise<number> {
  const t0 = performance.now();
  const res = await f();
  await res.arrayBuffer();
  expect(res.status).toBe(200);
  return performance.now() - t0;
}

const computed = async () => {
  const text = await (await fetch(`${svc.url}/metrics`, { headers: { authorization: 'Bearer k-op' } })).text();
  return [...text.matchAll(/^thinkflow_approval_views_computed_total\{result="(\w+)"\} (\d+)/gm)].reduce((n, m) => n + Number(m[2]), 0);
};

/** `n` lines, each different from every line of another prefix: the worst case of a line diff. */
const lines = (n: number, p: string) => Array.from({ length: n }, (_, i) => `${p}-${String(i).padStart(6, '0')}-xxxxxxxxxx`).join('\n') + '\n';

beforeAll(() => {
  sub = client(svc.url!, 'k-sub');
  other = client(svc.url!, 'k-other');
  op = client(svc.url!, 'k-op');
});
afterAll(async () => {
  // Reject what is still pending so the turns end before the service closes.
  const list = ((await (await op.get('/v1/approvals?status=pending')).json()) as { approvals: { token: string }[] }).approvals;
  for (const a of list) await op.json(`/v1/approvals/${a.token}`, { decision: 'reject' });
  await Promise.allSettled(turns);
});

async function editSession(): Promise<string> {
  const res = await sub.json('/v1/sessions', { approval: 'on-request', policy: { rules: [{ id: 'edits-ask', tool: 'edit', decision: 'prompt' }] } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { session_id: string }).session_id;
}

/** The first snapshot of a fresh stream (a reconnect), then closed. */
async function reconnect(): Promise<{ approvals: any[] }> {
  const s = operatorStream(svc.url!);
  try {
    return (await until('a snapshot', () => s.events.find((e) => e.type === 'snapshot'))).data;
  } finally {
    await s.close();
  }
}

/** /healthz sampled back to back while `work` runs: every latency, in ms. */
async function sampleHealth(work: () => Promise<unknown>): Promise<{ samples: number[]; max: number; p50: number }> {
  const samples: number[] = [];
  let sampling = true;
  const sampler = (async () => { while (sampling) samples.push(await timed(() => fetch(`${svc.url}/healthz`))); })();
  try {
    await work();
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    sampling = false;
    await sampler;
  }
  const sorted = [...samples].sort((x, y) => x - y);
  return { samples, max: sorted.at(-1)!, p50: sorted[sorted.length >> 1]! };
}

/** Another key's `echo`, timed (its session's container already up). */
async function echoMs(sid: string): Promise<number> {
  const t0 = performance.now();
  const r = (await (await other.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="1" cmd="echo hi" />')).json()) as { results: { status: string; stdout: string }[] };
  expect(r.results[0]).toMatchObject({ status: 'succeeded', stdout: 'hi\n' });
  return performance.now() - t0;
}

describe('issue 18: large edit approvals with an operator stream open', () => {
  it('keep /healthz under 100 ms and another key served; reconnects do not recompute the cards', async () => {
    const stream = operatorStream(svc.url!);
    try {
      await withStreamOpen(stream);
    } finally {
      await stream.close();
    }
  }, 240_000);
});

async function withStreamOpen(stream: ReturnType<typeof operatorStream>): Promise<void> {
  await until('the stream', () => stream.events.find((e) => e.type === 'snapshot'));
  // Baseline on this (shared, loaded) machine: the same work with nothing pending.
  const o = ((await (await other.json('/v1/sessions', {})).json()) as { session_id: string }).session_id;
  await echoMs(o); // starts its container
  let baseEcho = 0;
  const base = await sampleHealth(async () => {
    baseEcho = await echoMs(o);
    for (let i = 0; i < 5; i++) await reconnect();
  });

  const [a, b] = [await editSession(), await editSession()];
  // 70 KB: 1,600 lines a side, every line changed (within the diff limits: jsdiff runs, in a worker thread).
  const small = `<tf-edit id="1" path="a.txt"><old>${lines(1600, 'old')}</old><new>${lines(1600, 'new')}</new></tf-edit>`;
  expect(small.length).toBeGreaterThan(70_000);
  // ~16 MiB: 8 MiB a side, ~380,000 lines each (far over the limits: sizes and hashes only).
  const side = (p: string) => lines(Math.floor((8 * MIB - 64) / 22), p);
  const big = `<tf-edit id="1" path="b.txt"><old>${side('old')}</old><new>${side('new')}</new></tf-edit>`;
  expect(big.length).toBeGreaterThan(16 * MIB - 100);
  expect(big.length).toBeLessThanOrEqual(16 * MIB);
  turns.push(sub.text(`/v1/sessions/${a}/commands`, small), sub.text(`/v1/sessions/${b}/commands`, big));
  const card = (sid: string) => until(`the card of ${sid}`, () => stream.events.find((e) => e.type === 'approval' && e.data.session_id === sid)?.data);
  const [ca, cb] = await Promise.all([card(a), card(b)]);
  expect(ca).toMatchObject({ tool: 'edit', command: { path: 'a.txt', text_truncated: false }, edit_sides: { old: { lines: 1600 }, new: { lines: 1600 } } });
  if (ca.diff) expect(ca.diff).toHaveLength(3200); // else jsdiff gave up within its time budget, and says so
  else expect(ca.diff_note).toMatch(/^too many changes to diff within/);
  expect(cb).toMatchObject({ diff: null, diff_truncated: true, command: { text_truncated: true }, edit_sides: { old: { bytes: expect.any(Number) } } });
  expect(cb.diff_note).toMatch(/^content too large to diff \(limit 65536 bytes or 2000 lines a side\): old \d+ bytes, \d+ lines, sha256 [0-9a-f]{64}; new /);
  expect(cb.command.old_text).toHaveLength(65536);
  expect(await computed()).toBe(2);

  // While both wait: the same work as the baseline, each reconnect getting both cards.
  let echo = 0;
  const pending = await sampleHealth(async () => {
    echo = await echoMs(o);
    for (let i = 0; i < 5; i++) {
      const snap = await reconnect();
      expect(snap.approvals.map((x) => x.token).sort()).toEqual([ca.token, cb.token].sort());
      expect(snap.approvals.find((x) => x.token === cb.token)).toEqual({ ...cb, recent: expect.any(Array) });
    }
  });
  console.log(`issue 18 card load: /healthz max ${pending.max.toFixed(1)} ms, p50 ${pending.p50.toFixed(1)} ms over ${pending.samples.length} samples `
    + `(baseline: max ${base.max.toFixed(1)}, p50 ${base.p50.toFixed(1)} over ${base.samples.length}); other key's echo ${echo.toFixed(0)} ms (baseline ${baseEcho.toFixed(0)} ms)`);
  expect(pending.samples.length).toBeGreaterThan(10);
  // 100 ms alone on the machine; when other work loads it, no worse than twice the baseline's own worst sample.
  expect(pending.max).toBeLessThan(Math.max(100, 2 * base.max));
  expect(echo).toBeLessThan(Math.max(1000, 3 * baseEcho));
  // Computed once per approval: five reconnects and the open stream reused them.
  expect(await computed()).toBe(2);
}
