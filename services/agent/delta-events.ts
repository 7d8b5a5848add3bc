// Coalesces reasoning_delta/text_delta events: a model streaming 1-byte deltas
// would otherwise cost one Redis round trip per byte. Buffered text is flushed
// before any other event of the turn, so the event order stays the stream order.
import type { JobEvents, RunnerEventFields, RunnerEventType } from '../jobs/job-events.ts';

const FLUSH_BYTES = 2048;
const FLUSH_MS = 50;

export class DeltaEvents {
  #kind: 'reasoning_delta' | 'text_delta' | null = null;
  #text = '';
  #since = 0;

  constructor(private readonly events: JobEvents, private readonly sid: string, private readonly jobId: string, private readonly turn: number) {}

  async delta(kind: 'reasoning_delta' | 'text_delta', text: string): Promise<void> {
    if (text === '') return;
    if (this.#kind !== kind) await this.flush();
    if (this.#text === '') this.#since = Date.now();
    this.#kind = kind;
    this.#text += text;
    if (this.#text.length >= FLUSH_BYTES || Date.now() - this.#since >= FLUSH_MS) await this.flush();
  }

  /** Any other event of the turn: flush the pending text first. */
  async event<T extends RunnerEventType>(type: T, data: RunnerEventFields<T>): Promise<void> {
    await this.flush();
    await this.events.append(this.sid, this.jobId, type, data);
  }

  async flush(): Promise<void> {
    if (!this.#kind || this.#text === '') return;
    const [kind, text] = [this.#kind, this.#text];
    this.#text = '';
    await this.events.append(this.sid, this.jobId, kind, { turn: this.turn, text });
  }
}
