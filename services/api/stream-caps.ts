import { AppError } from './errors.ts';

/** What a cap counts, for its 429: the setting and the words of the message. */
export type SlotCap = { setting: string; what: string; hint: string };

/**
 * Slots per API key, counted in this process (each held slot costs this
 * process memory and a socket, so the cap protects the process that holds
 * them). 429 `too_many` naming the setting when a key's slots are all taken.
 */
export class KeySlots {
  readonly #open = new Map<string, number>();
  readonly max: number;
  readonly #cap: SlotCap;

  constructor(max: number, cap: SlotCap) {
    this.max = max;
    this.#cap = cap;
  }

  /** Takes a slot for the key; the returned function gives it back (once). 429 `too_many` when full. */
  acquire(keyId: string): () => void {
    const n = this.#open.get(keyId) ?? 0;
    if (n >= this.max) {
      const { setting, what, hint } = this.#cap;
      throw new AppError(429, 'too_many', `this API key has ${n} ${what}, its cap (${setting}=${this.max}); ${hint}`, {
        details: { cap: setting, limit: this.max },
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

/** THINKFLOW_MAX_STREAMS_PER_KEY: open SSE streams per API key. */
export class StreamCaps extends KeySlots {
  constructor(max: number) {
    super(max, { setting: 'THINKFLOW_MAX_STREAMS_PER_KEY', what: 'open event streams', hint: 'close one first' });
  }
}

/**
 * THINKFLOW_MAX_TURNS_PER_KEY: `POST /commands` turns of one key at once. Taken
 * before the body is read, so a key's parallel large bodies cannot fill memory.
 */
export class TurnCaps extends KeySlots {
  constructor(max: number) {
    super(max, { setting: 'THINKFLOW_MAX_TURNS_PER_KEY', what: 'turns running at once', hint: 'wait for one to finish' });
  }
}
