import type { Queue } from 'bullmq';
import type { CommandLifecycle } from './command-lifecycle.ts';
import { lostResult } from './lifecycle/results.ts';
import { JOB_OPTIONS, type CommandJobData } from './queues.ts';

// The last safety net of "nothing is lost": a session whose ledger still has
// non-final records while its queue holds no job at all (the API process died
// between writing `queued` and enqueueing, or a worker died after its job was
// gone). Such records can no longer run in order, so they are closed, never
// re-run: `queued` → failed (`lost_before_queue`), `running` → interrupted,
// `awaiting_approval` → its job is put back (nothing ran yet; the wait resumes).

export async function recoverOrphans(
  lifecycle: CommandLifecycle, queue: Queue<CommandJobData>, sid: string, lostAfterMs: number,
): Promise<number> {
  const counts = await queue.getJobCounts('active', 'wait', 'waiting', 'paused', 'delayed', 'prioritized');
  if (Object.values(counts).some((n) => n > 0)) return 0;
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
