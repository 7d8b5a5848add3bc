import type { Command, CommandFlow } from '../protocol/index.ts';
import { reasonOf, withIds } from '../log/index.ts';
import type { CommandLifecycle } from './command-lifecycle.ts';
import type { RunHandover } from './execution-load.ts';
import { PipelineError } from './errors.ts';
import type { Keys } from './keys.ts';
import type { LedgerRecord } from './ledger-record.ts';
import { admitReadingGrants } from './lifecycle/admit.ts';
import { enqueueErrorResult } from './lifecycle/results.ts';
import type { CommandHandle } from './pipeline-ports.ts';
import type { PolicyGate } from './policy-gate.ts';
import type { SessionQueues } from './queues.ts';
import type { PipelineRedis } from './redis.ts';
import { jobGuard, type SessionMeta, type Sessions } from './sessions.ts';

// One command into the ledger and the session's run list (Pipeline.enqueue
// calls it one at a time per session). Nothing is read first: the command is
// decided under the session as this process last read it, and createRecord
// checks, in the same write, that the session is not deleted and that the job
// running on it is still that one; when another job runs now, the command is
// decided again under it. Before, every command read the session first: one
// more Redis round trip (and socket write) per command.

export type EnqueueDeps = {
  redis: PipelineRedis; keys: Keys; sessions: Sessions; lifecycle: CommandLifecycle; gate: PolicyGate; queues: SessionQueues;
  /** wakes the session's lingering run when it is in this process (API and worker in one), handing it `step` when that
   * run is the one createRecord named; false: it is not here */
  wakeHere: (sid: string, step?: RunHandover) => boolean;
};
export type EnqueueInput = {
  sid: string; turn: number; command: Command; flow: CommandFlow;
  /** when its tag was parsed (the record's timings) */ parsedAt?: Date | undefined;
  /** what the model said before it (approval-context.ts) */ precedingText?: string | undefined;
};

type View = { session: SessionMeta; job: string | null };

/** A session that changes this often while one command is recorded (its job, its deletion) is refused rather than chased. */
const MAX_DECISIONS = 3;

export async function recordCommand(d: EnqueueDeps, input: EnqueueInput): Promise<CommandHandle> {
  const { sid, turn, command, flow, parsedAt, precedingText } = input;
  let view = d.sessions.assumed(sid) ?? (await freshView(d, sid));
  for (let attempt = 1; ; attempt++) {
    const { session } = view;
    const admission = await admitReadingGrants(d.gate, session, command, () => d.lifecycle.ledger.grants(sid));
    const out = await d.lifecycle.create({
      session: sid, turn, command, flow, admission, jobId: session.job_id, parsedAt, admittedAt: new Date(), precedingText, jobGuard: jobGuard(view.job),
    });
    if (out.kind === 'duplicate') throw new PipelineError('duplicate_id', `command id ${command.id} already used in turn ${turn}`);
    if (out.kind === 'gone' || out.kind === 'stale_job') {
      if (attempt >= MAX_DECISIONS) throw new PipelineError('session_busy', `session ${sid}: it kept changing while command ${command.id} was recorded`);
      // Gone: read again, which names it (deleted, not found), or finds it back (a delete that was undone meanwhile).
      if (out.kind === 'gone') d.sessions.forget(sid);
      view = (out.kind === 'stale_job' ? d.sessions.sawJob(sid, out.job) : null) ?? (await freshView(d, sid));
      continue;
    }
    const rec = out.record;
    if (rec.status === 'queued' && out.run === 'start') await startRun(d, rec, session.job_id);
    else if (rec.status === 'queued' && out.run === 'wake') wakeRun(d, rec, out.handover);
    return { sessionId: sid, turn, id: command.id, index: rec.index, status: rec.status };
  }
}

/**
 * A run job lingers on the empty list (run-linger.ts): woken, it takes this record without a job of its own. In this
 * process, directly, and with the record as its next step when createRecord named that run (no runNext then); else by a wake message, not awaited, and a failure only logged: the record is queued and the run
 * finds it when its linger ends.
 */
function wakeRun(d: EnqueueDeps, rec: LedgerRecord, step?: RunHandover): void {
  if (d.wakeHere(rec.session, step)) return;
  d.redis.publish(d.keys.wakeChannel(), rec.session).catch((err: unknown) =>
    withIds({ session_id: rec.session, command_id: rec.id }).warn({ err }, 'waking the lingering run failed; it takes the command when its linger ends'));
}

/** The session read now: refuses a deleted or missing one (with its code). */
async function freshView(d: EnqueueDeps, sid: string): Promise<View> {
  const live = await d.sessions.getLive(sid);
  if (!live) throw new PipelineError('session_not_found', `session ${sid} not found`);
  if (live.deleted) throw new PipelineError('session_deleted', `session ${sid} was deleted`);
  return { session: live.session, job: live.job };
}

/**
 * The record is in the session's run list already (createRecord); a run job
 * that is active or waiting reaches it, so only a list that was empty needs a
 * new one (queues.ts); one lingering there is only woken (recordCommand).
 */
async function startRun(d: EnqueueDeps, rec: LedgerRecord, jobId: string | null): Promise<void> {
  try {
    await d.queues.startRun(rec.session, rec.index);
  } catch (err) {
    // Never leave a `queued` record without a run job: it would hold its turn open forever.
    withIds({ job_id: jobId, session_id: rec.session, command_id: rec.id }).error({ err }, 'enqueue failed');
    await d.lifecycle.apply(rec, 'fail', { result: enqueueErrorResult(reasonOf(err)), jobId });
    throw err;
  }
  // Wake worker processes when the session goes from idle to busy (the pool's reconcile covers any gap within seconds).
  await d.redis.publish(d.keys.wakeChannel(), rec.session);
}
