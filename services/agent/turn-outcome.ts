// What a finished turn means for the job (PROTOCOL.md §5): an error to feed
// back, a result to feed back, native tool results to send, or the end. Pure.
import type { ParseError } from '../protocol/command.ts';
import type { FeedbackRecord, Interruption } from './feedback.ts';

export const FAILURE_STATUSES: ReadonlySet<string> = new Set(['failed', 'forbidden', 'rejected', 'interrupted']);

export interface TurnFacts<R extends FeedbackRecord> {
  /** Every record of the turn, final, in ledger (= stream) order. */
  records: readonly R[];
  /** The first parse error, and how many commands of the turn were enqueued before it. */
  parseError: { stream: string; error: ParseError; commandsBefore: number } | null;
  /** Id of the command whose result the model asked for (need_result or read). */
  needResultId: string | null;
  /** Native tool calls the model made this turn. */
  nativeCalls: number;
}

export type TurnOutcome<R extends FeedbackRecord> =
  | { kind: 'interrupt'; interruption: Interruption; failed: boolean }
  | { kind: 'tools' }
  | { kind: 'done' };

export function decideTurnOutcome<R extends FeedbackRecord>(facts: TurnFacts<R>): TurnOutcome<R> {
  const { records, parseError } = facts;
  const failureAt = records.findIndex((r) => FAILURE_STATUSES.has(r.status));
  const skippedAfter = (from: number) => records.slice(from).filter((r) => r.status === 'skipped').map((r) => r.id);
  // The earliest problem in stream order is the one the model hears about.
  if (failureAt >= 0 && (parseError === null || failureAt < parseError.commandsBefore)) {
    return { kind: 'interrupt', failed: true, interruption: { kind: 'failure', record: records[failureAt]!, skipped: skippedAfter(failureAt + 1) } };
  }
  if (parseError) {
    return {
      kind: 'interrupt',
      failed: true,
      interruption: { kind: 'parse_error', stream: parseError.stream, error: parseError.error, skipped: skippedAfter(parseError.commandsBefore) },
    };
  }
  if (facts.needResultId !== null) {
    const record = records.find((r) => r.id === facts.needResultId);
    if (record) return { kind: 'interrupt', failed: false, interruption: { kind: 'result', record } };
  }
  if (facts.nativeCalls > 0) return { kind: 'tools' };
  return { kind: 'done' };
}
