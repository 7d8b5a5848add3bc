import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, SessionEvent, StreamEvent } from '../../../services/pipeline/events.ts';
import { gapEvent, parseEvent, parseLiveEvent } from '../../../services/pipeline/event-reader.ts';
import { ledgerEventArgs } from '../../../services/pipeline/event-writer.ts';
import { APPROVAL, captureLog, RECORD, SAMPLES, stored } from './event-samples.ts';

// The event union is the wire contract of SSE: every event type parses, an
// unknown type or a missing field is refused, and what the writer builds for
// the ledger scripts reads back as the event it describes, byte for byte.

const base = { seq: 7, index: 0, session_id: 'ses_1', job_id: 'job_1', at: '2026-01-01T00:00:00.000Z' };
const samples = Object.values(SAMPLES).map((body) => ({ ...base, ...body }));

describe('the session event union', () => {
  it('has a sample of every type, and the types are exactly the SSE names of API.md the code emits', () => {
    expect(Object.keys(SAMPLES).sort()).toEqual([...EVENT_TYPES].sort());
    expect([...EVENT_TYPES].sort()).toEqual([
      'approval_requested', 'approval_resolved', 'command_finished', 'command_parsed', 'command_queued', 'command_started',
      'files_seeded', 'job_finished', 'job_paused', 'job_resumed', 'message_added', 'network_connection', 'parse_error', 'reasoning_delta', 'text_delta',
      'turn_ended', 'turn_started', 'validation_finished', 'validation_started',
    ]);
  });

  it.each(samples.map((s) => [s.type, s] as const))('parses %s', (_type, sample) => {
    expect(SessionEvent.safeParse(sample).success).toBe(true);
    expect(StreamEvent.safeParse(sample).success).toBe(true);
  });

  it('refuses an unknown type', () => {
    expect(SessionEvent.safeParse({ ...base, type: 'command_exploded' }).success).toBe(false);
    expect(StreamEvent.safeParse({ ...base, type: 'validation_exploded' }).success).toBe(false);
  });

  it.each(samples.map((s) => [s.type, s] as const))('refuses %s without any one of its fields', (_type, sample) => {
    for (const field of Object.keys(sample).filter((k) => k !== 'type')) {
      const { [field]: _dropped, ...rest } = sample as Record<string, unknown>;
      expect(SessionEvent.safeParse(rest).success, `${sample.type} without ${field}`).toBe(false);
    }
  });

  it('refuses a field of the wrong shape (a command_finished record without its status)', () => {
    const { status: _s, ...record } = RECORD;
    expect(SessionEvent.safeParse({ ...base, type: 'command_finished', record }).success).toBe(false);
  });

  it('gap is a stream event, never a stored one, and its SSE data keeps the order clients have always seen', () => {
    const gap = gapEvent('ses_1', 12, 3, 'job_1');
    expect(StreamEvent.safeParse(gap).success).toBe(true);
    expect(SessionEvent.safeParse(gap).success).toBe(false);
    const { type: _t, ...data } = gap;
    expect(Object.keys(data)).toEqual(['first_seq', 'after', 'session_id', 'job_id', 'at']);
    expect(Object.keys(gapEvent('ses_1', 12, 3))).toEqual(['type', 'first_seq', 'after', 'session_id', 'at']);
  });
});

describe('ledger events built for the scripts', () => {
  const at = '2026-01-01T00:00:00.000Z';
  const read = (args: [string, string], index: number) => parseEvent(stored(args[1], 9, index), 'ses_1', 'test');

  it('command_finished carries the record; queued/started a summary; approval events the approval', () => {
    const finished = read(ledgerEventArgs('command_finished', { sid: 'ses_1', jobId: null, at, record: RECORD }), 1);
    expect(finished).toEqual({ seq: 9, index: 1, type: 'command_finished', session_id: 'ses_1', job_id: null, at, record: RECORD });
    const queued = read(ledgerEventArgs('command_queued', { sid: 'ses_1', jobId: 'job_1', at, record: { ...RECORD, status: 'queued' } }), 1);
    expect(queued).toMatchObject({ type: 'command_queued', command: { turn: 1, id: '1', tool: 'write', status: 'queued', flow: 'text', target: 'a.txt' } });
    const asked = read(ledgerEventArgs('approval_requested', { sid: 'ses_1', jobId: 'job_1', at, record: RECORD, approval: APPROVAL }), 2);
    expect(asked).toMatchObject({ type: 'approval_requested', approval: APPROVAL });
  });

  it('keeps the wire order of the fields: type, ids, time, then the payload', () => {
    const [type, json] = ledgerEventArgs('command_started', { sid: 'ses_1', jobId: 'job_1', at, record: RECORD });
    expect(type).toBe('command_started');
    expect(Object.keys(JSON.parse(stored(json, 1, 1)) as object)).toEqual(['seq', 'index', 'type', 'session_id', 'job_id', 'at', 'command']);
    expect(Object.keys((JSON.parse(json) as { command: object }).command)).toEqual(['turn', 'id', 'tool', 'status', 'flow', 'target']);
  });

  it('an approval event without its approval does not read back: the reader logs it with its ids', async () => {
    let out: unknown = 'unset';
    const lines = await captureLog(() => { out = read(ledgerEventArgs('approval_resolved', { sid: 'ses_1', jobId: 'job_1', at, record: RECORD }), 2); });
    expect(out).toBeNull();
    expect(lines).toEqual([expect.objectContaining({ level: 50, session_id: 'ses_1', job_id: 'job_1', type: 'approval_resolved' })]);
  });
});

describe('parseEvent', () => {
  it('returns the stored object as written (field order included), not a re-ordered copy', () => {
    const json = '{"seq":3,"index":0,"type":"text_delta","session_id":"ses_1","job_id":"job_1","at":"t","turn":2,"text":"x","extra":"kept"}';
    expect(JSON.stringify(parseEvent(json, 'ses_1', 'test'))).toBe(json);
  });

  it('logs an entry that is not JSON with its session id, and returns null', async () => {
    let out: unknown = 'unset';
    const lines = await captureLog(() => { out = parseEvent('{"seq":', 'ses_9', 'stream entry 4-0'); });
    expect(out).toBeNull();
    expect(lines).toEqual([expect.objectContaining({ level: 50, session_id: 'ses_9', where: 'stream entry 4-0' })]);
  });
});

describe('parseLiveEvent (a channel message: its envelope checked, not its body)', () => {
  it('returns a message of the union as published', () => {
    const json = '{"seq":3,"index":0,"type":"text_delta","session_id":"ses_1","job_id":"job_1","at":"t","turn":2,"text":"x"}';
    expect(JSON.stringify(parseLiveEvent(json, 'ses_1', 'test'))).toBe(json);
  });

  it.each([
    ['not JSON', '{"seq":'],
    ['not an object', '7'],
    ['a type outside the union', '{"seq":3,"type":"rm_rf","session_id":"ses_1"}'],
    ['no seq', '{"type":"text_delta","session_id":"ses_1"}'],
    ['a seq that is not an integer', '{"seq":"3","type":"text_delta","session_id":"ses_1"}'],
    ['no session', '{"seq":3,"type":"text_delta"}'],
    ["another session's event on this session's channel", '{"seq":3,"type":"text_delta","session_id":"ses_other"}'],
  ])('logs %s with its session id, and returns null', async (_what, json) => {
    let out: unknown = 'unset';
    const lines = await captureLog(() => { out = parseLiveEvent(json, 'ses_9', 'channel c'); });
    expect(out).toBeNull();
    expect(lines).toEqual([expect.objectContaining({ level: 50, session_id: 'ses_9', where: 'channel c' })]);
  });
});
