// A run job whose session's run list empties does not end at once: it lingers
// there for THINKFLOW_RUN_LINGER_MS (runNext pushes RUN_LINGER), and a command
// recorded meanwhile wakes it (createRecord reports it, the enqueue publishes a
// wake message) instead of starting a BullMQ job of its own. A client's turns
// one after the other then pay BullMQ's add, take and finish once, not per
// turn. A wake that is lost (a dropped subscriber) costs at most the linger:
// the run steps again when it ends, and finds the command.
//
// RunWakes counts the wake messages of the sessions whose run is in this
// process, so a wake that lands between the run's step and its wait is not
// missed (`mark` before the step, `wait` after it).

/** What a run job needs to linger (session-run.ts). */
export type RunLinger = {
  /** how long a run job waits on an empty list; 0 = it ends at once */
  readonly ms: number;
  /** a run of the session starts (`end` when it is over): its wakes are counted from now */
  begin(sid: string): void;
  end(sid: string): void;
  /** the session's wakes so far, to pass to `wait` */
  mark(sid: string): number;
  /** resolves at the first wake after `since` (at once if one came already), after `ms`, or on `signal` */
  wait(sid: string, since: number, ms: number, signal: AbortSignal): Promise<void>;
};

export class RunWakes implements RunLinger {
  readonly ms: number;
  readonly #count = new Map<string, number>();
  readonly #waiters = new Map<string, () => void>();

  constructor(ms: number) {
    this.ms = ms;
  }

  /** A wake message for the session: counted only while its run is in this process (the maps stay bounded). */
  wake(sid: string): void {
    const n = this.#count.get(sid);
    if (n === undefined) return;
    this.#count.set(sid, n + 1);
    this.#waiters.get(sid)?.();
  }

  begin(sid: string): void { this.#count.set(sid, 0); }

  end(sid: string): void {
    this.#waiters.get(sid)?.();
    this.#count.delete(sid);
  }

  mark(sid: string): number { return this.#count.get(sid) ?? 0; }

  wait(sid: string, since: number, ms: number, signal: AbortSignal): Promise<void> {
    if (this.mark(sid) !== since || signal.aborted || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        if (this.#waiters.get(sid) === done) this.#waiters.delete(sid);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.#waiters.set(sid, done);
    });
  }
}
