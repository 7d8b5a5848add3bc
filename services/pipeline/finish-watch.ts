import type { EventHub } from './event-reader.ts';
import type { Ledger } from './ledger.ts';
import { FINAL_STATUSES, type LedgerRecord } from './ledger-record.ts';

// Waiting for commands to be final: event-driven (`command_finished` on the
// session's channel), with a slow poll of their statuses as a safety net. A
// watch opened *before* the commands are enqueued sees every one of their
// finishes, so its waiter reads no status first (one Redis read per command
// less on the command path); one opened later reads them once. The records the
// finishes carried are the answer when the watch saw every one: the ledger is
// read back only for those it did not.

const FALLBACK_POLL_MS = 2000;
/** Records a watch keeps from its events until they are taken: a job's watch may see thousands, with bodies. */
const KEEP_RECORDS = 256;
const FINISHED: ReadonlySet<string> = new Set(['command_finished']);

export class FinishWatch {
  /** indexes whose `command_finished` this watch saw */
  readonly finished = new Set<number>();
  /** the records those events carried (the latest KEEP_RECORDS not yet taken) */
  readonly #records = new Map<number, LedgerRecord>();
  #wake: (() => void) | null = null;
  #unsubscribe: () => void = () => {};

  static async open(hub: EventHub, sid: string): Promise<FinishWatch> {
    const watch = new FinishWatch();
    watch.#unsubscribe = await hub.subscribe(sid, (e) => {
      if (e.type !== 'command_finished') return;
      watch.finished.add(e.index);
      // A channel message's envelope alone is checked (event-reader.ts): a record kept as an answer is checked here.
      if (e.record && typeof e.record === 'object' && e.record.index === e.index && e.session_id === sid) watch.#records.set(e.index, e.record);
      if (watch.#records.size > KEEP_RECORDS) watch.#records.delete(watch.#records.keys().next().value!);
      watch.#wake?.();
    }, FINISHED);
    return watch;
  }

  /** Resolves on the next finish, after `ms`, or on abort. */
  next(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => { clearTimeout(t); this.#wake = null; signal?.removeEventListener('abort', done); resolve(); };
      const t = setTimeout(done, ms);
      this.#wake = done;
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** The records of `indexes` as their finishes carried them, taken out of the watch; null unless it has them all. */
  take(indexes: number[]): LedgerRecord[] | null {
    if (!indexes.every((i) => this.#records.has(i))) return null;
    return indexes.map((i) => { const r = this.#records.get(i)!; this.#records.delete(i); return r; });
  }

  close(): void { this.#unsubscribe(); }
}

/**
 * Every given record final, in the given order. `watch`: one opened before
 * these commands were enqueued (else one is opened here, and the statuses are
 * read once before waiting).
 */
export async function awaitFinal(
  d: { ledger: Ledger; hub: EventHub }, sid: string, indexes: number[], signal?: AbortSignal, watch?: FinishWatch,
): Promise<LedgerRecord[]> {
  const w = watch ?? (await FinishWatch.open(d.hub, sid));
  try {
    let read = !watch;
    for (;;) {
      const pending = indexes.filter((i) => !w.finished.has(i));
      if (pending.length === 0) break;
      if (read) {
        const statuses = await d.ledger.statuses(sid, pending);
        // Absent (null) counts as final: nothing will ever finish it.
        pending.forEach((i, j) => { const s = statuses[j]; if (!s || FINAL_STATUSES.has(s)) w.finished.add(i); });
        if (pending.every((i) => w.finished.has(i))) break;
      }
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      const before = w.finished.size;
      await w.next(FALLBACK_POLL_MS, signal);
      read = w.finished.size === before; // woken by a finish: nothing to read; by the poll timer or an abort: read
    }
  } finally {
    if (!watch) w.close();
  }
  // Written by the pipeline moments ago: no schema check on the hot path.
  return w.take(indexes) ?? d.ledger.many(sid, indexes, false);
}
