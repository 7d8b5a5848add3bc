import type { Context } from 'hono';
import { describe, expect, it } from 'vitest';
import { resumePoint } from '../../../services/api/sse.ts';

const ctx = (lastEventId: string | undefined) =>
  ({ req: { header: () => lastEventId, query: () => undefined } }) as unknown as Context;

describe('resumePoint (Last-Event-ID)', () => {
  it('reads a seq, 0 without one', () => {
    expect(resumePoint(ctx(undefined))).toBe(0);
    expect(resumePoint(ctx('42'))).toBe(42);
    expect(resumePoint(ctx(String(Number.MAX_SAFE_INTEGER)))).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses garbage and ids past 2^53 with 400 invalid_query (a huge id reached Redis as a malformed stream id)', () => {
    for (const raw of ['abc', '-1', '1.5']) expect(() => resumePoint(ctx(raw))).toThrow(/must be a non-negative integer/);
    expect(() => resumePoint(ctx('18446744073709551616'))).toThrow(expect.objectContaining({ status: 400, code: 'invalid_query', message: expect.stringMatching(/at most 9007199254740991/) }));
  });
});
