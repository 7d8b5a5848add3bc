import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  LedgerRecord, buildBase, capText, decidingRule, recordFromHash, riskOf, summarize,
} from '../../../services/pipeline/ledger-record.ts';
import { targetOf } from '../../../services/protocol/index.ts';

const allow = { decision: 'allow' as const, matched_rules: [], reason: '' };

describe('ledger record', () => {
  it('keeps small contents whole and of large ones the first bytes, with full size, digest and truncated', () => {
    const now = new Date('2026-01-02T03:04:05.000Z');
    const small = buildBase({ session: 's', turn: 1, command: { id: '1', tool: 'write', path: 'a', content: 'hé', need_result: false }, flow: 'text', evaluation: allow, now, bodyBytes: 3 });
    expect(small).toMatchObject({ content: 'hé', content_size: 3, content_sha256: createHash('sha256').update('hé').digest('hex'), enqueued_at: '2026-01-02T03:04:05.000Z' });
    const big = buildBase({ session: 's', turn: 1, command: { id: '1', tool: 'write', path: 'a', content: 'abcd', need_result: false }, flow: 'text', evaluation: allow, now, bodyBytes: 3 });
    expect(big).toMatchObject({ content: 'abc', content_size: 4, content_sha256: createHash('sha256').update('abcd').digest('hex'), content_truncated: true });
    expect(small.content_truncated).toBe(false);
    const bash = buildBase({ session: 's', turn: 2, command: { id: '7', tool: 'bash', cmd: 'ls', need_result: false }, flow: 'native', evaluation: allow, now, bodyBytes: 3 });
    expect(bash).toMatchObject({ content: null, content_size: null, content_sha256: null, cmd: 'ls', risk: 'high', path: null });
  });

  it('read is always need_result; risk follows the tool kind', () => {
    const b = buildBase({ session: 's', turn: 1, command: { id: '1', tool: 'read', path: 'a', need_result: false }, flow: 'api', evaluation: allow, now: new Date(), bodyBytes: 10 });
    expect(b.need_result).toBe(true);
    expect([riskOf('read'), riskOf('write'), riskOf('copy'), riskOf('bash')]).toEqual(['low', 'medium', 'medium', 'high']);
  });

  it('names the strictest matched rule as the deciding one, or none when a default decided', () => {
    const rules = [
      { id: 'a', layer: 'global' as const, decision: 'allow' as const, justification: 'ok' },
      { id: 'p', layer: 'project' as const, decision: 'prompt' as const, justification: 'ask' },
      { id: 'p2', layer: 'session' as const, decision: 'prompt' as const, justification: 'ask too' },
    ];
    expect(decidingRule({ decision: 'prompt', matched_rules: rules, reason: '' })).toBe('p');
    expect(decidingRule({ decision: 'prompt', matched_rules: [rules[0]!], reason: 'default' })).toBeNull();
    const base = buildBase({ session: 's', turn: 1, command: { id: '1', tool: 'bash', cmd: 'x', need_result: false }, flow: 'api', evaluation: { decision: 'prompt', matched_rules: rules, reason: 'r' }, now: new Date(), bodyBytes: 1 });
    expect(base).toMatchObject({ matched_rule: 'p', justification: 'ask', policy_reason: 'r' });
  });

  it('renders a stored hash into a validated record, and refuses a corrupt one', () => {
    const base = buildBase({ session: 's', turn: 1, command: { id: '1', tool: 'touch', path: 'a', need_result: false }, flow: 'api', evaluation: allow, now: new Date(), bodyBytes: 10 });
    const rec = recordFromHash(4, { base: JSON.stringify(base), status: 'running', injected: '1', started_at: '2026-01-01T00:00:00.000Z' });
    expect(LedgerRecord.parse(rec)).toEqual(rec);
    expect(rec).toMatchObject({ index: 4, status: 'running', injected: true, approval: null, finished_at: null, error: null, stdout_truncated: false });
    expect(() => recordFromHash(1, { status: 'queued' })).toThrow(/incomplete/);
    expect(() => recordFromHash(1, { base: JSON.stringify(base), status: 'exploded' })).toThrow();
    // A field the stored base lacks is missing, never a default (reviewer helper-52, F5): `decision` absent is no `allow`.
    const { decision: _, ...lacking } = base;
    expect(() => recordFromHash(1, { base: JSON.stringify(lacking), status: 'queued' })).toThrow(/decision/);
    expect(recordFromHash(1, { base: JSON.stringify(lacking), status: 'queued' }, false).decision).toBeUndefined();
    expect(JSON.stringify(recordFromHash(1, { base: JSON.stringify(lacking), status: 'queued' }, false))).not.toContain('"decision"');
  });

  it('derives timings from the record\'s own timestamps, in the path\'s order; records from before timings read as admitted when enqueued', () => {
    const at = (ms: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms));
    const cmd = { id: '1', tool: 'touch' as const, path: 'a', need_result: false };
    const base = buildBase({ session: 's', turn: 1, command: cmd, flow: 'text', evaluation: allow, now: at(30), bodyBytes: 10, parsedAt: at(10), admittedAt: at(20) });
    const rec = recordFromHash(1, { base: JSON.stringify(base), status: 'succeeded', started_at: at(40).toISOString(), finished_at: at(55).toISOString() });
    expect(Object.entries(rec.timings)).toEqual([
      ['parsed_at', '2026-01-01T00:00:00.010Z'], ['admitted_at', '2026-01-01T00:00:00.020Z'], ['queued_at', '2026-01-01T00:00:00.030Z'],
      ['started_at', '2026-01-01T00:00:00.040Z'], ['finished_at', '2026-01-01T00:00:00.055Z'],
    ]);
    // The unvalidated reader (the worker's hot path) builds the same.
    expect(recordFromHash(1, { base: JSON.stringify(base), status: 'succeeded', started_at: at(40).toISOString(), finished_at: at(55).toISOString() }, false).timings).toEqual(rec.timings);
    const { timings: _dropped, ...old } = buildBase({ session: 's', turn: 1, command: cmd, flow: 'api', evaluation: allow, now: at(30), bodyBytes: 10 });
    expect(recordFromHash(2, { base: JSON.stringify(old), status: 'queued' }).timings).toEqual({ admitted_at: '2026-01-01T00:00:00.030Z', queued_at: '2026-01-01T00:00:00.030Z' });
    // No parse time given (a caller that parses nothing): none invented.
    expect(buildBase({ session: 's', turn: 1, command: cmd, flow: 'api', evaluation: allow, now: at(30), bodyBytes: 10 }).timings).toEqual({ admitted_at: '2026-01-01T00:00:00.030Z' });
  });

  it('caps captured text without splitting a surrogate pair', () => {
    expect(capText(undefined, 3)).toEqual({ text: null, truncated: false });
    expect(capText('abc', 3)).toEqual({ text: 'abc', truncated: false });
    expect(capText('ab😀', 3)).toEqual({ text: 'ab', truncated: true });
  });

  it('summarizes outcomes and names targets like the approval API', () => {
    expect(summarize('write', { status: 'succeeded', bytes_written: 12 })).toBe('wrote 12 bytes');
    expect(summarize('bash', { status: 'succeeded', exit_code: 0, stdout: 'a\nlast line\n' })).toBe('exit 0: last line');
    expect(summarize('bash', { status: 'failed', error: 'exit code 2\nmore' })).toBe('exit code 2 more');
    expect(targetOf({ tool: 'copy', path: 'a', dest: 'b' })).toBe('a -> b');
    expect(targetOf({ tool: 'bash', cmd: 'ls -l' })).toBe('ls -l');
    expect(targetOf({ tool: 'edit', path: 'x.ts' })).toBe('x.ts');
  });
});
