import { AppError } from './errors.ts';

/**
 * THINKFLOW_MAX_STREAMS_PER_KEY: open SSE streams per API key, counted in
 * this process (each held stream costs this process memory and a socket,
 * so the cap protects the process that holds them).
 */
export class StreamCaps {
  readonly #open = new Map<string, number>();
  readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  /** Takes a stream slot for the key; the returned function gives it back (once). 429 `too_many` when full. */
  acquire(keyId: string): () => void {
    const n = this.#open.get(keyId) ?? 0;
    if (n >= this.max) {
      throw new AppError(429, 'too_many', `this API key has ${n} open event streams, its cap (THINKFLOW_MAX_STREAMS_PER_KEY=${this.max}); close one first`, {
        details: { cap: 'THINKFLOW_MAX_STREAMS_PER_KEY', limit: this.max },
      });
    }
    this.#open.set(keyId, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#open.get(keyId) ?? 1) - 1;
      if (left <= 0) this.#open.delete(keyId);
      else this.#open.set(keyId, left);
    };
  }

  openFor(keyId: string): number {
    return this.#open.get(keyId) ?? 0;
  }
}
