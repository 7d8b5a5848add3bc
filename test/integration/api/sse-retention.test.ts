import { beforeAll, describe, expect, it } from 'vitest';
import { JobEvents } from '../../../services/jobs/job-events.ts';
import { readSse, type SseEvent } from '../pipeline/helpers.ts';
import { servicesForSuite } from '../suite-service.ts';

// SSE replays from the first event (API.md): every event is kept while the
// session exists, unless THINKFLOW_EVENTS_KEEP says otherwise; a client that
// asks for events no longer kept gets an explicit `gap {first_seq}` first.

/** Reads until `count` events arrived, then hangs up. */
const firstEvents = (url: string, count: number, lastEventId?: number): Promise<SseEvent[]> =>
  readSse(url, lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) }, (_e, all) => all.length === count);

const startService = servicesForSuite('sse');
async function service(env: Record<string, string> = {}) {
  const svc = await startService(env);
  const res = await fetch(`${svc.url}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  const sid = ((await res.json()) as { session_id: string }).session_id;
  const events = new JobEvents(svc.runtime.redis, svc.runtime.keys, { keep: svc.runtime.pipeline.eventsKeep, bodyBytes: svc.runtime.pipeline.bodyBytes, retentionS: svc.runtime.pipeline.retentionS });
  /** Appends n text_delta events to the session's stream, as a job runner would. */
  const flood = async (n: number) => {
    for (let i = 0; i < n; i += 2000) {
      await Promise.all(Array.from({ length: Math.min(2000, n - i) }, (_, j) => events.append(sid, 'job_flood', 'text_delta', { turn: 1, text: `d${i + j}` })));
    }
  };
  return { svc, sid, flood, url: `${svc.url}/v1/sessions/${sid}/events` };
}

let kept: Awaited<ReturnType<typeof service>>;
let trimmed: Awaited<ReturnType<typeof service>>;
beforeAll(async () => {
  kept = await service();
  trimmed = await service({ THINKFLOW_EVENTS_KEEP: '10' });
});

describe('SSE replay and retention', () => {
  it('keeps every event of a long session by default: a replay starts at seq 1', async () => {
    // Past the old silent caps (about 100,000 ledger events, 200,000 job events); then a command adds ledger events.
    await kept.flood(100_500);
    const res = await fetch(`${kept.svc.url}/v1/sessions/${kept.sid}/commands`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '<tf-touch id="1" path="x" />' });
    expect(((await res.json()) as { results: { status: string }[] }).results).toMatchObject([{ status: 'succeeded' }]);
    expect(await kept.svc.runtime.redis.xlen(kept.svc.runtime.keys.events(kept.sid))).toBe(100_503);
    const first = await firstEvents(kept.url, 2);
    expect(first.map((e) => [e.id, e.event, e.data.seq])).toEqual([['1', 'text_delta', 1], ['2', 'text_delta', 2]]);
  }, 120_000);

  it('with THINKFLOW_EVENTS_KEEP a client resuming before the oldest kept event gets gap {first_seq}, never silence', async () => {
    await trimmed.flood(1_000);
    const [oldest] = await trimmed.svc.runtime.redis.xrange(trimmed.svc.runtime.keys.events(trimmed.sid), '-', '+', 'COUNT', 1);
    const firstSeq = Number(oldest![0].split('-')[0]);
    expect(firstSeq).toBeGreaterThan(1);
    for (const resumeAt of [undefined, 0, 5, firstSeq - 2]) {
      const [gap, next] = await firstEvents(trimmed.url, 2, resumeAt);
      expect(gap, String(resumeAt)).toMatchObject({ id: null, event: 'gap', data: { first_seq: firstSeq, after: resumeAt ?? 0, session_id: trimmed.sid } });
      expect(next).toMatchObject({ id: String(firstSeq), event: 'text_delta', data: { seq: firstSeq } });
    }
    // Resuming at or after the oldest kept event needs no gap.
    for (const resumeAt of [firstSeq - 1, firstSeq]) {
      const [next] = await firstEvents(trimmed.url, 1, resumeAt);
      expect(next).toMatchObject({ id: String(resumeAt + 1), event: 'text_delta' });
    }
  });
});
