// A model stream that goes silent mid-call would hold its job until the job's
// own timeout: the provider's connection is open, no byte comes. This wrapper
// gives such a call up after `idleMs` without an event from the model; the
// time the job spends on an event (running the parser, enqueueing) does not
// count. The turn then treats it as a stream broken off (turn-runner.ts).
import type { ModelEvent, StreamFn } from './messages.ts';

export class ModelStalledError extends Error {
  constructor(readonly idleMs: number) {
    super(`no data from the model for ${Math.round(idleMs / 1000)} s (THINKFLOW_MODEL_IDLE_S)`);
    this.name = 'ModelStalledError';
  }
}

/** `stream` with an idle bound between two events; the caller's abort still ends it at once. */
export function withIdleTimeout(stream: StreamFn, idleMs: number): StreamFn {
  return async function* idleBounded(request, signal): AsyncGenerator<ModelEvent> {
    const inner = new AbortController();
    const forward = () => inner.abort(signal.reason);
    signal.addEventListener('abort', forward, { once: true });
    if (signal.aborted) forward();
    const it = stream(request, inner.signal)[Symbol.asyncIterator]();
    let stalled = false;
    try {
      for (;;) {
        const next = it.next();
        let timer: NodeJS.Timeout | undefined;
        const idle = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new ModelStalledError(idleMs)), idleMs);
        });
        let got: IteratorResult<ModelEvent>;
        try {
          got = await Promise.race([next, idle]);
        } catch (err) {
          if (err instanceof ModelStalledError) {
            stalled = true;
            // The call is abandoned: its pending read ends with the abort, and nobody waits for it.
            next.catch(() => undefined);
            inner.abort(err);
          }
          throw err;
        } finally {
          clearTimeout(timer);
        }
        if (got.done) return;
        yield got.value;
      }
    } finally {
      signal.removeEventListener('abort', forward);
      if (!stalled) await it.return?.();
    }
  };
}
