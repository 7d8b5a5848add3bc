// The watchdog (API.md additions, `limits.max_failed_turns_in_a_row`): a model
// that keeps failing is stopped with `stuck` before it burns `max_turns`. Pure.
//
// A model turn FAILED when, in that turn:
//   * a command (tag or native) ended failed, forbidden, rejected (an
//     operator's refusal or an approval that expired) or interrupted, or
//   * the tf-* text had a parse error (duplicate_id, unclosed_tag, …), or
//   * a native tool call could not become a command (unknown tool, bad arguments).
// Any other turn — the model ended normally, or asked for a result that came
// back — resets the count. A failed validator round is not a failed turn: the
// model's turn ended normally and `validate.max_rounds` bounds the rounds.
import { FAILURE_STATUSES } from '../pipeline/index.ts';
import { targetOf } from '../protocol/index.ts';
import type { FeedbackRecord } from './feedback.ts';
import type { TurnOutcome } from './turn-outcome.ts';

/** What failed in a turn: `signature` says whether two failures are the same one. */
export interface TurnFailure {
  signature: string;
  description: string;
}

/** A native call's result, as the turn runner reports it. */
export interface NativeOutcome {
  call: { name: string };
  record: FeedbackRecord | null;
  error: string | null;
}

function commandFailure(r: FeedbackRecord): TurnFailure {
  const target = targetOf(r);
  const why = r.exit_code !== null ? ` with exit code ${r.exit_code}` : r.error ? `: ${r.error}` : '';
  return { signature: `${r.tool}\u0000${target}\u0000${r.status}`, description: `${r.tool} ${JSON.stringify(target)} ${r.status}${why}` };
}

/** The turn's first failure, or null when the turn did not fail. */
export function turnFailure(outcome: TurnOutcome, native: readonly NativeOutcome[]): TurnFailure | null {
  if (outcome.kind === 'interrupt') {
    const i = outcome.interruption;
    if (i.kind === 'failure') return commandFailure(i.record);
    if (i.kind === 'parse_error') return { signature: `parse_error\u0000${i.error.code}`, description: `parse error ${i.error.code}: ${i.error.message}` };
    return null;
  }
  for (const n of native) {
    if (n.record && FAILURE_STATUSES.has(n.record.status)) return commandFailure(n.record);
    if (!n.record) return { signature: `native\u0000${n.call.name}\u0000${n.error}`, description: `native call ${n.call.name} refused: ${n.error}` };
  }
  return null;
}

/** Counts failed turns in a row; `observe` returns the job's `stuck` error once the limit is reached. */
export class Watchdog {
  readonly #limit: number;
  #streak: TurnFailure[] = [];

  constructor(limit: number) {
    this.#limit = limit;
  }

  observe(failure: TurnFailure | null): string | null {
    if (!failure) {
      this.#streak = [];
      return null;
    }
    this.#streak.push(failure);
    if (this.#streak.length < this.#limit) return null;
    const n = this.#streak.length;
    const same = this.#streak.every((f) => f.signature === failure.signature);
    const what = same ? `the same failure each time: ${failure.description}` : `last: ${failure.description}`;
    return `stuck: ${n} model turn${n === 1 ? '' : 's'} in a row failed (limits.max_failed_turns_in_a_row ${this.#limit}); ${what}`;
  }
}
