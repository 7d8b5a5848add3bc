// A model stream that goes silent mid-call is given up after the idle bound;
// the job's own time between events does not count; the caller's abort still wins.
import { describe, expect, it } from 'vitest';
import { ModelStalledError, withIdleTimeout } from '../../../services/agent/model-idle.ts';
import type { ModelEvent, StreamFn } from '../../../services/agent/messages.ts';

const request = { messages: [], tools: [] };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Yields `events` with `gapMs` between them, then waits until aborted; records whether it saw the abort. */
function model(events: ModelEvent[], gapMs: number, stallAfter = true) {
  const seen = { aborted: false as boolean, reason: undefined as unknown };
  const stream: StreamFn = async function* (_req, signal) {
    signal.addEventListener('abort', () => { seen.aborted = true; seen.reason = signal.reason; }, { once: true });
    for (const e of events) {
      await sleep(gapMs);
      yield e;
    }
    if (stallAfter) await new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
  };
  return { stream, seen };
}

async function drain(s: AsyncIterable<ModelEvent>, perEventMs = 0): Promise<ModelEvent[]> {
  const out: ModelEvent[] = [];
  for await (const e of s) {
    out.push(e);
    if (perEventMs) await sleep(perEventMs);
  }
  return out;
}

describe('withIdleTimeout', () => {
  it('gives up a silent stream after the bound with ModelStalledError, and aborts the call', async () => {
    const m = model([{ type: 'text', text: 'a' }], 5);
    const out: ModelEvent[] = [];
    const started = Date.now();
    const err = await (async () => { for await (const e of withIdleTimeout(m.stream, 150)(request, new AbortController().signal)) out.push(e); })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelStalledError);
    expect((err as Error).message).toBe('no data from the model for 0 s (THINKFLOW_MODEL_IDLE_S)');
    expect(out).toEqual([{ type: 'text', text: 'a' }]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(m.seen.aborted).toBe(true);
    expect(m.seen.reason).toBeInstanceOf(ModelStalledError);
  });

  it('a stream with gaps below the bound passes whole, however long the job spends on each event', async () => {
    const events: ModelEvent[] = [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }, { type: 'text', text: 'c' }];
    const m = model(events, 40, false);
    expect(await drain(withIdleTimeout(m.stream, 150)(request, new AbortController().signal), 300)).toEqual(events);
    expect(m.seen.aborted).toBe(false);
  });

  it('the caller\'s abort reaches the call at once', async () => {
    const m = model([], 0);
    const ctrl = new AbortController();
    const pending = drain(withIdleTimeout(m.stream, 10_000)(request, ctrl.signal)).catch((e: unknown) => e);
    await sleep(20);
    ctrl.abort('cancelled');
    expect(await pending).toBeInstanceOf(Error);
    expect(m.seen.reason).toBe('cancelled');
  });
});
