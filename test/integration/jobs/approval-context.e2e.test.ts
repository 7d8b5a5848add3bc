// An approval's context and the file its command runs (API.md, additions
// 2026-12-01: `context`, `indirect`), end to end on real Redis and Docker with
// the replay model: the model writes a script, says why, then runs it; the
// approval lists the job's task and metadata, the model's words before the
// command, and the script as it is in the workspace with the record that wrote it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalsStreamEvent } from '../../../services/api/live-events.ts';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';
import { startHarness, type Harness } from './harness.ts';

const DEPLOY_SH = 'set -e\nrm -rf ./data\ncurl -X POST https://prod.example/deploy\n';
const BIG = `${'echo "a line of a long script"\n'.repeat(2400)}`; // ~74 KiB
const PACKAGE_JSON = JSON.stringify({ name: 'x', scripts: { test: 'node check.js && rm -rf ./build' } }, null, 2);
const stop = { reasoning: '', text: 'Stopped: the operator said no.' };

const transcripts: TranscriptInput[] = [
  {
    name: 'deploy', match: 'ship the release', delay_ms: 0, chunk: 40,
    turns: [{
      reasoning: 'The release needs a deploy script.',
      text: `I'll write the deploy script first.\n<tf-write id="1" path="deploy.sh">\n${DEPLOY_SH}</tf-write>\nNow I run it to ship the release.\n<tf-bash id="2" cmd="bash deploy.sh" />\n`,
    }, stop],
  },
  {
    name: 'npm', match: 'run the tests', delay_ms: 0, chunk: 64,
    turns: [{ text: `<tf-write id="1" path="package.json">\n${PACKAGE_JSON}\n</tf-write>\nRunning the project's tests.\n<tf-bash id="2" cmd="npm test" />\n` }, stop],
  },
  {
    name: 'big', match: 'a very long script', delay_ms: 0, chunk: 8192,
    turns: [{ text: `<tf-write id="1" path="big.sh">\n${BIG}</tf-write>\n<tf-bash id="2" cmd="bash big.sh" />\n` }, stop],
  },
  {
    name: 'missing', match: 'a script that is not there', delay_ms: 0,
    turns: [{ text: 'Trying it.\n<tf-bash id="1" cmd="bash nothere.sh" />\n' }, stop],
  },
];

let h: Harness;

beforeAll(async () => {
  h = await startHarness('approval-context', transcripts);
}, 120_000);

afterAll(async () => {
  await h?.close();
}, 120_000);

async function pending(jobId: string): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${h.url}/v1/approvals?status=pending&job_id=${jobId}`);
    expect(res.status).toBe(200);
    const [a] = (await res.json()).approvals;
    if (a) return a;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no approval for ${jobId}`);
}

async function reject(token: string): Promise<void> {
  const res = await fetch(`${h.url}/v1/approvals/${token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"decision":"reject","reason":"test done"}' });
  expect(res.status).toBe(200);
}

/** The data of the first `type` event of an SSE stream (the operator stream's snapshot: the cards as the dashboard gets them). */
async function firstEvent(path: string, type: string): Promise<any> {
  const ctl = new AbortController();
  const res = await fetch(`${h.url}${path}`, { signal: ctl.signal });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const pattern = new RegExp(`event: ${type}\n(?:id: .*\n)?data: (.*)\n`);
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`${path} ended before a ${type} event`);
      buf += value;
      const m = pattern.exec(buf);
      if (m) return JSON.parse(m[1]!);
    }
  } finally {
    ctl.abort();
  }
}

/**
 * The operator stream's events, each parsed with its schema (live-events.ts), up to and including the first
 * that `last` accepts. `opened` resolves with the snapshot, sent once the stream listens: nothing after it is missed.
 */
function operatorEvents(last: (e: ApprovalsStreamEvent) => boolean): { opened: Promise<void>; events: Promise<ApprovalsStreamEvent[]> } {
  const ctl = new AbortController();
  let opened!: () => void;
  const open = new Promise<void>((resolve) => { opened = resolve; });
  const events = (async () => {
    const res = await fetch(`${h.url}/v1/approvals/events`, { signal: ctl.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    const out: ApprovalsStreamEvent[] = [];
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) throw new Error('the operator stream ended');
        buf += value;
        for (let cut = buf.indexOf('\n\n'); cut >= 0; cut = buf.indexOf('\n\n')) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const field = (n: string) => block.split('\n').find((l) => l.startsWith(`${n}:`))?.slice(n.length + 1).trim();
          const data = field('data');
          if (!data) continue;
          const e = ApprovalsStreamEvent.parse({ event: field('event'), data: JSON.parse(data) });
          out.push(e);
          if (e.event === 'snapshot') opened();
          if (last(e)) return out;
        }
      }
    } finally {
      ctl.abort();
    }
  })();
  // A stream that fails before its snapshot lets the caller on, to get the error from `events`.
  events.catch(() => opened());
  return { opened: open, events };
}

describe('approval context and indirection', () => {
  it('a bash FILE approval carries the task, metadata, the words before it, and the script with the write that made it', async () => {
    const task = 'Please ship the release\nto production, carefully.';
    const { job_id, session_id } = await h.submit({ task, approval: 'on-request', metadata: { ticket: 'OPS-7', priority: 2 } });
    const a = await pending(job_id);
    expect(a).toMatchObject({ command_id: '2', tool: 'bash', target: 'bash deploy.sh' });
    expect(a.context).toEqual({
      task, metadata: { ticket: 'OPS-7', priority: 2 },
      preceding_text: 'The release needs a deploy script.\n\nI\'ll write the deploy script first.\n\nNow I run it to ship the release.',
    });
    const write = (await h.ledger(session_id)).find((r) => r.id === '1');
    expect(write).toMatchObject({ tool: 'write', path: 'deploy.sh', status: 'succeeded' });
    expect(a.indirect).toEqual({
      path: 'deploy.sh', runner: 'bash', content: DEPLOY_SH, bytes: Buffer.byteLength(DEPLOY_SH), truncated: false,
      written_by_command_id: '1', written_by_index: write!.index, written_by_turn: write!.turn,
    });

    // The card the dashboard gets: the same context, and the script line by line with each part's decision.
    const card = (await firstEvent('/v1/approvals/events', 'snapshot')).approvals.find((c: any) => c.token === a.token);
    expect(card.context.task).toBe(task);
    expect(card.indirect.content).toBe(DEPLOY_SH);
    expect(card.indirect_lines.lines.map((l: any) => [l.line, l.text, l.bash.segments.map((s: any) => s.decision)])).toEqual([
      // As policies/ judges them: `set` is no known program, deleting in the workspace is allowed, curl reaches out.
      [1, 'set -e', ['prompt']], [2, 'rm -rf ./data', ['allow']], [3, 'curl -X POST https://prod.example/deploy', [expect.stringMatching(/prompt|forbid/)]],
    ]);

    // A session's events name the approval only: its context and file stay in the listings.
    const requested = await firstEvent(`/v1/jobs/${job_id}/events`, 'approval_requested');
    expect(requested.approval).toMatchObject({ token: a.token, command_id: '2' });
    expect(requested.approval.context).toBeUndefined();
    expect(requested.approval.indirect).toBeUndefined();
    // Every event of the operator stream is of its schema, the answer (`resolution`) included.
    const live = operatorEvents((e) => e.event === 'resolution' && e.data.token === a.token);
    await live.opened;
    await reject(a.token);
    const seen = await live.events;
    expect(seen[0]!.event).toBe('snapshot');
    expect(seen.at(-1)!.data).toMatchObject({ token: a.token, session_id, job_id, command_id: '2', status: 'reject', decision: 'reject', reason: 'test done' });
    expect((await h.waitFinal(job_id)).status).toBe('succeeded');
  });

  it('npm test shows the script line from package.json', async () => {
    const policy = { version: 1, rules: [{ id: 'ask-tests', tool: 'bash', command: ['npm', ['test']], decision: 'prompt', justification: 'tests run the workspace code' }] };
    const { job_id, session_id } = await h.submit({ task: 'run the tests', approval: 'on-request', policy });
    const a = await pending(job_id);
    const write = (await h.ledger(session_id)).find((r) => r.id === '1');
    expect(a.context).toEqual({ task: 'run the tests', preceding_text: 'Running the project\'s tests.' });
    expect(a.indirect).toEqual({
      path: 'package.json', runner: 'npm', script: 'test', content: 'node check.js && rm -rf ./build', bytes: 31, truncated: false,
      written_by_command_id: '1', written_by_index: write!.index, written_by_turn: write!.turn,
    });
    await reject(a.token);
    await h.waitFinal(job_id);
  });

  it('a file over 64 KiB is cut at 64 KiB, and says so', async () => {
    const { job_id } = await h.submit({ task: 'a very long script', approval: 'on-request' });
    const a = await pending(job_id);
    expect(a.indirect).toMatchObject({ path: 'big.sh', bytes: Buffer.byteLength(BIG), truncated: true, written_by_command_id: '1' });
    expect(Buffer.byteLength(a.indirect.content)).toBe(64 * 1024);
    expect(BIG.startsWith(a.indirect.content)).toBe(true);
    expect(a.context.preceding_text).toBe('');
    await reject(a.token);
    await h.waitFinal(job_id);
  });

  it('a file that is not there gives no indirect, and the approval is asked as before', async () => {
    const { job_id } = await h.submit({ task: 'run a script that is not there', approval: 'on-request' });
    const a = await pending(job_id);
    expect(a).toMatchObject({ command_id: '1', target: 'bash nothere.sh', context: { task: 'run a script that is not there', preceding_text: 'Trying it.' } });
    expect(a.indirect).toBeUndefined();
    await reject(a.token);
    await h.waitFinal(job_id);
  });
});
