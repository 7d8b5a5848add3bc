/** A Map kept to its `max` most recently used entries. */
export class Lru<V> {
  readonly #max: number;
  readonly #map = new Map<string, V>();

  constructor(max: number) {
    this.#max = max;
  }

  get(key: string): V | undefined {
    const v = this.#map.get(key);
    if (v === undefined) return undefined;
    this.#map.delete(key);
    this.#map.set(key, v);
    return v;
  }

  set(key: string, v: V): void {
    this.#map.delete(key);
    this.#map.set(key, v);
    if (this.#map.size > this.#max) this.#map.delete(this.#map.keys().next().value!);
  }

  get size(): number {
    return this.#map.size;
  }
}
