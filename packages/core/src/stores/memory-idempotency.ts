// The in-memory idempotency store: first-writer-wins keys within one process, bounded in entries
// and bytes so that keyed requests cannot exhaust the process's memory.
import { randomUUID } from 'node:crypto';
import { KitError } from '../shared/errors.js';
import { storeArguments } from './arguments.js';
import { ExpiringMap } from './expiring-map.js';
import type {
  IdempotencyCompleteOptions,
  IdempotencyReservation,
  IdempotencyReserveOptions,
  IIdempotencyStore,
  JsonValue,
} from './types.js';

function parse<T extends JsonValue>(text: string): T {
  return JSON.parse(text) as T;
}

interface IdempotencyEntry {
  state: 'pending' | 'completed';
  token: string;
  fingerprint: string | undefined;
  response: string | undefined;
  expiresAt: number;
}

/**
 * Bounds of a {@link MemoryIdempotencyStore}: past either, the oldest keys are evicted.
 *
 * @example
 * ```ts
 * const store = new MemoryIdempotencyStore({ maxEntries: 50_000, maxBytes: 64 * 1024 * 1024 } satisfies MemoryIdempotencyStoreOptions);
 * ```
 */
export interface MemoryIdempotencyStoreOptions {
  /** At most this many keys, reserved or completed (default 10,000). */
  readonly maxEntries?: number;
  /**
   * At most about this many bytes: each key counts its length, its fingerprint's and its stored
   * answer's (as JSON text), plus 200 for its bookkeeping (default 33,554,432: 32 MiB).
   */
  readonly maxBytes?: number;
}

/**
 * What a {@link MemoryIdempotencyStore} holds now, and how many keys it evicted to stay within its
 * bounds since it was made (a growing count means keys are dropped before their TTL: raise the
 * bounds, or use `@kit/store-redis`).
 *
 * @example
 * ```ts
 * const { entries, bytes, evictions }: MemoryIdempotencyStoreStats = store.stats();
 * ```
 */
export interface MemoryIdempotencyStoreStats {
  readonly entries: number;
  readonly bytes: number;
  readonly evictions: number;
}

/**
 * The default bounds of a {@link MemoryIdempotencyStore}.
 *
 * @example
 * ```ts
 * const store = new MemoryIdempotencyStore({ maxEntries: MEMORY_IDEMPOTENCY_DEFAULTS.maxEntries * 2 });
 * ```
 */
export const MEMORY_IDEMPOTENCY_DEFAULTS = {
  maxEntries: 10_000,
  maxBytes: 32 * 1024 * 1024,
} as const;

const ENTRY_OVERHEAD_BYTES = 200;

function bound(option: string, value: unknown, fallback: number): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) {
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      `Invalid Kit option MemoryIdempotencyStore options.${option} = ${JSON.stringify(v) ?? String(v)}: expected a positive integer.`,
    );
  }
  return v;
}

/**
 * In-memory {@link IIdempotencyStore}: the default `idempotencyStore`. Correct within one process
 * only; use `@kit/store-redis` when several instances serve the same keys. Bounded (see
 * {@link MemoryIdempotencyStoreOptions}): past `maxEntries` keys or `maxBytes`, the oldest keys
 * are evicted before their TTL and counted in {@link MemoryIdempotencyStore.stats}, so that no
 * client can exhaust the process's memory with keyed requests.
 *
 * @example
 * ```ts
 * const store = new MemoryIdempotencyStore({ maxEntries: 10_000 });
 * const r = await store.reserve('payments:abc', { ttlMs: 30_000 });
 * if (r.outcome === 'reserved') await store.complete('payments:abc', r.token, { id: 'p_1' }, { ttlMs: 86_400_000 });
 * console.log(store.stats());   // { entries: 1, bytes: 245, evictions: 0 }
 * ```
 */
export class MemoryIdempotencyStore implements IIdempotencyStore {
  readonly #entries: ExpiringMap<IdempotencyEntry>;

  constructor(options: MemoryIdempotencyStoreOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw new KitError(
        'KIT_ERR_INVALID_OPTION',
        'Invalid Kit option MemoryIdempotencyStore options: expected an object { maxEntries?, maxBytes? }.',
      );
    this.#entries = new ExpiringMap<IdempotencyEntry>({
      maxEntries: bound('maxEntries', options.maxEntries, MEMORY_IDEMPOTENCY_DEFAULTS.maxEntries),
      maxBytes: bound('maxBytes', options.maxBytes, MEMORY_IDEMPOTENCY_DEFAULTS.maxBytes),
      sizeOf: (key, entry) =>
        ENTRY_OVERHEAD_BYTES +
        key.length +
        (entry.fingerprint?.length ?? 0) +
        (entry.response?.length ?? 0),
    });
  }

  /** Keys held, their size as the bounds count it, and keys evicted to stay within the bounds. */
  stats(): MemoryIdempotencyStoreStats {
    return {
      entries: this.#entries.size,
      bytes: this.#entries.bytes,
      evictions: this.#entries.evictions,
    };
  }

  async reserve(key: string, options: IdempotencyReserveOptions): Promise<IdempotencyReservation> {
    storeArguments.key('key', key);
    const ttlMs = storeArguments.ms('options.ttlMs', options?.ttlMs);
    const fingerprint =
      options.fingerprint === undefined
        ? undefined
        : storeArguments.key('options.fingerprint', options.fingerprint);
    const now = Date.now();
    const entry = this.#entries.get(key, now);
    if (!entry) {
      const token = randomUUID();
      this.#entries.set(
        key,
        { state: 'pending', token, fingerprint, response: undefined, expiresAt: now + ttlMs },
        now,
      );
      return { outcome: 'reserved', token };
    }
    if (
      fingerprint !== undefined &&
      entry.fingerprint !== undefined &&
      fingerprint !== entry.fingerprint
    )
      return { outcome: 'mismatch' };
    if (entry.state === 'completed')
      return { outcome: 'completed', response: parse(entry.response ?? 'null') };
    return { outcome: 'pending', retryAfterMs: entry.expiresAt - now };
  }

  async complete(
    key: string,
    token: string,
    response: JsonValue,
    options: IdempotencyCompleteOptions,
  ): Promise<boolean> {
    storeArguments.key('key', key);
    storeArguments.key('token', token);
    const text = storeArguments.json('response', response);
    const ttlMs = storeArguments.ms('options.ttlMs', options?.ttlMs);
    const now = Date.now();
    const entry = this.#entries.get(key, now);
    if (!entry || entry.state !== 'pending' || entry.token !== token) return false;
    // False when the answer alone is over maxBytes: it is not kept, and the caller says so.
    return this.#entries.set(
      key,
      { ...entry, state: 'completed', response: text, expiresAt: now + ttlMs },
      now,
    );
  }

  async release(key: string, token: string): Promise<boolean> {
    storeArguments.key('key', key);
    storeArguments.key('token', token);
    const entry = this.#entries.get(key, Date.now());
    if (!entry || entry.state !== 'pending' || entry.token !== token) return false;
    return this.#entries.delete(key);
  }
}
