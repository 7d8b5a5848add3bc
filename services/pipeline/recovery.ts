import type { Queue } from 'bullmq';
import { emptyResult, type Ledger } from './ledger.ts';
import type { LedgerRecord } from './ledger-record.ts';
import type { CommandJobData } from './queues.ts';
import { interrupt, type ProcessorDeps } from './processor.ts';
import { skipRestOfTurn } from './turns.ts';

// The last safety net of "nothing is lost": a session whose ledger still has
// non-final records while its queue holds no job at all (the API process died
// between writing `queued` and enqueueing, or a worker died after its job was
// gone). Such records can no longer run in order, so they are closed, never
// re-run: `queued` → failed (`lost_before_queue`), `running` → interrupted,
// `awaiting_approval` → its job is put back (nothing ran yet; the wait resumes).

const LOST = 'the command never reached the queue (its enqueuing process stopped); it was not run';

export async function recoverOrphans(
  d: ProcessorDeps, ledger: Ledger, queue: Queue<CommandJobData>, sid: string, lostAfterMs: number,
): Promise<number> {
  const counts = await queue.getJobCounts('active', 'wait', 'waiting', 'paused', 'delayed', 'prioritized');
  if (Object.values(counts).some((n) => n > 0)) return 0;
  const open = (await ledger.list(sid)).filter((r) => r.status === 'queued' || r.status === 'running' || r.status === 'awaiting_approval');
  let fixed = 0;
  for (const r of open) {
    if (Date.now() - Date.parse(r.enqueued_at) < lostAfterMs) continue; // may still be on its way into the queue
    if (r.status === 'running') { await interrupt(d, r); fixed += 1; continue; }
    if (r.status === 'awaiting_approval') {
      await queue.add('command', { sid, index: r.index, turn: r.turn }, { attempts: 1, removeOnComplete: true, removeOnFail: true, jobId: `c${r.index}-r${Date.now()}` });
      fixed += 1;
      continue;
    }
    if (await closeLost(ledger, r)) fixed += 1;
  }
  return fixed;
}

async function closeLost(ledger: Ledger, r: LedgerRecord): Promise<boolean> {
  const out = await ledger.transition(r, {
    from: ['queued'], to: 'failed', events: ['command_finished'], dropCommand: true,
    fields: { result: { ...emptyResult(), error: LOST, error_code: 'lost_before_queue', output_summary: LOST }, finished_at: new Date().toISOString() },
  });
  if (out.ok) await skipRestOfTurn(ledger, r.session, r.turn);
  return out.ok;
}
