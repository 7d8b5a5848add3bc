import { describe, expect, it } from 'vitest';
import { checkEdit, editedCommand } from '../../../services/pipeline/approval-edit.ts';
import { PipelineError } from '../../../services/pipeline/errors.ts';
import { buildBase, editedBase, LedgerRecord } from '../../../services/pipeline/ledger-record.ts';

// approve_edited's checks and the record it writes (pure parts; the route and the worker are tested end to end).
const fieldOf = (f: () => void): string | null => {
  try { f(); return null; } catch (e) {
    expect(e).toBeInstanceOf(PipelineError);
    expect((e as PipelineError).code).toBe('invalid_body');
    return ((e as PipelineError).details as { field: string }).field;
  }
};

describe('checkEdit', () => {
  it('bash takes cmd, write and append take content, nothing else is editable', () => {
    expect(fieldOf(() => checkEdit('bash', { cmd: 'ls' }))).toBeNull();
    expect(fieldOf(() => checkEdit('write', { content: '' }))).toBeNull();
    expect(fieldOf(() => checkEdit('append', { content: 'x' }))).toBeNull();
    expect(fieldOf(() => checkEdit('bash', { content: 'x' }))).toBe('content');
    expect(fieldOf(() => checkEdit('write', { cmd: 'ls' }))).toBe('cmd');
    expect(fieldOf(() => checkEdit('bash', {}))).toBe('cmd');
    expect(fieldOf(() => checkEdit('write', {}))).toBe('content');
    expect(fieldOf(() => checkEdit('write', { cmd: 'a', content: 'b' }))).toBe('cmd');
    expect(fieldOf(() => checkEdit('touch', { content: 'x' }))).toBe('content');
    expect(fieldOf(() => checkEdit('network', { cmd: 'x' }))).toBe('cmd');
  });

  it('holds an edit to the limits of a command from the model', () => {
    expect(fieldOf(() => checkEdit('bash', { cmd: ' \n ' }))).toBe('cmd');
    expect(fieldOf(() => checkEdit('bash', { cmd: 'a\0b' }))).toBe('cmd');
    expect(fieldOf(() => checkEdit('bash', { cmd: 'x'.repeat(64 * 1024) }))).toBeNull();
    expect(fieldOf(() => checkEdit('bash', { cmd: 'x'.repeat(64 * 1024 + 1) }))).toBe('cmd');
    expect(fieldOf(() => checkEdit('write', { content: 'é'.repeat(6) }, 12))).toBeNull();
    expect(fieldOf(() => checkEdit('write', { content: 'é'.repeat(7) }, 12))).toBe('content');
  });
});

describe('the edited record', () => {
  const ev = { decision: 'prompt' as const, matched_rules: [{ id: 'p', layer: 'global' as const, decision: 'prompt' as const, justification: 'ask' }], reason: 'prompt by p' };
  const write = { id: '3', tool: 'write' as const, path: 'a.md', content: 'asked', need_result: false };

  it('keeps the asked command in edited_from and the edit in its own fields, bounded like any body', () => {
    const base = buildBase({ session: 's', turn: 1, command: write, flow: 'text', evaluation: ev, now: new Date(), bodyBytes: 4 });
    const edited = editedCommand(write, { content: 'operator' });
    const allow = { decision: 'allow' as const, matched_rules: [], reason: '' };
    const next = editedBase(base, edited, allow, 4);
    expect(next).toMatchObject({
      content: 'oper', content_size: 8, content_truncated: true, decision: 'allow', matched_rule: null, matched_rules: [], policy_reason: null,
      edited_from: { tool: 'write', path: 'a.md', cmd: null, content: 'aske', content_size: 5, content_truncated: true },
    });
    // The record schema reads it back, and an unedited record has no edited_from.
    const rec = { ...next, index: 1, status: 'queued', approval: null, injected: false, started_at: null, finished_at: null, executed_by: null,
      error: null, error_code: null, bytes_written: null, stdout: null, stderr: null, stdout_truncated: false, stderr_truncated: false, exit_code: null, duration_ms: null, output_summary: null,
      timings: { admitted_at: next.enqueued_at, queued_at: next.enqueued_at } };
    expect(LedgerRecord.parse(rec).edited_from?.content_size).toBe(5);
    expect(LedgerRecord.parse({ ...rec, edited_from: undefined }).edited_from).toBeUndefined();
  });

  it('an empty edited content is stated outright (allow_empty)', () => {
    expect(editedCommand(write, { content: '' })).toMatchObject({ content: '', allow_empty: true });
    expect(editedCommand({ id: '1', tool: 'bash', cmd: 'a', need_result: true }, { cmd: 'b' })).toEqual({ id: '1', tool: 'bash', cmd: 'b', need_result: true });
  });
});
