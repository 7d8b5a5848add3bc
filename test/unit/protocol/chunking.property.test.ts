// PROTOCOL.md §4: the result must not depend on how the streams were chunked.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TurnParser, type ParserOutput, type StreamName } from '../../../services/protocol/index.ts';
import { FRAGMENTS } from './fragments.ts';

type Delta = [StreamName, string];

const deltaArb = fc.tuple(
  fc.constantFrom<StreamName>('reasoning', 'text'),
  fc.array(fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ maxLength: 6 })), { minLength: 1, maxLength: 8 }).map((parts) => parts.join('')),
);

function run(deltas: Delta[], split: (delta: string) => Array<string | Uint8Array>, legacyTags: boolean) {
  const parser = new TurnParser({ legacyTags });
  const outputs: ParserOutput[] = [];
  for (const [stream, delta] of deltas) for (const piece of split(delta)) outputs.push(...parser.feed(stream, piece));
  outputs.push(...parser.end());
  return { outputs, visible: parser.visibleText() };
}

/** Cuts `length` units at the given fractional positions. */
function cuts(length: number, fractions: number[]): number[] {
  return [...new Set(fractions.map((f) => Math.floor(f * length)))].filter((c) => c > 0 && c < length).sort((a, b) => a - b);
}

function splitAt<T extends { slice(a: number, b?: number): T; length: number }>(value: T, at: number[]): T[] {
  const out: T[] = [];
  let prev = 0;
  for (const c of at) {
    out.push(value.slice(prev, c));
    prev = c;
  }
  out.push(value.slice(prev));
  return out;
}

describe('chunking does not change the result', () => {
  it('random byte chunkings (splits inside UTF-8 characters included)', () => {
    fc.assert(
      fc.property(fc.array(deltaArb, { minLength: 1, maxLength: 6 }), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 30 }), fc.boolean(), (deltas, fractions, legacy) => {
        const whole = run(deltas, (d) => [d], legacy);
        const chunked = run(deltas, (d) => {
          const bytes = Buffer.from(d, 'utf8');
          return splitAt(bytes, cuts(bytes.length, fractions)).map((b) => new Uint8Array(b));
        }, legacy);
        expect(chunked).toEqual(whole);
      }),
      { numRuns: 3000 },
    );
  });

  it('random string chunkings and 1-unit deltas', () => {
    fc.assert(
      fc.property(fc.array(deltaArb, { minLength: 1, maxLength: 6 }), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 30 }), (deltas, fractions) => {
        const whole = run(deltas, (d) => [d], false);
        expect(run(deltas, (d) => splitAt(d, cuts(d.length, fractions)), false)).toEqual(whole);
        expect(run(deltas, (d) => [...d], false)).toEqual(whole);
      }),
      { numRuns: 2000 },
    );
  });

  it('visible text handed out delta by delta adds up to the whole visible text', () => {
    fc.assert(
      fc.property(fc.array(deltaArb, { minLength: 1, maxLength: 6 }), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 30 }), (deltas, fractions) => {
        const parser = new TurnParser();
        let handed = '';
        for (const [stream, delta] of deltas) {
          for (const piece of splitAt(delta, cuts(delta.length, fractions))) {
            parser.feed(stream, piece);
            handed += parser.takeVisible();
          }
        }
        parser.end();
        handed += parser.takeVisible();
        expect(handed).toBe(parser.visibleText());
      }),
      { numRuns: 1000 },
    );
  });

  it('every byte size from 1 to 16 on a long mixed document', () => {
    const doc = FRAGMENTS.join('\n');
    const whole = run([['text', doc]], (d) => [d], true);
    expect(whole.outputs.length).toBeGreaterThan(5);
    for (let size = 1; size <= 16; size++) {
      const bytes = Buffer.from(doc, 'utf8');
      const pieces: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.subarray(at, at + size));
      expect(run([['text', doc]], () => pieces, true), `size ${size}`).toEqual(whole);
    }
  });
});
