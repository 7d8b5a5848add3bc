// SSE events (resumable, closed after job_finished) and signed webhooks with retries.
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, WEBHOOK_SECRET, type Harness } from './harness.ts';
import { TRANSCRIPTS } from './transcripts.ts';

type SseEvent = { id: number; event: string; data: Record<string, any> };

async function readSse(url: string, headers: Record<string, string> = {}): Promise<SseEvent[]> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
  expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
  const text = await res.text(); // the server closes the stream after job_finished
  return text.split('\n\n').filter((b) => b.trim()).map((block) => {
    const field = (name: string) => block.split('\n').find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim() ?? '';
    return { id: Number(field('id')), event: field('event'), data: JSON.parse(field('data')) };
  });
}

let h: Harness;
let hooks: Server;
let hookUrl: string;
const received: Array<{ body: string; signature: string; delivery: string; attempt: number }> = [];
let failFirst = 0;
let redirectsSeen = 0;
let secondSeen = 0;

beforeAll(async () => {
  // Receivers here listen on loopback, which webhooks may reach only when allowed explicitly.
  h = await startHarness('events', TRANSCRIPTS, { THINKFLOW_WEBHOOK_ALLOW: '127.0.0.1' });
  let attempts = 0;
  hooks = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/redirect') {
        redirectsSeen++;
        res.writeHead(307, { location: hookUrl.replace('/hook', '/second') }).end();
        return;
      }
      if (req.url === '/second') secondSeen++;
      attempts++;
      if (failFirst > 0) {
        failFirst--;
        res.writeHead(500).end();
        return;
      }
      received.push({ body: Buffer.concat(chunks).toString('utf8'), signature: String(req.headers['x-thinkflow-signature']), delivery: String(req.headers['x-thinkflow-delivery']), attempt: attempts });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  hooks?.close();
  await h?.close();
});

describe('job events and webhooks', () => {
  it('streams every event of the job over SSE, resumable with Last-Event-ID, closed after job_finished', async () => {
    const { job_id } = await h.submit({ task: 'a failing edit' });
    const events = await readSse(`${h.url}/v1/jobs/${job_id}/events`);
    const names = new Set(events.map((e) => e.event));
    for (const name of ['turn_started', 'reasoning_delta', 'text_delta', 'command_parsed', 'command_queued', 'command_started', 'command_finished', 'turn_ended', 'job_finished']) {
      expect(names, name).toContain(name);
    }
    expect(events.at(-1)!.event).toBe('job_finished');
    expect(events.at(-1)!.data.job.status).toBe('succeeded');
    events.forEach((e, i) => {
      expect(e.id).toBe(i + 1);
      expect(e.data).toMatchObject({ seq: e.id, job_id });
      expect(typeof e.data.at).toBe('string');
    });
    const finished = events.filter((e) => e.event === 'command_finished');
    expect(finished.map((e) => [e.data.record.id, e.data.record.status])).toEqual([['1', 'succeeded'], ['2', 'failed'], ['3', 'skipped'], ['4', 'succeeded'], ['5', 'succeeded']]);
    // text_delta carries visible text only.
    expect(events.filter((e) => e.event === 'text_delta').map((e) => e.data.text).join('')).not.toContain('<tf-');

    const cut = Math.floor(events.length / 2);
    const resumed = await readSse(`${h.url}/v1/jobs/${job_id}/events`, { 'last-event-id': String(cut) });
    expect(resumed.map((e) => e.id)).toEqual(events.slice(cut).map((e) => e.id));
    // Resuming a finished job past its last event closes at once instead of waiting forever.
    expect(await readSse(`${h.url}/v1/jobs/${job_id}/events`, { 'last-event-id': String(events.at(-1)!.id) })).toEqual([]);
  });

  it('delivers a signed webhook on completion, retrying after a failure', async () => {
    failFirst = 1;
    const { job_id, session_id } = await h.submit({ task: 'five files please', webhook: hookUrl, metadata: { ticket: 'T-1' } });
    await h.waitFinal(job_id);
    for (let i = 0; i < 100 && !received.some((r) => r.body.includes(job_id)); i++) await new Promise((r) => setTimeout(r, 100));
    const hit = received.find((r) => r.body.includes(job_id))!;
    expect(hit).toBeDefined();
    expect(hit.attempt).toBe(2);
    expect(hit.signature).toBe(`sha256=${createHmac('sha256', WEBHOOK_SECRET).update(hit.body).digest('hex')}`);
    const payload = JSON.parse(hit.body);
    expect(payload).toMatchObject({ event: 'job_finished', job: { job_id, status: 'succeeded', metadata: { ticket: 'T-1' } } });
    // What the job changed (five files added; directories are not counted) and where to take it.
    expect(payload.job.changes).toEqual({ added: 5, modified: 0, deleted: 0 });
    expect(payload.links).toEqual({
      job: `/v1/jobs/${job_id}`, workspace: `/v1/sessions/${session_id}/workspace`,
      changes: `/v1/sessions/${session_id}/changes`, patch: `/v1/sessions/${session_id}/changes?format=patch`,
    });
    const { deliveries } = await (await fetch(`${h.url}/v1/jobs/${job_id}/webhook-deliveries`)).json();
    expect(deliveries).toEqual([
      { delivery_id: expect.any(String), attempt: 1, at: expect.any(String), ok: false, status_code: 500 },
      { delivery_id: expect.any(String), attempt: 2, at: expect.any(String), ok: true, status_code: 204 },
    ]);
    // One delivery, retried: the same id on both attempts, the one the receiver saw.
    expect(deliveries[0].delivery_id).toBe(deliveries[1].delivery_id);
    expect(hit.delivery).toBe(deliveries[0].delivery_id);
  });

  it('never follows a webhook redirect (the POST body is not carried to a second address); the attempt is recorded', async () => {
    const { job_id } = await h.submit({ task: 'five files please', webhook: hookUrl.replace('/hook', '/redirect') });
    await h.waitFinal(job_id);
    let deliveries: { attempt: number; ok: boolean; status_code?: number; error?: string }[] = [];
    for (let i = 0; i < 100 && deliveries.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      deliveries = (await (await fetch(`${h.url}/v1/jobs/${job_id}/webhook-deliveries`)).json()).deliveries;
    }
    expect(deliveries).toEqual([{ delivery_id: expect.any(String), attempt: 1, at: expect.any(String), ok: false, status_code: 307, error: expect.stringMatching(/^redirect to .*\/second not followed$/) }]);
    expect(redirectsSeen).toBe(1);
    expect(secondSeen).toBe(0);
  });

  it('serves an OpenAPI 3.1 document generated from the schemas', async () => {
    const doc = await (await fetch(`${h.url}/openapi.json`)).json();
    expect(doc.openapi).toBe('3.1.0');
    const body = doc.paths['/v1/jobs'].post.requestBody.content['application/json'].schema;
    expect(body.required).toContain('task');
    expect(body.additionalProperties).toBe(false);
    expect(body.properties.flow.enum).toEqual(['thinkflow', 'react']);
  });
});
