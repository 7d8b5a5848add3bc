import type { CommandLifecycle } from './command-lifecycle.ts';
import { lostResult } from './lifecycle/results.ts';
import { JOB_OPTIONS, type SessionQueues } from './queues.ts';

// The last safety net of "nothing is lost": a session whose queue holds no
// job at all while it still has work.
// - Its run list holds commands (a run job stopped on a Redis error, or the
//   enqueue that had to start it could not): a run job is started again; it
//   goes on in ledger order, each command decided by its record.
// - Its ledger has non-final records outside the run list (data of the layout
//   before run lists): those can no longer run in order, so they are closed,
//   never re-run: `queued` → failed (`lost_before_queue`), `running` →
//   interrupted, `awaiting_approval` → a job of its own is put back (nothing
//   ran yet; the wait resumes).

export async function recoverOrphans(
  lifecycle: CommandLifecycle, queues: SessionQueues, sid: string, lostAfterMs: number,
): Promise<number> {
  const queue = queues.queue(sid);
  const counts = await queue.getJobCounts('active', 'wait', 'waiting', 'paused', 'delayed', 'prioritized');
  if (Object.values(counts).some((n) => n > 0)) return 0;
  const pending = await queues.pendingRuns(sid);
  if (pending > 0) {
    await queues.startRun(sid, 0, `-repair-${Date.now()}`);
    return pending;
  }
  const open = (await lifecycle.ledger.list(sid)).filter((r) => r.status === 'queued' || r.status === 'running' || r.status === 'awaiting_approval');
  let fixed = 0;
  for (const r of open) {
    if (Date.now() - Date.parse(r.enqueued_at) < lostAfterMs) continue; // may still be on its way into the queue
    if (r.status === 'running') {
      await lifecycle.interrupt(r);
      fixed += 1;
    } else if (r.status === 'awaiting_approval') {
      await queue.add('command', { sid, index: r.index, turn: r.turn }, { ...JOB_OPTIONS, jobId: `c${r.index}-r${Date.now()}` });
      fixed += 1;
    } else if ((await lifecycle.apply(r, 'fail', { result: lostResult() })).ok) {
      fixed += 1;
    }
  }
  return fixed;
}
