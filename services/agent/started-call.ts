// A model call sent ahead of its turn's own setup. Opening a turn costs a few
// Redis round trips (the turn's number, `turn_started`, the ledger's burnt
// ids, the finish watches); the request needs none of them, so it travels,
// and the model starts thinking, while they run. Nothing the model says is
// read before the turn is open: the first event waits in its promise, and the
// parsers, the dispatcher and every command start only when the turn reads
// it. A turn that never opens (its setup failed) drops the call at once.
import type { AgentMessage, ModelEvent, StreamFn, ToolSpec } from './messages.ts';

export class StartedCall {
  /** Ends the request: the turn's own stops (a failure, need_result, a cancel), the job's abort, a drop. */
  readonly stop = new AbortController();
  readonly #it: AsyncIterator<ModelEvent>;
  #first: Promise<IteratorResult<ModelEvent>> | null = null;
  readonly #detach: () => void;

  /** `signal`: the job's (a cancel, its timeout): it ends the request at once, even before the turn reads it. */
  constructor(stream: StreamFn, request: { messages: readonly AgentMessage[]; tools: readonly ToolSpec[] }, signal: AbortSignal) {
    const forward = () => this.stop.abort(signal.reason);
    signal.addEventListener('abort', forward, { once: true });
    this.#detach = () => signal.removeEventListener('abort', forward);
    if (signal.aborted) forward();
    if (this.stop.signal.aborted) {
      this.#it = (async function* nothingSent(): AsyncGenerator<ModelEvent> {})(); // stopped already: no request at all
      return;
    }
    this.#it = stream(request, this.stop.signal)[Symbol.asyncIterator]();
    this.#first = this.#it.next();
    // Its rejection is the turn's to see when it reads it (a failed call); a dropped call's is nobody's.
    this.#first.catch(() => undefined);
  }

  next(): Promise<IteratorResult<ModelEvent>> {
    const first = this.#first;
    if (!first) return this.#it.next();
    this.#first = null;
    return first;
  }

  /** Closes the stream (after the first event was taken, or with it still pending: it ends with the abort). */
  async return(): Promise<void> {
    this.#detach();
    await this.#first?.catch(() => undefined);
    await this.#it.return?.();
  }

  /** The turn is over with the stream (ended by itself, or closed): the job's signal is no longer watched. */
  detach(): void {
    this.#detach();
  }

  /** The turn never opened: the request is aborted and its stream closed. */
  async drop(reason: unknown): Promise<void> {
    this.stop.abort(reason);
    await this.return().catch(() => undefined);
  }
}
