import { sandboxLog } from './log.ts';

// One lock per session (keyed by its container name, so by name prefix and
// slug) for the whole process, whichever manager asks. Opening a sandbox
// (attach, volume, container) and every teardown (stop, remove, the
// reaper's stop and removal, a broken container's replacement) run under
// it: a connect that starts during a teardown waits for it, instead of
// finding the loop device the teardown is about to free, a number another
// session's image can take before dockerd mounts it.
const locks = new Map<string, Promise<unknown>>();

/** Runs `fn` once every earlier holder of `key` is done; not re-entrant (never call it for the same key from inside `fn`). */
export function withSessionLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = locks.get(key) ?? Promise.resolve();
  const run = prev.then(fn);
  const tail = run.catch((err: unknown) => sandboxLog().debug({ err, key }, 'session operation failed (reported to its caller)'));
  locks.set(key, tail);
  void tail.then(() => {
    if (locks.get(key) === tail) locks.delete(key);
  });
  return run;
}
