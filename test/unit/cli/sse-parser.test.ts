// The SSE parser against the event-stream rules it must follow whatever the chunking.
import { describe, expect, it } from 'vitest';
import { SseParser, type SseEvent } from '../../../services/cli/sse-parser.ts';

/** Feeds `text` cut at every given offset, and also one character at a time: the answer must not depend on chunking. */
function parse(text: string, start = ''): SseEvent[] {
  const whole = new SseParser(start).feed(text);
  const bytewise = new SseParser(start);
  const pieces = [...text].flatMap((ch) => bytewise.feed(ch));
  expect(pieces).toEqual(whole);
  return whole;
}

describe('SseParser', () => {
  it('reads id, event and data, with LF, CRLF and CR line endings', () => {
    for (const nl of ['\n', '\r\n', '\r']) {
      expect(parse(`id: 1${nl}event: turn_started${nl}data: {"a":1}${nl}${nl}id: 2${nl}data: x${nl}${nl}`)).toEqual([
        { id: '1', event: 'turn_started', data: '{"a":1}' },
        { id: '2', event: 'message', data: 'x' },
      ]);
    }
  });

  it('joins data lines with LF, drops one leading space only, ignores comments and unknown fields', () => {
    expect(parse(': hello\ndata:a\ndata:  b\nfoo: bar\ndata\n\n')).toEqual([{ id: '', event: 'message', data: 'a\n b\n' }]);
  });

  it('keeps the last id across events and starts from the given one', () => {
    expect(parse('data: a\n\nid: 9\ndata: b\n\ndata: c\n\n', '4').map((e) => e.id)).toEqual(['4', '9', '9']);
  });

  it('does not dispatch an event without data (its id still counts), nor an unterminated one (its id does not)', () => {
    const p = new SseParser();
    expect(p.feed('id: 2\nevent: ping\n\nid: 3\ndata: half')).toEqual([]);
    expect(p.lastEventId).toBe('2');
  });

  it('reads retry, ignores a bad one and an id with NUL', () => {
    const p = new SseParser('1');
    p.feed('retry: 250\nretry: soon\nid: a\0b\n\n');
    expect([p.retryMs, p.lastEventId]).toEqual([250, '1']);
  });

  it('treats CR then LF in the next chunk as one line end', () => {
    const p = new SseParser();
    expect([...p.feed('data: x\r'), ...p.feed('\n'), ...p.feed('\r\n')]).toEqual([{ id: '', event: 'message', data: 'x' }]);
  });

  it('skips a leading BOM', () => {
    expect(parse('\uFEFFdata: x\n\n')).toEqual([{ id: '', event: 'message', data: 'x' }]);
  });
});
