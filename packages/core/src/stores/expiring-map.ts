// The table behind the in-memory stores: entries that lapse, and optional bounds on what it holds.

/** How often, at most, a memory store walks its whole table to drop lapsed entries. */
const SWEEP_INTERVAL_MS = 1000;

/** Bounds of an {@link ExpiringMap}: at most `maxEntries` entries and `maxBytes` of `sizeOf`. */
export interface Bounds<V> {
  readonly maxEntries: number;
  readonly maxBytes: number;
  sizeOf(key: string, value: V): number;
}

/**
 * A map whose entries lapse at `expiresAt`. Reads drop a lapsed entry at once; a full sweep runs
 * on writes at most once per second, so memory stays bounded by the live entries without a timer
 * (a timer would keep the process alive or need a close hook). With `bounds`, a write that takes
 * it past either bound evicts the oldest entries (the first written) until it fits, and counts
 * them: memory stays bounded whatever a client sends.
 */
export class ExpiringMap<V extends { expiresAt: number }> {
  readonly #entries = new Map<string, V>();
  #lastSweep = 0;
  #bytes = 0;
  /** Entries evicted to stay within the bounds (lapsed ones are not counted). */
  evictions = 0;

  constructor(private readonly bounds?: Bounds<V>) {}

  get size(): number {
    return this.#entries.size;
  }

  /** The entries' `sizeOf`, summed (0 without bounds). */
  get bytes(): number {
    return this.#bytes;
  }

  get(key: string, now: number): V | undefined {
    const entry = this.#entries.get(key);
    if (entry && entry.expiresAt <= now) {
      this.delete(key);
      return undefined;
    }
    return entry;
  }

  /** Sets `key`; false when the bounds cannot hold it even alone (it is evicted at once). */
  set(key: string, value: V, now: number): boolean {
    if (this.bounds) this.#forget(key);
    this.#entries.set(key, value);
    if (this.bounds) this.#bytes += this.bounds.sizeOf(key, value);
    if (now - this.#lastSweep >= SWEEP_INTERVAL_MS) {
      this.#lastSweep = now;
      for (const [k, v] of this.#entries) if (v.expiresAt <= now) this.delete(k);
    }
    if (!this.bounds) return true;
    const { maxEntries, maxBytes } = this.bounds;
    // Oldest first: a Map iterates in insertion order, and a rewrite keeps an entry's place.
    for (const k of this.#entries.keys()) {
      if (this.#entries.size <= maxEntries && this.#bytes <= maxBytes) break;
      this.delete(k);
      this.evictions++;
    }
    return this.#entries.has(key);
  }

  delete(key: string): boolean {
    if (this.bounds) this.#forget(key);
    return this.#entries.delete(key);
  }

  #forget(key: string): void {
    const previous = this.#entries.get(key);
    if (previous !== undefined) this.#bytes -= (this.bounds as Bounds<V>).sizeOf(key, previous);
  }
}
