// A run job whose session's run list empties does not end at once: it lingers
// there for THINKFLOW_RUN_LINGER_MS (runNext sets the session's `run_until`), and
// a command recorded meanwhile wakes it (createRecord reports it, the enqueue
// publishes a wake message) instead of starting a BullMQ job of its own. A
// client's turns one after the other then pay BullMQ's add, take and finish
// once, not per turn. A wake that is lost (a dropped subscriber) costs at most
// the linger: the run steps again when it ends, and finds the command. A run
// that died lingering holds nothing past `run_until` (the linger plus a grace):
// the next enqueue starts a run again.
//
// RunWakes counts the wake messages of the sessions whose run is in this
// process, so a wake that lands between the run's step and its wait is not
// missed (`mark` before the step, `wait` after it). An enqueue in the process
// whose run lingers wakes it here, without the message (WorkerPool.wakeHere),
// and hands it the new record as its next step when createRecord named this
// run as the list's holder and the run is still waiting (it has sent no step
// since its linger began, so nothing else names that record to it): the run
// then goes on without a runNext round trip (createRecord-13.lua).

import type { RunHandover } from './execution-load.ts';

/** `run_until` is set this much past the linger: a run a little late to step again is still woken, not doubled. */
export const LINGER_GRACE_MS = 1000;

/** What a run job needs to linger (session-run.ts). */
export type RunLinger = {
  /** how long a run job waits on an empty list; 0 = it ends at once */
  readonly ms: number;
  /** run `id` of the session starts (`end` it when it is over): its wakes are counted from now */
  begin(sid: string, id: string): object;
  end(sid: string, run: object): void;
  /** the session's wakes so far, to pass to `wait` */
  mark(sid: string): number;
  /** resolves at the first wake after `since` (at once if one came already), after `ms`, or on `signal` */
  wait(sid: string, since: number, ms: number, signal: AbortSignal): Promise<void>;
  /** the step an enqueue handed the run while it waited (taken once), else undefined: the run asks runNext */
  take(sid: string): RunHandover | undefined;
};

type Run = { id: string; wakes: number; waiter?: () => void; handed?: RunHandover };

export class RunWakes implements RunLinger {
  readonly ms: number;
  /** the run of each session in this process (a re-delivered run replaces the one before) */
  readonly #runs = new Map<string, Run>();

  constructor(ms: number) {
    this.ms = ms;
  }

  /**
   * A wake for the session: counted only while its run is in this process (the map stays bounded); says whether it
   * is. `step`: handed to the run when it waits now; false when it names another run (the holder is elsewhere).
   */
  wake(sid: string, step?: RunHandover): boolean {
    const run = this.#runs.get(sid);
    // A run here that no longer holds the list (createRecord named another): the holder is elsewhere, wake it there.
    if (!run || (step && step.owner !== run.id)) return false;
    run.wakes += 1;
    if (step && run.waiter) run.handed = step;
    run.waiter?.();
    return true;
  }

  take(sid: string): RunHandover | undefined {
    const run = this.#runs.get(sid);
    const step = run?.handed;
    if (run) delete run.handed;
    return step;
  }

  begin(sid: string, id: string): object {
    const run: Run = { id, wakes: 0 };
    this.#runs.set(sid, run);
    return run;
  }

  end(sid: string, run: object): void {
    (run as Run).waiter?.();
    if (this.#runs.get(sid) === run) this.#runs.delete(sid);
  }

  mark(sid: string): number { return this.#runs.get(sid)?.wakes ?? 0; }

  wait(sid: string, since: number, ms: number, signal: AbortSignal): Promise<void> {
    const run = this.#runs.get(sid);
    if (!run || run.wakes !== since || signal.aborted || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        if (run.waiter === done) delete run.waiter;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      run.waiter = done;
    });
  }
}
