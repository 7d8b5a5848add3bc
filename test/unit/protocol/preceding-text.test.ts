import { describe, expect, it } from 'vitest';
import { precedingText, tailUtf8, TurnParser, type ParserOutput } from '../../../services/protocol/index.ts';

// What the model said before each command (an approval's context.preceding_text).

function feedAll(chunks: [('reasoning' | 'text'), string][], chunk = Infinity): TurnParser {
  const p = new TurnParser({ keepPreceding: true });
  for (const [stream, text] of chunks) {
    for (let i = 0; i < text.length; i += chunk === Infinity ? text.length : chunk) p.feed(stream, text.slice(i, i + (chunk === Infinity ? text.length : chunk)));
  }
  p.end();
  return p;
}

describe('tailUtf8', () => {
  it('keeps the last bytes, never starting inside a character', () => {
    expect(tailUtf8('hello', 10)).toBe('hello');
    expect(tailUtf8('héllo', 4)).toBe('llo');
    expect(tailUtf8('héllo', 5)).toBe('éllo'); // é is 2 bytes: 'éllo' is 5, 'héllo' 6
    expect(tailUtf8('ab😀', 4)).toBe('😀');
    expect(tailUtf8('ab😀', 3)).toBe('');
    const long = 'é'.repeat(3000);
    expect(Buffer.byteLength(tailUtf8(long, 2048))).toBe(2048);
    expect(Buffer.byteLength(tailUtf8(`x${'€'.repeat(1000)}`, 2048))).toBe(2046);
  });
});

describe('TurnParser keepPreceding', () => {
  it('is the visible text before the tag, not the tag nor what follows it in the same delta', () => {
    const p = feedAll([['text', 'I write it.\n<tf-write id="1" path="a.sh">\nrm -rf /data\n</tf-write>\nNow I run it.\n<tf-bash id="2" cmd="bash a.sh" />\nDone, it said ok.']]);
    expect(p.precedingText('1')).toBe('I write it.');
    expect(p.precedingText('2')).toBe('I write it.\n\nNow I run it.');
    expect(p.precedingText('2')).not.toContain('rm -rf');
  });

  it('is the same whatever the chunking (1-byte deltas included)', () => {
    const doc: [('reasoning' | 'text'), string][] = [
      ['reasoning', 'Plan: check first.\n<tf-read id="1" path="x" />\nThen deploy.\n'],
      ['text', 'Deploying now: <tf-bash id="2" cmd="bash deploy.sh" /> and that is all.'],
    ];
    const whole = feedAll(doc);
    for (const chunk of [1, 3, 7]) {
      const p = feedAll(doc, chunk);
      expect([p.precedingText('1'), p.precedingText('2')]).toEqual([whole.precedingText('1'), whole.precedingText('2')]);
    }
    expect(whole.precedingText('1')).toBe('Plan: check first.');
    expect(whole.precedingText('2')).toBe('Plan: check first.\n\nThen deploy.\n\nDeploying now:');
  });

  it('keeps the last 2 KiB only', () => {
    const p = feedAll([['text', `${'old words '.repeat(500)}the latest words <tf-bash id="1" cmd="ls" />`]]);
    const got = p.precedingText('1')!;
    expect(Buffer.byteLength(got)).toBeLessThanOrEqual(2048);
    expect(got.endsWith('the latest words')).toBe(true);
  });

  it('is not kept unless asked, and leaves the outputs as they were', () => {
    const text = 'Say <tf-bash id="1" cmd="ls" />';
    const plain = new TurnParser();
    const kept = new TurnParser({ keepPreceding: true });
    const a: readonly ParserOutput[] = plain.feed('text', text);
    const b: readonly ParserOutput[] = kept.feed('text', text);
    expect(b).toEqual(a);
    expect(plain.precedingText('1')).toBeUndefined();
    expect(kept.precedingText('1')).toBe('Say');
  });

  it('joins reasoning and text, each cut first', () => {
    expect(precedingText('  thinking  ', '')).toBe('thinking');
    expect(precedingText('', ' said ')).toBe('said');
    expect(precedingText('a', 'b')).toBe('a\n\nb');
  });
});
