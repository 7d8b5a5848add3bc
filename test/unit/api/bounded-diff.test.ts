import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { boundedLineDiff, capText, summarizeBase, textFacts } from '../../../services/api/card/bounded-diff.mjs';
import { INLINE_BASE_BYTES, ViewPool } from '../../../services/api/card/view-pool.ts';
import { loadConfig } from '../../../services/config/index.ts';

// Issue 18: the approval card's line diff is bounded in size and time; beyond
// the bounds the card says so, with both sides' sizes and sha256.
const limits = { maxBytes: 1000, maxLines: 50, timeoutMs: 1000 };
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const lines = (n: number, p: string) => Array.from({ length: n }, (_, i) => `${p}${i}`).join('\n') + '\n';

describe('boundedLineDiff', () => {
  it('marks kept, removed and added lines, with both sides measured', () => {
    const r = boundedLineDiff('a\nb\nc\n', 'a\nB\nc\nd\n', limits);
    expect(r.diff).toEqual([{ op: ' ', text: 'a' }, { op: '-', text: 'b' }, { op: '+', text: 'B' }, { op: ' ', text: 'c' }, { op: '+', text: 'd' }]);
    expect(r).toMatchObject({ diff_truncated: false, diff_note: null, edit_sides: { old: { bytes: 6, lines: 3, sha256: sha('a\nb\nc\n') }, new: { bytes: 8, lines: 4 } } });
    expect(boundedLineDiff('Status: draft', 'Status: ready\nOwner: me', limits).diff).toEqual([
      { op: '-', text: 'Status: draft' }, { op: '+', text: 'Status: ready' }, { op: '+', text: 'Owner: me' },
    ]);
  });

  it('gives no diff past the byte limit of a side: the note names both sizes and hashes', () => {
    const old = 'é'.repeat(501); // 1,002 UTF-8 bytes, one line
    const r = boundedLineDiff(old, 'x\n', limits);
    expect(r.diff).toBeNull();
    expect(r.diff_truncated).toBe(true);
    expect(r.edit_sides).toEqual({ old: { bytes: 1002, lines: 1, sha256: sha(old) }, new: { bytes: 2, lines: 1, sha256: sha('x\n') } });
    expect(r.diff_note).toBe(`content too large to diff (limit 1000 bytes or 50 lines a side): old 1002 bytes, 1 lines, sha256 ${sha(old)}; new 2 bytes, 1 lines, sha256 ${sha('x\n')}`);
    // Exactly at the limit still diffs.
    expect(boundedLineDiff('é'.repeat(500), 'x', limits).diff_truncated).toBe(false);
  });

  it('gives no diff past the line limit of a side (either side)', () => {
    expect(boundedLineDiff(lines(50, 'a'), lines(50, 'b'), limits).diff).toHaveLength(100);
    const r = boundedLineDiff('a\n', lines(51, 'b'), limits);
    expect(r).toMatchObject({ diff: null, diff_truncated: true, edit_sides: { new: { lines: 51 } } });
    expect(r.diff_note).toMatch(/^content too large to diff/);
  });

  it('gives up after its time budget (jsdiff timeout) and says so', () => {
    const big = { maxBytes: 1 << 22, maxLines: 1 << 20, timeoutMs: 1 };
    const t0 = performance.now();
    const r = boundedLineDiff(lines(20_000, 'a'), lines(20_000, 'b'), big);
    expect(performance.now() - t0).toBeLessThan(2000); // unbounded, this is minutes
    expect(r).toMatchObject({ diff: null, diff_truncated: true });
    expect(r.diff_note).toMatch(/^too many changes to diff within 1 ms: old \d+ bytes, 20000 lines, sha256 [0-9a-f]{64}/);
  });
});

describe('summarizeBase and capText', () => {
  it('cuts texts at the limit without splitting a surrogate pair', () => {
    expect(capText('abc', 5)).toEqual({ text: 'abc', truncated: false });
    expect(capText('ab😀c', 3)).toEqual({ text: 'ab', truncated: true });
    expect(capText(null, 3)).toEqual({ text: null, truncated: false });
  });

  it('returns the small fields, capped edit texts and the bounded diff', () => {
    const base = JSON.stringify({ id: '7', tool: 'edit', path: 'a.txt', dest: null, cmd: null, content: null, content_size: null, policy_reason: 'asks', old_text: 'x'.repeat(1500), new_text: 'y\n' });
    const s = summarizeBase(base, limits, true);
    expect(s).toMatchObject({ id: '7', tool: 'edit', path: 'a.txt', policy_reason: 'asks', new_text: 'y\n', text_truncated: true });
    expect(s.old_text).toHaveLength(1000);
    expect(s.edit).toMatchObject({ diff: null, diff_truncated: true, edit_sides: { old: { bytes: 1500, sha256: sha('x'.repeat(1500)) } } });
    expect(summarizeBase(base, limits, false).edit).toBeNull();
  });
});

describe('ViewPool', () => {
  it('summarizes a large record in a worker thread with the same result as inline', async () => {
    const pool = new ViewPool(limits);
    try {
      const old = lines(40, 'a');
      const base = { id: '1', tool: 'edit', path: 'f', old_text: old, new_text: `${old}z\n`, pad: 'p'.repeat(INLINE_BASE_BYTES) };
      const s = await pool.summarize(Buffer.from(JSON.stringify(base)), true);
      expect(s.edit?.diff?.filter((l) => l.op !== ' ')).toEqual([{ op: '+', text: 'z' }]);
      expect(s.edit?.edit_sides.old).toEqual(textFacts(old));
    } finally {
      await pool.close();
    }
  });
});

describe('defaults', () => {
  it('diffs up to 64 KiB or 2,000 lines a side, giving up after 1 s', () => {
    expect(loadConfig({}).approvalDiff).toEqual({ maxBytes: 65536, maxLines: 2000, timeoutMs: 1000 });
    expect(loadConfig({ THINKFLOW_DIFF_MAX_BYTES: '10', THINKFLOW_DIFF_MAX_LINES: '3', THINKFLOW_DIFF_TIMEOUT_MS: '5' }).approvalDiff).toEqual({ maxBytes: 10, maxLines: 3, timeoutMs: 5 });
    expect(() => loadConfig({ THINKFLOW_DIFF_MAX_LINES: '0' })).toThrow(/THINKFLOW_DIFF_MAX_LINES/);
  });
});
