// Steering and pause/resume end to end (API.md additions), on real Redis,
// Docker and BullMQ with a scripted model: an interrupt stops the model's
// stream while the turn's queued commands still run, the next model request
// carries the message; a pause lets the running command finish and starts
// nothing new until resume.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService } from '../../../services/main/index.ts';
import { testConfig } from '../pipeline/helpers.ts';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';
import { lastUserMessage, startHarness, type Harness } from './harness.ts';

const TAIL = 'TAIL-NEVER-SENT';

/** A first call that ends the job unless a message arrives while its sleep runs. */
const WROTE_ONE_THEN_SLEPT = { reasoning: '<tf-write id="1" path="first.txt">\none\n</tf-write>\n<tf-bash id="2" cmd="sleep 2" />', text: 'Wrote one.' };

const STEERING: TranscriptInput[] = [
  {
    // Two commands at once, then a long slow text: the interrupt lands mid-stream.
    name: 'steer', match: 'steer me', delay_ms: 50, chunk: 4,
    turns: [
      {
        reasoning: '<tf-bash id="1" cmd="sleep 3" />\n<tf-write id="2" path="queued.txt">\nstill written\n</tf-write>\n',
        text: `Working slowly ${'. '.repeat(150)}${TAIL}`,
      },
      { reasoning: '<tf-write id="3" path="steered.txt">\nafter the message\n</tf-write>', text: 'Done as you asked.' },
    ],
  },
  {
    // The first call ends the job unless a message arrives while its commands still run.
    name: 'late', match: 'a message after the stream', delay_ms: 0,
    turns: [
      WROTE_ONE_THEN_SLEPT,
      { reasoning: '<tf-write id="3" path="second.txt">\ntwo\n</tf-write>\n<tf-bash id="4" cmd="exit 3" />', text: 'Wrote two.' },
    ],
  },
  {
    // Steered on like 'late', then cancelled while the second call's commands still run.
    name: 'cut', match: 'steered then cancelled', delay_ms: 0,
    turns: [
      WROTE_ONE_THEN_SLEPT,
      { reasoning: '<tf-write id="3" path="second.txt">\ntwo\n</tf-write>\n<tf-bash id="4" cmd="sleep 30" />', text: 'Wrote two.' },
    ],
  },
  {
    name: 'pause', match: 'pause around a command', delay_ms: 0,
    turns: [{ reasoning: '<tf-bash id="1" cmd="sleep 3" />\n<tf-write id="2" path="after.txt">\nafter the pause\n</tf-write>', text: 'Slept and wrote.' }],
  },
];

let h: Harness;
beforeAll(async () => { h = await startHarness('steering', STEERING); });
afterAll(async () => { await h?.close(); });

const post = (path: string, body?: unknown, base = h.url) => fetch(`${base}/v1/jobs/${path}`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
});

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function eventsOf(jobId: string): Promise<Array<{ event: string; data: Record<string, unknown> }>> {
  const text = await (await fetch(`${h.url}/v1/jobs/${jobId}/events`)).text();
  return text.split('\n\n').flatMap((block) => {
    const event = /^event: (.+)$/m.exec(block)?.[1];
    const data = /^data: (.+)$/m.exec(block)?.[1];
    return event && data ? [{ event, data: JSON.parse(data) as Record<string, unknown> }] : [];
  });
}

describe('steering a running job', () => {
  it('interrupt: the stream stops, the queued commands still finish, the next request carries the message', async () => {
    const { job_id, session_id } = await h.submit({ task: 'steer me' });
    await until('the write to queue behind the running sleep', async () => {
      const l = await h.ledger(session_id);
      return l.some((e) => e.id === '1' && e.status === 'running') && l.some((e) => e.id === '2' && e.status === 'queued');
    });
    const res = await post(`${job_id}/messages`, { text: 'Also write steered.txt, please.', interrupt: true });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ job_id, interrupt: true, message_id: expect.stringMatching(/^msg_/) });

    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'succeeded', api_calls: 2, error: null });
    const ledger = await h.ledger(session_id);
    expect(ledger.map((e) => [e.id, e.status])).toEqual([['1', 'succeeded'], ['2', 'succeeded'], ['3', 'succeeded']]);
    expect(await h.file(session_id, 'queued.txt')).toBe('still written\n');
    expect(await h.file(session_id, 'steered.txt')).toBe('after the message\n');
    // The second request carries the message; the first stream never got to its end.
    expect(h.model.log).toHaveLength(2);
    expect(lastUserMessage(h.model, 1)).toContain('[THINKFLOW MESSAGE]');
    expect(lastUserMessage(h.model, 1)).toContain('Also write steered.txt, please.');
    expect(JSON.stringify(h.model.log[1]!.messages)).not.toContain(TAIL);
    const events = await eventsOf(job_id);
    expect(events.find((e) => e.event === 'message_added')?.data).toMatchObject({ text: 'Also write steered.txt, please.', interrupt: true });
    expect(events.find((e) => e.event === 'turn_ended')?.data).toMatchObject({ api_call: 1, outcome: 'steered' });
    // A finished job takes no more messages.
    expect((await post(`${job_id}/messages`, { text: 'too late' })).status).toBe(409);
  });

  it('a message after the stream, while its commands run: one more call, and the job\'s change counts include what it wrote', async () => {
    // The second call fails a command and the job has no third: it ends on a turn that did not look like its last.
    const { job_id, session_id } = await h.submit({ task: 'a message after the stream', limits: { max_turns: 2 } });
    await until('the sleep to run', async () => (await h.ledger(session_id)).find((e) => e.id === '2' && e.status === 'running'));
    expect((await post(`${job_id}/messages`, { text: 'Write second.txt too.' })).status).toBe(202);
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'failed', api_calls: 2, error: expect.stringContaining('max_turns') });
    expect(await h.file(session_id, 'second.txt')).toBe('two\n');
    // The workspace read ahead at the first call's end (when it looked like the last) is not what the job reports.
    expect(job.changes).toEqual({ added: 2, modified: 0, deleted: 0 });
  });

  it('steered on, then cancelled while the second call\'s commands run: the change counts still include its write', async () => {
    const { job_id, session_id } = await h.submit({ task: 'steered then cancelled' });
    await until('the sleep to run', async () => (await h.ledger(session_id)).find((e) => e.id === '2' && e.status === 'running'));
    expect((await post(`${job_id}/messages`, { text: 'Write second.txt too.' })).status).toBe(202);
    await until('second.txt written, the long sleep running', async () => {
      const l = await h.ledger(session_id);
      return l.some((e) => e.id === '3' && e.status === 'succeeded') && l.some((e) => e.id === '4' && e.status === 'running');
    });
    expect((await post(`${job_id}/cancel`)).status).toBe(202);
    const job = await h.waitFinal(job_id);
    expect(job.status).toBe('cancelled');
    // The second call never completed (cancelled mid-drain): the reading taken after the first is stale all the same.
    expect(job.changes).toEqual({ added: 2, modified: 0, deleted: 0 });
  });

  it('bad messages: empty, over 64 KiB (naming the field), unknown fields, past the pending cap; an unknown job is a 404', async () => {
    const { job_id } = await h.submit({ task: 'pause around a command' });
    for (const body of [{ text: '' }, { text: 'x'.repeat(64 * 1024 + 1) }, { text: 'hi', extra: 1 }]) {
      const res = await post(`${job_id}/messages`, body);
      expect(res.status).toBe(400);
      const err = (await res.json()) as { error: { code: string; details: Array<{ path: string }> } };
      expect(err.error.code).toBe('invalid_body');
    }
    const long = await post(`${job_id}/messages`, { text: 'x'.repeat(64 * 1024 + 1) });
    expect(((await long.json()) as { error: { details: Array<{ path: string }> } }).error.details[0]!.path).toBe('text');
    expect((await post('job_nope/messages', { text: 'hi' })).status).toBe(404);
    // Paused, no model call takes messages: the job holds 32 at most.
    expect((await post(`${job_id}/pause`)).status).toBe(202);
    for (let i = 0; i < 32; i++) expect((await post(`${job_id}/messages`, { text: `note ${i}` })).status).toBe(202);
    const full = await post(`${job_id}/messages`, { text: 'one too many' });
    expect(full.status).toBe(429);
    expect(await full.json()).toMatchObject({ error: { code: 'too_many', details: { cap: 32 } } });
    await post(`${job_id}/cancel`);
    await h.waitFinal(job_id);
  });
});

describe('pause and resume', () => {
  it('the running command finishes, nothing new starts until resume, then the job ends normally', async () => {
    const { job_id, session_id } = await h.submit({ task: 'pause around a command' });
    await until('the sleep to start', async () => (await h.ledger(session_id)).find((e) => e.id === '1' && e.status === 'running'));
    expect((await post(`${job_id}/resume`)).status).toBe(409); // not paused
    const paused = await post(`${job_id}/pause`);
    expect(paused.status).toBe(202);
    expect(await paused.json()).toMatchObject({ job_id, status: 'paused' });
    expect((await post(`${job_id}/pause`)).status).toBe(202); // pausing a paused job changes nothing

    await until('the sleep to finish', async () => (await h.ledger(session_id)).find((e) => e.id === '1' && e.status === 'succeeded'));
    await new Promise((r) => setTimeout(r, 1500));
    expect((await h.ledger(session_id)).find((e) => e.id === '2')?.status).toBe('queued');
    expect((await h.job(job_id)).status).toBe('paused');
    expect(await h.file(session_id, 'after.txt')).toBeNull();

    const resumed = await post(`${job_id}/resume`);
    expect(resumed.status).toBe(202);
    expect(((await resumed.json()) as { status: string }).status).not.toBe('paused');
    const job = await h.waitFinal(job_id);
    expect(job).toMatchObject({ status: 'succeeded', api_calls: 1 });
    expect(await h.file(session_id, 'after.txt')).toBe('after the pause\n');
    const names = (await eventsOf(job_id)).map((e) => e.event);
    expect(names.indexOf('job_paused')).toBeGreaterThan(-1);
    expect(names.indexOf('job_resumed')).toBeGreaterThan(names.indexOf('job_paused'));
    // Finished: neither pause nor resume applies any more.
    const late = await post(`${job_id}/pause`);
    expect(late.status).toBe(409);
    expect(((await late.json()) as { error: { code: string } }).error.code).toBe('job_finished');
    expect((await post(`${job_id}/resume`)).status).toBe(409);
  });

  it('a job cancelled while paused leaves its session queue running', async () => {
    const { job_id, session_id } = await h.submit({ task: 'pause around a command' });
    await until('the sleep to start', async () => (await h.ledger(session_id)).find((e) => e.id === '1' && e.status === 'running'));
    expect((await post(`${job_id}/pause`)).status).toBe(202);
    await post(`${job_id}/cancel`);
    expect((await h.waitFinal(job_id)).status).toBe('cancelled');
    // The session's own commands run again once the job is over.
    const res = await fetch(`${h.url}/v1/sessions/${session_id}/commands`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '<tf-write id="9" path="later.txt">\nok\n</tf-write>' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { results: Array<{ status: string }> }).results[0]!.status).toBe('succeeded');
  });
});

describe('across processes', () => {
  it('another API process steers, pauses and resumes a job this one runs', async () => {
    const other = await startService(testConfig(h.prefix, { PORT: '0', THINKFLOW_ROLE: 'api' }), {});
    try {
      const { job_id, session_id } = await h.submit({ task: 'pause around a command' });
      await until('the sleep to start', async () => (await h.ledger(session_id)).find((e) => e.id === '1' && e.status === 'running'));
      const paused = await post(`${job_id}/pause`, undefined, other.url!);
      expect(paused.status).toBe(202);
      expect(await paused.json()).toMatchObject({ status: 'paused' });
      expect((await post(`${job_id}/messages`, { text: 'from the other process' }, other.url!)).status).toBe(202);
      await until('the sleep to finish', async () => (await h.ledger(session_id)).find((e) => e.id === '1' && e.status === 'succeeded'));
      await new Promise((r) => setTimeout(r, 1000));
      expect((await h.ledger(session_id)).find((e) => e.id === '2')?.status).toBe('queued');
      expect((await post(`${job_id}/resume`, undefined, other.url!)).status).toBe(202);
      const job = await h.waitFinal(job_id);
      // The message arrived after the model's only call: one more call carries it.
      expect(job).toMatchObject({ status: 'succeeded', api_calls: 2 });
      const second = h.model.log.filter((r) => JSON.stringify(r.messages).includes('from the other process'));
      expect(second).toHaveLength(1);
    } finally {
      await other.close();
    }
  });
});
