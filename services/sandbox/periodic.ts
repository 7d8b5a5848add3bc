// The manager's background passes (the reaper, the idle-pause sweep) run on
// one interval each, never one per session, and never stacked: a slow
// engine makes a pass take longer than its period, and a second one started
// meanwhile would judge the same sessions twice. Unref'd, so a manager never
// keeps a process alive.

/** Runs `pass` every `ms` unless the previous one is still running; a failed pass goes to `onError` and the next period tries again. */
export function periodic(ms: number, pass: () => Promise<unknown>, onError: (err: unknown) => void): NodeJS.Timeout {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void pass()
      .catch(onError)
      .finally(() => (running = false));
  }, ms);
  timer.unref();
  return timer;
}
