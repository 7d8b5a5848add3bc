// Fuzz: random and mutated streams never make the parser throw, and no command
// is emitted before the final `>` of its closing tag (or `/>`) has arrived.
import { describe, expect, it } from 'vitest';
import { TurnParser, type StreamName } from '../../../services/protocol/index.ts';
import { randomDocument, rng } from './fragments.ts';

const CASES = Number(process.env.FUZZ_CASES ?? 100_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261129);

function endsWithClosing(consumed: string, tool: string, legacy: boolean): boolean {
  if (consumed.endsWith('/>')) return true;
  if (consumed.endsWith(`</tf-${tool}>`)) return true;
  return legacy && consumed.endsWith(`</${tool}>`);
}

describe('parser fuzz', () => {
  it(`${CASES} random streams fed one character at a time`, () => {
    const next = rng(SEED);
    let commands = 0;
    let errors = 0;
    for (let n = 0; n < CASES; n++) {
      const legacy = next() < 0.2;
      const parser = new TurnParser({ legacyTags: legacy, maxBodyBytes: 64 });
      const consumed: Record<StreamName, string> = { reasoning: '', text: '' };
      const docs: Array<[StreamName, string]> = [['text', randomDocument(next)]];
      if (next() < 0.3) docs.unshift(['reasoning', randomDocument(next, 4)]);
      try {
        for (const [stream, doc] of docs) {
          for (const ch of doc) {
            consumed[stream] += ch;
            for (const out of parser.feed(stream, ch)) {
              if (out.type === 'command') {
                commands++;
                if (!endsWithClosing(consumed[stream], out.command.tool, legacy)) {
                  throw new Error(`command ${out.command.id} emitted before its closing tag: ${JSON.stringify(consumed[stream])}`);
                }
              } else errors++;
            }
          }
        }
        for (const out of parser.end()) {
          if (out.type === 'command') throw new Error('a command was emitted at end of stream');
          errors++;
        }
      } catch (err) {
        throw new Error(`case ${n} (seed ${SEED}): ${(err as Error).message}\n${JSON.stringify(docs)}`);
      }
    }
    // The generator must reach both outcomes, or the test proves little.
    expect(commands).toBeGreaterThan(CASES / 2);
    expect(errors).toBeGreaterThan(CASES / 4);
  }, 300_000);
});
