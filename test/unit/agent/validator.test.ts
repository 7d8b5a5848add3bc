// The pure parts of validators and the watchdog: a validator round's command,
// what its record means, the [THINKFLOW VALIDATION FAILED] block, what counts
// as a failed turn and when the watchdog calls a job stuck.
import { describe, expect, it } from 'vitest';
import type { FeedbackRecord } from '../../../services/agent/feedback.ts';
import { judgeValidation, renderValidationFailed, tail, validatorCommand, VALIDATION_TAIL } from '../../../services/agent/validator.ts';
import { decideTurnOutcome } from '../../../services/agent/turn-outcome.ts';
import { turnFailure, Watchdog } from '../../../services/agent/watchdog.ts';

const rec = (over: Partial<FeedbackRecord>): FeedbackRecord => ({
  id: 'validate-1', tool: 'bash', path: null, dest: null, cmd: 'npm test', status: 'failed', bytes_written: null, exit_code: 1, error: 'exit code 1',
  stdout: null, stderr: null, ...over,
});

describe('validator rounds', () => {
  it('a round is a bash command with its own id and the validator timeout', () => {
    expect(validatorCommand({ cmd: 'npm test', max_rounds: 3, timeout_s: 30 }, 2)).toEqual({ id: 'validate-2', tool: 'bash', cmd: 'npm test', need_result: true, timeout: 30 });
    expect(validatorCommand({ cmd: 'make check', max_rounds: 3 }, 1)).toEqual({ id: 'validate-1', tool: 'bash', cmd: 'make check', need_result: true });
  });

  it('exit 0 passes; a failure with rounds left goes back to the model; the last failed round fails the job', () => {
    expect(judgeValidation(rec({ status: 'succeeded', exit_code: 0, error: null }), 1, 3)).toEqual({ kind: 'passed' });
    const retry = judgeValidation(rec({}), 1, 3);
    expect(retry.kind).toBe('retry');
    expect(retry.kind === 'retry' && retry.feedback).toMatch(/^\[THINKFLOW VALIDATION FAILED\]\nRound 1 of 3: the validator `npm test` failed \(exit code 1, exit code 1\)\./);
    expect(judgeValidation(rec({}), 3, 3)).toEqual({
      kind: 'failed', error: 'validation_failed: the validator still failed after 3 rounds (max_rounds 3; last: exit code 1, exit code 1)',
    });
    expect(judgeValidation(rec({ exit_code: null, error: 'timed out after 5 s' }), 1, 1)).toEqual({
      kind: 'failed', error: 'validation_failed: the validator still failed after 1 round (max_rounds 1; last: timed out after 5 s)',
    });
  });

  it('a validator that never ran fails the job at once: the model cannot change the policy or the operator', () => {
    expect(judgeValidation(rec({ status: 'forbidden', exit_code: null, error: 'forbid by rule no-network-tools (global)' }), 1, 3)).toEqual({
      kind: 'failed', error: 'validation_failed: the validator did not run in round 1 (forbidden: forbid by rule no-network-tools (global))',
    });
    const expired = rec({
      status: 'rejected', exit_code: null, error: 'approval timed out',
      approval: { decision: 'expired', requested_at: '2026-01-01T00:00:00.000Z', expires_at: '2026-01-01T00:15:00.000Z' },
    });
    const verdict = judgeValidation(expired, 2, 3);
    expect(verdict.kind === 'failed' && verdict.error).toBe(
      'validation_failed: the validator did not run in round 2 (rejected: not run: no operator answered within 15 min (the approval request expired unanswered; nobody refused it))',
    );
  });

  it('the block shows bounded tails of stdout and stderr, and how many failed rounds are left', () => {
    const stdout = `${'line of noise\n'.repeat(2000)}FAIL test/a.test.ts > adds\n`;
    const block = renderValidationFailed(rec({ stdout, stderr: 'npm ERR! Test failed.', stdout_truncated: true }), 1, 3);
    expect(block.length).toBeLessThan(2 * VALIDATION_TAIL + 1000);
    expect(block).toContain('FAIL test/a.test.ts > adds');
    expect(block).toMatch(/stdout \(last 4096 characters at most; the sandbox kept only the start of a longer output\):\n… \(\d+ earlier characters not shown\)\nline of noise/);
    expect(block).toContain('stderr (last 4096 characters at most):\nnpm ERR! Test failed.');
    expect(block).toContain('2 more failed rounds fail the job.');
    expect(block.endsWith('[/THINKFLOW VALIDATION FAILED]')).toBe(true);
    expect(renderValidationFailed(rec({}), 2, 3)).toContain('1 more failed round fails the job.');
  });

  it('tail keeps short text whole and cuts long text at a line start', () => {
    expect(tail('short')).toBe('short');
    const t = tail(`${'a'.repeat(50)}\n${'b'.repeat(20)}`, 30);
    expect(t).toBe(`… (51 earlier characters not shown)\n${'b'.repeat(20)}`);
  });
});

describe('the watchdog', () => {
  const failed = (cmd: string, exit = 1) => decideTurnOutcome({
    records: [rec({ id: '1', cmd, exit_code: exit })], stop: { kind: 'command_failed', commandId: '1' }, nativeCalls: 0,
  });
  const done = decideTurnOutcome({ records: [], stop: { kind: 'completed' }, nativeCalls: 0 });

  it('a failed command, a parse error or a refused native call fail a turn; a normal end or a result does not', () => {
    expect(turnFailure(failed('npm test'), [])).toMatchObject({ description: 'bash "npm test" failed with exit code 1' });
    const parse = decideTurnOutcome({
      records: [], nativeCalls: 0,
      stop: { kind: 'parse_error', stream: 'text', error: { code: 'unclosed_tag', message: 'tf-write 3 never closed' }, commandsBefore: 0 },
    });
    expect(turnFailure(parse, [])).toMatchObject({ description: 'parse error unclosed_tag: tf-write 3 never closed' });
    const tools = decideTurnOutcome({ records: [], stop: { kind: 'completed' }, nativeCalls: 1 });
    expect(turnFailure(tools, [{ call: { name: 'fly' }, record: null, error: "unknown tool 'fly'" }])).toMatchObject({ description: "native call fly refused: unknown tool 'fly'" });
    expect(turnFailure(tools, [{ call: { name: 'read' }, record: rec({ tool: 'read', path: 'x', cmd: null, exit_code: null, error: 'no such file' }), error: null }]))
      .toMatchObject({ description: 'read "x" failed: no such file' });
    expect(turnFailure(tools, [{ call: { name: 'read' }, record: rec({ status: 'succeeded' }), error: null }])).toBeNull();
    expect(turnFailure(done, [])).toBeNull();
    const result = decideTurnOutcome({ records: [rec({ id: '2', status: 'succeeded' })], stop: { kind: 'need_result', commandId: '2' }, nativeCalls: 0 });
    expect(turnFailure(result, [])).toBeNull();
  });

  it('stops at the limit of failed turns in a row, and says when it was the same failure each time', () => {
    const w = new Watchdog(3);
    expect(w.observe(turnFailure(failed('npm test'), []))).toBeNull();
    expect(w.observe(turnFailure(failed('npm test'), []))).toBeNull();
    expect(w.observe(turnFailure(failed('npm test'), []))).toBe(
      'stuck: 3 model turns in a row failed (limits.max_failed_turns_in_a_row 3); the same failure each time: bash "npm test" failed with exit code 1',
    );
    const mixed = new Watchdog(2);
    mixed.observe(turnFailure(failed('npm test'), []));
    expect(mixed.observe(turnFailure(failed('make'), [])))
      .toBe('stuck: 2 model turns in a row failed (limits.max_failed_turns_in_a_row 2); last: bash "make" failed with exit code 1');
  });

  it('a turn that does not fail resets the count', () => {
    const w = new Watchdog(2);
    expect(w.observe(turnFailure(failed('npm test'), []))).toBeNull();
    expect(w.observe(null)).toBeNull();
    expect(w.observe(turnFailure(failed('npm test'), []))).toBeNull();
    expect(w.observe(turnFailure(failed('npm test'), []))).not.toBeNull();
  });
});
