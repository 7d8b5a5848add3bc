import type { Keys } from './keys.ts';
import type { SessionQueues } from './queues.ts';
import type { PipelineRedis } from './redis.ts';
import type { Sessions } from './sessions.ts';

// What operators see of the queues (`/admin/queues`): the sessions that have,
// or recently had, work, with their counts and open ledger commands, busiest
// first. Read here so no caller builds the pipeline's keys itself. A BullMQ job
// is a run over the session's commands (queues.ts), so `waiting` counts the
// commands in the run list behind the one a run is on, and `active` is 1 while
// a run is active; `delayed`, `prioritized` and `paused` are BullMQ's counts.

export type QueueRow = {
  session_id: string; job_id: string | null; approval: string | null; open_commands: number;
  waiting: number; active: number; delayed: number; prioritized: number;
  /** BullMQ counts it whenever `waiting` is asked for; /admin/queues has always shown it */
  paused: number;
};

export async function queueOverview(
  d: { redis: PipelineRedis; keys: Keys; queues: SessionQueues; sessions: Sessions }, limit: number,
): Promise<QueueRow[]> {
  const sids = await d.redis.zrevrange(d.keys.busy(), 0, limit - 1);
  const rows = await Promise.all(sids.map(async (sid): Promise<QueueRow> => {
    const [counts, open, meta, runs] = await Promise.all([
      d.queues.queue(sid).getJobCounts('waiting', 'active', 'delayed', 'prioritized'),
      d.redis.get(d.keys.open(sid)),
      d.sessions.get(sid),
      d.queues.pendingRuns(sid),
    ]);
    const active = counts.active ?? 0;
    return {
      session_id: sid, job_id: meta?.job_id ?? null, approval: meta?.approval ?? null, open_commands: Number(open ?? 0),
      waiting: Math.max(0, runs - active), active, delayed: counts.delayed ?? 0, prioritized: counts.prioritized ?? 0,
      paused: counts.paused ?? 0,
    };
  }));
  return rows.sort((a, b) => b.open_commands - a.open_commands);
}
