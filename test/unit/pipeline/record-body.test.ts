import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/config/index.ts';
import type { Command } from '../../../services/protocol/index.ts';
import { buildBase, recordFromHash } from '../../../services/pipeline/ledger-record.ts';
import { boundBodies, boundCommand, hasCutBody, shareBudget, storeBody } from '../../../services/pipeline/record-body.ts';

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const bytes = (s: string | null) => Buffer.byteLength(s ?? '', 'utf8');

describe('record bodies (THINKFLOW_RECORD_BODY_BYTES)', () => {
  it('has the defaults: 64 KiB of bodies per record, 7 days of retention', () => {
    expect(loadConfig({})).toMatchObject({ recordBodyBytes: 65536, retentionS: 604800 });
    expect(loadConfig({ THINKFLOW_RECORD_BODY_BYTES: '1024', THINKFLOW_RETENTION_S: '60' })).toMatchObject({ recordBodyBytes: 1024, retentionS: 60 });
    expect(() => loadConfig({ THINKFLOW_RETENTION_S: '0' })).toThrow(/THINKFLOW_RETENTION_S/);
    expect(() => loadConfig({ THINKFLOW_RECORD_BODY_BYTES: '-1' })).toThrow(/THINKFLOW_RECORD_BODY_BYTES/);
  });

  it('cuts at a UTF-8 character boundary, never inside a character', () => {
    // 'é' is 2 bytes, '€' 3, '😀' 4 (a surrogate pair in JS)
    const s = 'aé€😀b';
    for (let max = 0; max <= bytes(s); max++) {
      const b = storeBody(s, max);
      expect(bytes(b.text)).toBeLessThanOrEqual(max);
      expect(s.startsWith(b.text)).toBe(true);
      expect(b.text).not.toContain('\ufffd');
      expect(b).toMatchObject({ size: 11, sha256: sha(s), truncated: max < 11 });
    }
    expect(storeBody(s, 3).text).toBe('aé');
    expect(storeBody(s, 5).text).toBe('aé');
    expect(storeBody(s, 6).text).toBe('aé€');
    expect(storeBody(s, 9).text).toBe('aé€');
    expect(storeBody(s, 10).text).toBe('aé€😀');
  });

  it('keeps size and SHA-256 of the whole body, not of the kept part', () => {
    const big = 'x'.repeat(100_000) + 'ü';
    const b = storeBody(big, 65536);
    expect(b).toEqual({ text: 'x'.repeat(65536), size: 100_002, sha256: sha(big), truncated: true });
    expect(storeBody('', 0)).toEqual({ text: '', size: 0, sha256: sha(''), truncated: false });
  });

  it('shares the budget of a command between its bodies, never more than the budget', () => {
    expect(shareBudget([10, 1000], 100)).toEqual([10, 90]);
    expect(shareBudget([1000, 1000], 100)).toEqual([50, 50]);
    expect(shareBudget([1000, 3], 100)).toEqual([97, 3]);
    expect(shareBudget([], 100)).toEqual([]);
    for (const sizes of [[7, 8, 9], [1, 200, 3], [300, 300, 1]]) expect(shareBudget(sizes, 17).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(17);
  });

  it('an edit keeps at most the budget of old and new text together, each with size, digest and flag', () => {
    const old = 'o'.repeat(50_000);
    const neu = 'ñ'.repeat(50_000); // 100,000 bytes
    const f = boundBodies({ old_text: old, new_text: neu }, 65536);
    expect(bytes(f.old_text) + bytes(f.new_text)).toBeLessThanOrEqual(65536);
    expect(f).toMatchObject({
      content: null, content_size: null, content_truncated: false,
      old_text_size: 50_000, old_text_sha256: sha(old), old_text_truncated: true,
      new_text_size: 100_000, new_text_sha256: sha(neu), new_text_truncated: true,
    });
    expect(hasCutBody(f)).toBe(true);
    expect(hasCutBody(boundBodies({ content: 'small' }, 65536))).toBe(false);
  });

  it('a record built from a 1 MiB write keeps 64 KiB; a command in an event likewise, with its fields', () => {
    const content = 'a'.repeat(1 << 20);
    const allow = { decision: 'allow' as const, matched_rules: [], reason: '' };
    const base = buildBase({ session: 's', turn: 1, command: { id: '1', tool: 'write', path: 'a', content, need_result: false }, flow: 'api', evaluation: allow, now: new Date(), bodyBytes: 65536 });
    expect(base).toMatchObject({ content_size: 1 << 20, content_sha256: sha(content), content_truncated: true });
    expect(bytes(base.content)).toBe(65536);
    const cmd = boundCommand({ id: '1', tool: 'write', path: 'a', content, need_result: false }, 65536);
    expect(cmd).toMatchObject({ content_size: 1 << 20, content_sha256: sha(content), content_truncated: true, path: 'a' });
    expect(bytes(cmd.content!)).toBe(65536);
    const bash: Command = { id: '2', tool: 'bash', cmd: 'ls', need_result: false };
    expect(boundCommand(bash, 10)).toEqual(bash);
  });

  it('a record stored before these fields reads as not truncated', () => {
    const allow = { decision: 'allow' as const, matched_rules: [], reason: '' };
    const base = buildBase({ session: 's', turn: 1, command: { id: '1', tool: 'edit', path: 'a', old_text: 'x', new_text: 'y', need_result: false }, flow: 'api', evaluation: allow, now: new Date(), bodyBytes: 10 });
    const legacy = Object.fromEntries(Object.entries(base).filter(([k]) => !/_truncated$|^(old|new)_text_(size|sha256)$/.test(k)));
    const r = recordFromHash(1, { base: JSON.stringify(legacy), status: 'queued' });
    expect(r).toMatchObject({ old_text: 'x', new_text: 'y', old_text_truncated: false, new_text_truncated: false, old_text_size: null });
  });
});
