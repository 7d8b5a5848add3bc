import type { ParseError } from '../../protocol/index.ts';
import { EMPTY_RESULT, type LedgerResult } from '../ledger-record.ts';

// The results of commands that ended without an output of their own
// (refused, skipped, rejected, interrupted, lost): the error, its code of the
// spec, and the error again as the summary. The one place such a result is
// written; a command that ran gets its result from `outcome.ts`.

export type EndedCode =
  | 'forbidden' | 'path_outside_workspace' | 'skipped' | 'rejected' | 'interrupted'
  | 'internal' | 'lost_before_queue' | 'queue_error';

export function endedResult(error: string, code: EndedCode): LedgerResult {
  return { ...EMPTY_RESULT, error, error_code: code, output_summary: error };
}

export const INTERRUPTED = 'the worker executing this command died mid-way; it was not run again';
export const LOST = 'the command never reached the queue (its enqueuing process stopped); it was not run';
export const SESSION_DELETED = 'skipped: the session was deleted';
/** The reason of an approval withdrawn because its session was deleted. */
export const SESSION_DELETED_APPROVAL = 'withdrawn: the session was deleted';

/** The turn-failure label of a parse error; skipReason recognises it by its prefix. */
export function parseErrorLabel(error: Pick<ParseError, 'code' | 'id'>): string {
  return `parse error (${error.code}${error.id ? ` in tag ${error.id}` : ''})`;
}

/** Why a later command of a failed turn was skipped (PROTOCOL.md §5.3). */
export function skipReason(failure: { id: string }): string {
  return failure.id.startsWith('parse error')
    ? `skipped: ${failure.id} earlier in this turn`
    : `skipped: command ${failure.id} failed earlier in this turn`;
}

export const skippedResult = (reason: string): LedgerResult => endedResult(reason, 'skipped');
export const interruptedResult = (): LedgerResult => endedResult(INTERRUPTED, 'interrupted');
export const lostResult = (): LedgerResult => endedResult(LOST, 'lost_before_queue');
export const queueErrorResult = (reason: string): LedgerResult => endedResult(`queue error: ${reason}`, 'queue_error');
export const enqueueErrorResult = (reason: string): LedgerResult => endedResult(`enqueue failed: ${reason}`, 'queue_error');
export const internalResult = (reason: string): LedgerResult => endedResult(reason, 'internal');
/** An operator's rejection, or an approval that expired. */
export const rejectedResult = (reason: string): LedgerResult => endedResult(reason, 'rejected');
