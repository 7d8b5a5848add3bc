import type { Ledger } from './ledger.ts';
import { emptyResult } from './ledger.ts';
import type { LedgerRecord } from './ledger-record.ts';

// Turn semantics of PROTOCOL.md §5.3: after the earliest failure of a turn,
// every later command of that turn still queued becomes `skipped`, with no
// side effect. The compare-and-set in `transition` makes a skip and a start
// mutually exclusive, so eager skipping here can race the worker safely.

export function skipReason(failure: { id: string }): string {
  return failure.id.startsWith('parse error')
    ? `skipped: ${failure.id} earlier in this turn`
    : `skipped: command ${failure.id} failed earlier in this turn`;
}

export function skippedResult(reason: string) {
  return { ...emptyResult(), error: reason, error_code: 'skipped', output_summary: reason };
}

/** Marks `skipped` every queued command of the turn after its failure; returns how many. */
export async function skipRestOfTurn(ledger: Ledger, sid: string, turn: number, jobId: string | null = null): Promise<number> {
  const failure = await ledger.turnFailure(sid, turn);
  if (!failure) return 0;
  const later = (await ledger.turnIndexes(sid, turn)).filter((i) => i > failure.index);
  const statuses = await ledger.statuses(sid, later);
  const queued = later.filter((_, j) => statuses[j] === 'queued');
  let skipped = 0;
  for (const rec of await ledger.many(sid, queued)) {
    if (await skipOne(ledger, rec, skipReason(failure), jobId)) skipped += 1;
  }
  return skipped;
}

export async function skipOne(ledger: Ledger, rec: LedgerRecord, reason: string, jobId: string | null = null): Promise<boolean> {
  const out = await ledger.transition(rec, {
    from: ['queued'], to: 'skipped', events: ['command_finished'], dropCommand: true,
    fields: { result: skippedResult(reason), finished_at: new Date().toISOString() },
  }, jobId);
  return out.ok;
}
