// Coalesces reasoning_delta/text_delta events: a model streaming 1-byte deltas
// would otherwise cost one Redis round trip per byte. Buffered text is flushed
// before any other event of the turn, so the event order stays the stream order.
import type { JobEmit, RunnerEvent } from '../pipeline/index.ts';

const FLUSH_BYTES = 2048;
const FLUSH_MS = 50;

type DeltaKind = 'reasoning_delta' | 'text_delta';

export class DeltaEvents {
  #kind: DeltaKind | null = null;
  #text = '';
  #since = 0;

  constructor(private readonly emit: JobEmit, private readonly turn: number) {}

  async delta(kind: DeltaKind, text: string): Promise<void> {
    if (text === '') return;
    if (this.#kind !== kind) await this.flush();
    if (this.#text === '') this.#since = Date.now();
    this.#kind = kind;
    this.#text += text;
    if (this.#text.length >= FLUSH_BYTES || Date.now() - this.#since >= FLUSH_MS) await this.flush();
  }

  /** Any other event of the turn: flush the pending text first. */
  async event(event: RunnerEvent): Promise<void> {
    await this.flush();
    await this.emit(event);
  }

  async flush(): Promise<void> {
    if (!this.#kind || this.#text === '') return;
    const [type, text] = [this.#kind, this.#text];
    this.#text = '';
    await this.emit({ type, turn: this.turn, text });
  }
}
