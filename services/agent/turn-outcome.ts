// What a finished turn means for the job (PROTOCOL.md §5): an error to feed
// back, a result to feed back, native tool results to send, or the end. Pure.
import { FAILURE_STATUSES } from '../pipeline/index.ts';
import type { StopReason } from './dispatcher.ts';
import type { FeedbackRecord, Interruption } from './feedback.ts';

export interface TurnFacts {
  /** Every record of the turn, final, in ledger (= stream) order. */
  records: readonly FeedbackRecord[];
  /** Why the stream stopped; `completed` when it ended by itself. */
  stop: StopReason | { kind: 'completed' } | { kind: 'stream_broken'; error: string };
  /** Native tool calls the model made this turn. */
  nativeCalls: number;
}

export type TurnOutcome =
  | { kind: 'interrupt'; interruption: Interruption; failed: boolean }
  | { kind: 'tools' }
  /** A steering interrupt stopped the stream: the model has not finished, its next call carries the message. */
  | { kind: 'steered' }
  | { kind: 'done' };

export function decideTurnOutcome(facts: TurnFacts): TurnOutcome {
  const { records, stop } = facts;
  const parseError = stop.kind === 'parse_error' ? stop : null;
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
  if (stop.kind === 'need_result') {
    const record = records.find((r) => r.id === stop.commandId);
    if (record) return { kind: 'interrupt', failed: false, interruption: { kind: 'result', record } };
  }
  if (stop.kind === 'stream_broken') return { kind: 'interrupt', failed: false, interruption: { kind: 'stream_broken', error: stop.error } };
  if (stop.kind === 'steered') return { kind: 'steered' };
  if (facts.nativeCalls > 0) return { kind: 'tools' };
  return { kind: 'done' };
}
