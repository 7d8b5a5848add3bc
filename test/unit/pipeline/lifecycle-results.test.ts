import { describe, expect, it } from 'vitest';
import { EMPTY_RESULT } from '../../../services/pipeline/ledger-record.ts';
import { failedRun, isRefusal, outcomeOf, statusOf } from '../../../services/pipeline/lifecycle/outcome.ts';
import { DEFAULT_OUTPUT_CAP_BYTES, type ExecutionResult } from '../../../services/sandbox/index.ts';
import {
  INTERRUPTED, LOST, endedResult, enqueueErrorResult, internalResult, interruptedResult, lostResult,
  parseErrorLabel, queueErrorResult, rejectedResult, skipReason, skippedResult,
} from '../../../services/pipeline/lifecycle/results.ts';

const ended = (error: string, error_code: string) => ({
  error, error_code, bytes_written: null, stdout: null, stderr: null,
  stdout_truncated: false, stderr_truncated: false, exit_code: null, duration_ms: null, output_summary: error,
});

describe('ended results (no output of their own)', () => {
  it('carry the error, its code and the error as summary; every other field empty', () => {
    expect(endedResult('no', 'forbidden')).toEqual(ended('no', 'forbidden'));
    expect(skippedResult('skipped: x')).toEqual(ended('skipped: x', 'skipped'));
    expect(rejectedResult('approval timed out')).toEqual(ended('approval timed out', 'rejected'));
    expect(interruptedResult()).toEqual(ended(INTERRUPTED, 'interrupted'));
    expect(lostResult()).toEqual(ended(LOST, 'lost_before_queue'));
    expect(queueErrorResult('stalled')).toEqual(ended('queue error: stalled', 'queue_error'));
    expect(enqueueErrorResult('down')).toEqual(ended('enqueue failed: down', 'queue_error'));
    expect(internalResult('gone')).toEqual(ended('gone', 'internal'));
  });

  it('never shares or changes the empty result', () => {
    const a = skippedResult('a');
    a.stdout = 'changed';
    expect(skippedResult('a').stdout).toBeNull();
    expect(EMPTY_RESULT.error).toBeNull();
  });

  it('says why a later command of a failed turn was skipped', () => {
    expect(skipReason({ id: '4' })).toBe('skipped: command 4 failed earlier in this turn');
    expect(skipReason({ id: 'parse error (bad_id)' })).toBe('skipped: parse error (bad_id) earlier in this turn');
    const label = parseErrorLabel({ code: 'unclosed_tag', id: '7' });
    expect(label).toBe('parse error (unclosed_tag in tag 7)');
    expect(skipReason({ id: label })).toBe('skipped: parse error (unclosed_tag in tag 7) earlier in this turn');
    expect(parseErrorLabel({ code: 'bad_id', id: undefined })).toBe('parse error (bad_id)');
  });
});

const run = (r: Partial<ExecutionResult>): ExecutionResult => ({ ok: true, tool: 'bash', duration_ms: 12, ...r });

describe('run outcome (executor answer → status and ledger result, once)', () => {
  it('a success keeps the output, with a summary', () => {
    expect(outcomeOf('bash', run({ stdout: 'a\nlast line\n', exit_code: 0 }))).toEqual({
      status: 'succeeded',
      result: {
        error: null, error_code: null, bytes_written: null, stdout: 'a\nlast line\n', stderr: null,
        stdout_truncated: false, stderr_truncated: false, exit_code: 0, duration_ms: 12, output_summary: 'exit 0: last line',
      },
    });
  });

  it('a failure without an error says its exit code', () => {
    const o = outcomeOf('bash', run({ ok: false, exit_code: 3, stderr: 'bad' }));
    expect(o.status).toBe('failed');
    expect(o.result).toMatchObject({ error: 'exit code 3', error_code: null, stderr: 'bad', output_summary: 'exit code 3' });
  });

  it('refusals of the hard invariant or a changed path are forbidden, not failed', () => {
    for (const code of ['path_outside_workspace', 'path_changed', 'forbidden']) {
      expect(isRefusal(code)).toBe(true);
      expect(statusOf({ ok: false, error_code: code })).toBe('forbidden');
    }
    expect(statusOf({ ok: false, error_code: 'timeout' })).toBe('failed');
    expect(statusOf({ ok: true, error_code: undefined })).toBe('succeeded');
    expect(isRefusal(undefined)).toBe(false);
  });

  it('caps stdout and stderr once, keeping the executor\'s own truncation flags', () => {
    const big = 'x'.repeat(DEFAULT_OUTPUT_CAP_BYTES + 5);
    const o = outcomeOf('read', run({ stdout: big, stderr: 'e', stderr_truncated: true }));
    expect(o.result.stdout).toHaveLength(DEFAULT_OUTPUT_CAP_BYTES);
    expect(o.result).toMatchObject({ stdout_truncated: true, stderr: 'e', stderr_truncated: true });
    const small = outcomeOf('read', run({ stdout: 'abcdef' }), 4);
    expect(small.result).toMatchObject({ stdout: 'abcd', stdout_truncated: true });
    // a surrogate pair is never split
    expect(outcomeOf('read', run({ stdout: 'a😀' }), 2).result.stdout).toBe('a');
  });

  it('a run refused before the executor reads like the executor\'s own failure', () => {
    const r = failedRun('write', 'path_outside_workspace', 'path_outside_workspace: "g" leads outside', 0);
    expect(r).toEqual({ ok: false, tool: 'write', duration_ms: 0, error: 'path_outside_workspace: "g" leads outside', error_code: 'path_outside_workspace' });
    expect(outcomeOf('write', r)).toEqual({
      status: 'forbidden',
      result: { ...ended('path_outside_workspace: "g" leads outside', 'path_outside_workspace'), duration_ms: 0 },
    });
  });
});
