// A job's validator (API.md additions, `validate`): the command a round runs,
// what its record means for the job, and the [THINKFLOW VALIDATION FAILED]
// block the model reads when it failed. Pure; validation-round.ts runs it.
import type { Command } from '../protocol/index.ts';
import { unansweredApproval, type FeedbackRecord } from './feedback.ts';
import type { JobValidate } from './job-state.ts';

/** Bytes of each output stream shown to the model: the tail, where test runners print their verdict. */
export const VALIDATION_TAIL = 4096;

/** Round `round`'s command: ledger id `validate-<round>`, so it never collides with a tag's numeric id. */
export function validatorCommand(spec: JobValidate, round: number): Command {
  return { id: `validate-${round}`, tool: 'bash', cmd: spec.cmd, need_result: true, ...(spec.timeout_s !== undefined ? { timeout: spec.timeout_s } : {}) };
}

export type ValidationVerdict =
  /** Exit code 0: the job succeeds. */
  | { kind: 'passed' }
  /** It ran and failed, rounds are left: the model hears why and goes on. */
  | { kind: 'retry'; feedback: string }
  /** The last round failed, or the validator could not run at all: the job fails with `validation_failed`. */
  | { kind: 'failed'; error: string };

/**
 * A validator that ran and failed (non-zero exit, timeout, workspace full…)
 * is the model's to fix. One that never ran (forbidden, rejected, unanswered,
 * interrupted, skipped) is not: the model cannot change the policy or the
 * operator, so the job fails at once rather than burning the rounds left.
 */
export function judgeValidation(record: FeedbackRecord, round: number, maxRounds: number): ValidationVerdict {
  if (record.status === 'succeeded') return { kind: 'passed' };
  if (record.status !== 'failed') {
    return { kind: 'failed', error: `validation_failed: the validator did not run in round ${round} (${record.status}: ${unansweredApproval(record) ?? record.error ?? 'no reason given'})` };
  }
  if (round >= maxRounds) {
    return { kind: 'failed', error: `validation_failed: the validator still failed after ${round} round${round === 1 ? '' : 's'} (max_rounds ${maxRounds}; last: ${failureLine(record)})` };
  }
  return { kind: 'retry', feedback: renderValidationFailed(record, round, maxRounds) };
}

function failureLine(r: FeedbackRecord): string {
  if (r.exit_code !== null) return `exit code ${r.exit_code}${r.error ? `, ${r.error}` : ''}`;
  return r.error ?? 'no error message';
}

/** The last `max` characters, cut on a line start when one is near, with what was left out said first. */
export function tail(text: string, max = VALIDATION_TAIL): string {
  if (text.length <= max) return text;
  let cut = text.length - max;
  const nl = text.indexOf('\n', cut);
  if (nl >= 0 && nl - cut < 200) cut = nl + 1;
  return `… (${cut} earlier characters not shown)\n${text.slice(cut)}`;
}

function stream(label: string, text: string | null, truncatedBySandbox?: boolean): string[] {
  if (!text) return [];
  return [`${label} (last ${VALIDATION_TAIL} characters at most${truncatedBySandbox ? '; the sandbox kept only the start of a longer output' : ''}):`, tail(text)];
}

export function renderValidationFailed(r: FeedbackRecord, round: number, maxRounds: number): string {
  const left = maxRounds - round;
  return [
    '[THINKFLOW VALIDATION FAILED]',
    `Round ${round} of ${maxRounds}: the validator \`${r.cmd ?? ''}\` failed (${failureLine(r)}).`,
    ...stream('stdout', r.stdout, r.stdout_truncated),
    ...stream('stderr', r.stderr, r.stderr_truncated),
    `Your work is not done: fix the cause and end your turn again; the validator then runs again. ${left} more failed round${left === 1 ? '' : 's'} fail${left === 1 ? 's' : ''} the job.`,
    '[/THINKFLOW VALIDATION FAILED]',
  ].join('\n');
}
