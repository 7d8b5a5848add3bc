import { Worker } from 'node:worker_threads';
import { log, reasonOf } from '../../log/index.ts';
import { summarizeBase, type BaseSummary, type DiffLimits } from './bounded-diff.mjs';

// Summaries of ledger records for approval cards. A small record is parsed
// inline (well under a millisecond); a large one, whose JSON parse, hashes and
// diff could hold the event loop for seconds, goes to a worker thread. Each
// job has a hard deadline: a thread that overruns it is ended and replaced,
// and the caller gets an error (cached like any view, so it is not retried
// per stream).

/** Records up to this many bytes are summarized inline; their diff is bounded by lines too. */
export const INLINE_BASE_BYTES = 32 * 1024;
const INLINE_DIFF_LINES = 200;
const DEADLINE_SLACK_MS = 10_000;

type Job = { resolve: (s: BaseSummary) => void; reject: (e: Error) => void; timer: NodeJS.Timeout };

export class ViewPool {
  readonly #limits: DiffLimits;
  readonly #size: number;
  #workers: { w: Worker; jobs: Map<number, Job> }[] = [];
  #next = 0;
  #seq = 0;

  constructor(limits: DiffLimits, size = 1) {
    this.#limits = limits;
    this.#size = Math.max(1, size);
  }

  get limits(): DiffLimits { return this.#limits; }

  /**
   * The record's summary; `withDiff` adds the bounded diff of an edit;
   * `command` (the full command's JSON) supplies the bodies the record cut.
   */
  summarize(base: Buffer, withDiff: boolean, command: Buffer | null = null): Promise<BaseSummary> {
    if (!command && base.length <= INLINE_BASE_BYTES && (!withDiff || lineCount(base) <= INLINE_DIFF_LINES)) {
      try {
        return Promise.resolve(summarizeBase(base.toString('utf8'), this.#limits, withDiff));
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
    return this.#offload(base, withDiff, command);
  }

  #offload(base: Buffer, withDiff: boolean, command: Buffer | null): Promise<BaseSummary> {
    const slot = this.#slot();
    const id = ++this.#seq;
    // Copies into their own ArrayBuffers, moved (not cloned) to the thread.
    const bytes = new Uint8Array(base);
    const full = command ? new Uint8Array(command) : null;
    return new Promise<BaseSummary>((resolve, reject) => {
      const timer = setTimeout(() => {
        log().error({ job: id, bytes: base.length }, 'approval view worker overran its deadline: replaced');
        this.#retire(slot, new Error(`the view worker did not answer within ${this.#limits.timeoutMs + DEADLINE_SLACK_MS} ms`));
      }, this.#limits.timeoutMs + DEADLINE_SLACK_MS);
      slot.jobs.set(id, { resolve, reject, timer });
      slot.w.postMessage({ id, base: bytes.buffer, command: full?.buffer ?? null, limits: this.#limits, withDiff }, full ? [bytes.buffer, full.buffer] : [bytes.buffer]);
    });
  }

  #slot(): { w: Worker; jobs: Map<number, Job> } {
    if (this.#workers.length < this.#size) {
      const w = new Worker(new URL('./view-worker.mjs', import.meta.url));
      const slot = { w, jobs: new Map<number, Job>() };
      w.unref();
      w.on('message', (m: { id: number; summary?: BaseSummary; error?: string }) => {
        const job = slot.jobs.get(m.id);
        if (!job) return;
        slot.jobs.delete(m.id);
        clearTimeout(job.timer);
        if (m.summary) job.resolve(m.summary);
        else job.reject(new Error(`approval view: ${m.error ?? 'no summary'}`));
      });
      w.on('error', (err) => {
        log().error({ reason: reasonOf(err) }, 'approval view worker failed: replaced');
        this.#retire(slot, err);
      });
      this.#workers.push(slot);
      return slot;
    }
    return this.#workers[this.#next++ % this.#workers.length]!;
  }

  #retire(slot: { w: Worker; jobs: Map<number, Job> }, err: Error): void {
    this.#workers = this.#workers.filter((s) => s !== slot);
    for (const job of slot.jobs.values()) { clearTimeout(job.timer); job.reject(err); }
    slot.jobs.clear();
    void slot.w.terminate().catch((e: unknown) => log().warn({ reason: reasonOf(e) }, 'approval view worker: terminate failed'));
  }

  async close(): Promise<void> {
    const slots = this.#workers;
    this.#workers = [];
    for (const s of slots) this.#retire(s, new Error('view pool closed'));
    await Promise.all(slots.map((s) => s.w.terminate()));
  }
}

function lineCount(b: Buffer): number {
  let n = 0;
  // Escaped in JSON: a line break is the two bytes `\n`.
  for (let i = b.indexOf('\\n'); i !== -1 && n <= INLINE_DIFF_LINES; i = b.indexOf('\\n', i + 2)) n++;
  return n;
}
