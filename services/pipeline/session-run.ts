import { randomUUID } from 'node:crypto';
import { withIds } from '../log/index.ts';
import { ApprovalWaitAborted } from './approvals.ts';
import type { CommandLifecycle } from './command-lifecycle.ts';
import { queueErrorResult } from './lifecycle/results.ts';
import type { Processor } from './processor.ts';
import type { CommandJobData, RunStep, SessionQueues } from './queues.ts';
import { LINGER_GRACE_MS, type RunLinger } from './run-linger.ts';

// What a Worker does with one job of a session's queue: a run job works
// through the session's run list, one command after the other, until it is
// empty (and its linger is over, run-linger.ts) or the queue is paused (queues.ts). Each command is decided by the
// ledger as before (processor.ts), which keeps a re-delivered run job safe: the
// head of the list is the command the dead holder was on (`running` →
// `interrupted`, `queued` → runs, `awaiting_approval` → waits again).

export type Current = { index: number };

/** The process is shutting down: the run stops between two commands and goes back to the queue for another worker. */
export class RunHandedBack extends Error {
  constructor() { super('shutting down: the run goes back to the queue'); }
}

export type SessionRunDeps = {
  processor: Processor;
  queues: SessionQueues;
  /** which command the run is on (undefined between commands): shutdown interrupts it past the grace */
  onCommand: (current: Current | undefined) => void;
  /** lingering on an empty run list (run-linger.ts); absent = the run ends when the list is empty */
  linger?: RunLinger;
};

/**
 * Runs one job. On shutdown it throws, with the next command at the head of
 * the list, ApprovalWaitAborted (during an approval wait) or RunHandedBack
 * (between two commands): the caller hands the job back to the queue, and
 * another worker goes on.
 */
export async function runSessionJob(d: SessionRunDeps, data: CommandJobData, signal: AbortSignal): Promise<void> {
  const { sid } = data;
  if (data.index !== undefined) {
    // A one-command job of the layout before run lists (left in a queue by an upgrade).
    d.onCommand({ index: data.index });
    await d.processor.process(sid, data.index, { signal });
    return;
  }
  const { linger } = d;
  const ms = linger?.ms ?? 0;
  // The run's id: its steps end it once a re-delivered job's run took the list over (runNext-5.lua).
  const run = { id: randomUUID(), lingerMs: ms > 0 ? ms + LINGER_GRACE_MS : 0 };
  const counted = linger?.begin(sid, run.id);
  let afterLinger = false; // the step after a linger is under way: a failure there is not its commands'
  try {
    let mark = linger?.mark(sid) ?? 0;
    let step = await d.queues.next(sid, { ...run, start: true }, null);
    let until = 0; // when this linger ends: THINKFLOW_RUN_LINGER_MS after the list emptied
    for (;;) {
      if (step.kind === 'linger' && linger) {
        until ||= Date.now() + ms;
        await linger.wait(sid, mark, until - Date.now(), signal);
        mark = linger.mark(sid);
        const left = signal.aborted ? 0 : until - Date.now();
        const handed = linger.take(sid);
        afterLinger = true;
        step = handed ? { kind: 'command', index: handed.index, load: handed.load } : await d.queues.next(sid, { id: run.id, lingerMs: left > 0 ? left + LINGER_GRACE_MS : 0 }, null);
        afterLinger = false;
      } else if (step.kind === 'command') {
        until = 0;
        mark = linger?.mark(sid) ?? 0;
        step = await runOne(d, sid, run, step, signal);
      } else {
        return;
      }
      // A graceful shutdown lets the running command finish, not the session's whole list.
      if (signal.aborted && step.kind === 'command') throw new RunHandedBack();
    }
  } catch (err) {
    if (!(err instanceof RunHandedBack || err instanceof ApprovalWaitAborted)) await afterFailedRun(d.queues, sid, afterLinger);
    throw err;
  } finally {
    if (counted) linger?.end(sid, counted);
  }
}

/**
 * The run failed (its job fails next): it may have left itself lingering, so an enqueue would only wake a run that
 * is gone: the linger is cleared. When it failed on the step after a linger, the commands that came meanwhile are
 * not why: a run job is started for them now (it takes over once this one's job has failed); a run that failed
 * on a command leaves it to the reconcile's repair (recovery.ts), at its pace, not in a loop. Best effort: Redis
 * may be why the run failed.
 */
async function afterFailedRun(queues: SessionQueues, sid: string, afterLinger: boolean): Promise<void> {
  try {
    await queues.lingerNoMore(sid);
    if (afterLinger && (await queues.pendingRuns(sid)) > 0) await queues.startRun(sid, 0, `-after-linger-${Date.now()}`);
  } catch (err) {
    withIds({ session_id: sid }).warn({ err }, 'a failed run could not hand its list on; the reconcile will');
  }
}

/** Runs the command `step` names; returns the run's next step. */
async function runOne(
  d: SessionRunDeps, sid: string, run: { id: string; lingerMs: number }, step: Extract<RunStep, { kind: 'command' }>, signal: AbortSignal,
): Promise<RunStep> {
  const { index, load } = step;
  d.onCommand({ index });
  // After a success the next step goes out with the finish, in one Redis write: runNext runs after the finish
  // (one connection, in order), drops this command's entry and reads the next one's record as it is then. After
  // any other end the turn's rest is being skipped meanwhile, so the step is read once that is done.
  let early: Promise<RunStep> | null = null;
  const onFinishSent = (status: string) => {
    if (status !== 'succeeded') return;
    early = d.queues.next(sid, run, index);
    early.catch(() => {}); // awaited below; a rejection there is the run's, as a late read's would be
  };
  try {
    await d.processor.process(sid, index, { signal, load: load(), onFinishSent, run: run.id });
  } catch (err) {
    early = null;
    if (err instanceof ApprovalWaitAborted) throw err;
    await closeFailedCommand(d.processor.lifecycle, sid, index, err as Error, run.id);
  }
  d.onCommand(undefined);
  return early ?? d.queues.next(sid, run, index);
}

/**
 * A command whose processing threw: never leave its record open (the run goes on with the next). `run`: the run that
 * ran it; nothing is closed once a re-delivered run took the list over at it (that run's command now).
 */
export async function closeFailedCommand(lifecycle: CommandLifecycle, sid: string, index: number, err: Error, run?: string): Promise<void> {
  const read = await lifecycle.ledger.get(sid, index).then((rec) => ({ rec }), (e: unknown) => ({ rec: null, e }));
  const ids = withIds({ session_id: sid, command_id: read.rec?.id });
  ids.error({ err, index, status: read.rec?.status ?? null }, 'a command failed in its run');
  try {
    if ('e' in read) throw read.e;
    const { rec } = read;
    if (rec?.status === 'running') await lifecycle.interrupt(rec, run);
    else if (rec?.status === 'queued' || rec?.status === 'awaiting_approval') {
      await lifecycle.apply(rec, 'fail', { result: queueErrorResult(err.message), run });
    }
  } catch (e) {
    ids.error({ err: e, index }, 'could not close the record of a failed command');
    throw e; // the run stops here; the reconcile starts another (recovery.ts)
  }
}
