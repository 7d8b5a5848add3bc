/**
 * At most `limit` container starts at once per process, the rest wait in
 * arrival order. Two hundred sessions starting together on two cores made
 * every start slower than its timeout (bench:soak: 308 executors that did not
 * answer within 30 s); in turn they start in about the time each takes alone.
 */
export class StartSlots {
  readonly #limit: number;
  #active = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`start concurrency must be a positive integer, got ${limit}`);
    this.#limit = limit;
  }

  /** Starts waiting for a slot (queued), for tests and metrics. */
  get waiting(): number {
    return this.#waiting.length;
  }

  get active(): number {
    return this.#active;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#active >= this.#limit) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#active++;
    try {
      return await fn();
    } finally {
      const next = this.#waiting.shift();
      if (next) next(); // the slot passes on: #active stays
      else this.#active--;
    }
  }
}
