import { afterAll, describe, expect, it, vi } from 'vitest';
import { EventHub, readEventPage, readEvents } from '../../../services/pipeline/event-reader.ts';
import { EventWriter } from '../../../services/pipeline/event-writer.ts';
import type { SessionEvent } from '../../../services/pipeline/events.ts';
import { createKeys } from '../../../services/pipeline/keys.ts';
import { createRedis } from '../../../services/pipeline/redis.ts';
import { captureLog, SAMPLES } from '../../unit/pipeline/event-samples.ts';
import { cleanupPrefix, REDIS_URL, testPrefix } from './helpers.ts';

// The writer's events round-trip through the reader on a real Redis: stored
// by the appendEvent script (alone or inside a caller's MULTI), read back
// typed and in order, pushed live to the hub, and a malformed entry logged
// with its session and stepped over.

const prefix = testPrefix('eventlog');
const keys = createKeys(prefix);
const redis = createRedis(REDIS_URL, 'tft-eventlog');
const sub = createRedis(REDIS_URL, 'tft-eventlog-sub');
const writer = new EventWriter(redis, keys, 0, 65536);
let n = 0;
const newSid = () => `ses_evlog${++n}`;

afterAll(async () => {
  await cleanupPrefix(prefix);
  redis.disconnect();
  sub.disconnect();
});

const appended = [
  SAMPLES.files_seeded, SAMPLES.turn_started, SAMPLES.reasoning_delta, SAMPLES.text_delta,
  SAMPLES.command_parsed, SAMPLES.parse_error, SAMPLES.turn_ended,
];

describe('the event log on Redis', () => {
  it('reads back every appended event typed, numbered from 1, with the fields in wire order', async () => {
    const sid = newSid();
    const seqs = [];
    for (const body of [...appended, SAMPLES.job_finished]) seqs.push(await writer.append(sid, 'job_1', body));
    expect(seqs).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);

    const events = await readEvents(redis, keys, sid);
    expect(events.map((e) => e.type)).toEqual([...appended.map((b) => b.type), 'job_finished']);
    [...appended, SAMPLES.job_finished].forEach((body, i) => {
      const e = events[i]!;
      expect(e).toEqual({ seq: i + 1, index: 0, session_id: sid, job_id: 'job_1', at: expect.any(String), ...body });
      expect(Object.keys(e).slice(0, 6)).toEqual(['seq', 'index', 'type', 'session_id', 'job_id', 'at']);
    });
    const last = events.at(-1)!;
    expect(last.type === 'job_finished' && last.job.status).toBe('succeeded');
  });

  it('the job emitter writes for its session and job only', async () => {
    const sid = newSid();
    const emit = writer.emitter(sid, 'job_7');
    await emit({ type: 'text_delta', turn: 3, text: 'hello' });
    expect(await readEvents(redis, keys, sid)).toEqual([
      { seq: 1, index: 0, type: 'text_delta', session_id: sid, job_id: 'job_7', at: expect.any(String), turn: 3, text: 'hello' },
    ]);
  });

  it('pushes each event, typed, to the live listeners of its session', async () => {
    const sid = newSid();
    const hub = new EventHub(sub, keys);
    const got: SessionEvent[] = [];
    const arrived = new Promise<void>((resolve) => {
      void hub.subscribe(sid, (e) => { got.push(e); if (got.length === 2) resolve(); }).then(async () => {
        await writer.append(sid, null, SAMPLES.turn_started);
        await writer.append(sid, null, SAMPLES.files_seeded);
      });
    });
    await arrived;
    hub.close();
    expect(got.map((e) => [e.seq, e.type, e.job_id])).toEqual([[1, 'turn_started', null], [2, 'files_seeded', null]]);
  });

  it('gives a listener with types only those, and parses no message that no listener wants', async () => {
    const sid = newSid();
    const hub = new EventHub(sub, keys);
    const only: SessionEvent[] = [];
    const off = await hub.subscribe(sid, (e) => only.push(e), new Set(['files_seeded']));
    const parse = vi.spyOn(JSON, 'parse');
    await writer.append(sid, null, SAMPLES.turn_started);
    await writer.append(sid, null, SAMPLES.files_seeded);
    await vi.waitFor(() => expect(only).toHaveLength(1));
    const parsed = parse.mock.calls.filter(([text]) => typeof text === 'string' && text.includes(`"session_id":"${sid}"`)).map(([text]) => JSON.parse(text as string).type);
    parse.mockRestore();
    expect(parsed).toEqual(['files_seeded']); // turn_started was not parsed: nobody wanted it
    // A listener without types gets every event, and the typed one still only its own.
    const all: SessionEvent[] = [];
    const offAll = await hub.subscribe(sid, (e) => all.push(e));
    await writer.append(sid, null, SAMPLES.turn_started);
    await writer.append(sid, null, SAMPLES.files_seeded);
    await vi.waitFor(() => expect(all).toHaveLength(2));
    expect(only.map((e) => e.type)).toEqual(['files_seeded', 'files_seeded']);
    off();
    offAll();
    hub.close();
  });

  it('steps over a malformed entry, logging it with its session, and reports the seqs it read', async () => {
    const sid = newSid();
    await writer.append(sid, 'job_1', SAMPLES.turn_started);
    await redis.incr(keys.eventSeq(sid));
    await redis.xadd(keys.events(sid), '2-0', 't', 'text_delta', 'd', '{"seq":2,"index":0,"type":"text_delta"}');
    await writer.append(sid, 'job_1', SAMPLES.turn_ended);
    let page: Awaited<ReturnType<typeof readEventPage>> | undefined;
    const lines = await captureLog(async () => { page = await readEventPage(redis, keys, sid, 0, 10); });
    expect(page!.events.map((e) => e.seq)).toEqual([1, 3]);
    expect([page!.read, page!.firstSeq, page!.lastSeq]).toEqual([3, 1, 3]);
    expect(lines).toEqual([expect.objectContaining({ level: 50, session_id: sid, where: 'stream entry 2-0', type: 'text_delta' })]);
  });

  it('trims the stream to about `keep` events when asked, numbering on', async () => {
    const sid = newSid();
    const trimmed = new EventWriter(redis, keys, 5, 65536);
    for (let i = 0; i < 300; i++) await trimmed.append(sid, null, SAMPLES.text_delta);
    const page = await readEventPage(redis, keys, sid, 0, 1000);
    expect(page.read).toBeLessThan(300);
    expect(page.lastSeq).toBe(300);
  });
});
