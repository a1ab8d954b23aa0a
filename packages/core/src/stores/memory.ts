import { asFunction } from 'awilix';
import type { KitServices } from '../shared/services.js';
import { storeArguments } from './arguments.js';
import { SagaConflictError } from './errors.js';
import { ExpiringMap } from './expiring-map.js';
import { MemoryIdempotencyStore } from './memory-idempotency.js';
import type {
  CronLock,
  ICronJobStore,
  IRateLimitStore,
  ISagaStore,
  JsonValue,
  RateLimitOptions,
  RateLimitResult,
  SagaState,
  SagaWriteOptions,
} from './types.js';

/**
 * The container names the stores are registered under. `addKit` registers the in-memory
 * defaults under these names unless the host already did; `@kit/store-redis` replaces them.
 *
 * @example
 * ```ts
 * const limiter = app.kit.services.resolve<IRateLimitStore>(KitStoreNames.rateLimit);   // 'rateLimitStore'
 * // or, in a class built from the container:
 * class PaymentsEndpoint { constructor(deps: { idempotencyStore: IIdempotencyStore }) {} }
 * ```
 */
export const KitStoreNames = {
  idempotency: 'idempotencyStore',
  rateLimit: 'rateLimitStore',
  saga: 'sagaStore',
  cronJob: 'cronJobStore',
} as const;

function parse<T extends JsonValue>(text: string): T {
  return JSON.parse(text) as T;
}

interface FixedWindow {
  count: number;
  expiresAt: number;
}

interface SlidingLog {
  /** Times units were counted, ascending. */
  times: number[];
  windowMs: number;
  /** When the newest unit leaves the window, i.e. when the whole log is empty. */
  expiresAt: number;
}

/**
 * In-memory {@link IRateLimitStore}: the default `rateLimitStore`. Exact within one process; each
 * instance counts on its own, so use `@kit/store-redis` for a limit shared by several instances.
 *
 * @example
 * ```ts
 * const limiter = new MemoryRateLimitStore();
 * const r = await limiter.consume('ip:10.0.0.1', { limit: 5, windowMs: 1000, algorithm: 'sliding-window' });
 * ```
 */
export class MemoryRateLimitStore implements IRateLimitStore {
  readonly #fixed = new ExpiringMap<FixedWindow>();
  readonly #sliding = new ExpiringMap<SlidingLog>();

  async consume(key: string, options: RateLimitOptions): Promise<RateLimitResult> {
    storeArguments.key('key', key);
    const { limit, windowMs, algorithm, cost } = storeArguments.rateLimit(options);
    const now = Date.now();
    return algorithm === 'fixed-window'
      ? this.#consumeFixed(key, limit, windowMs, cost, now)
      : this.#consumeSliding(key, limit, windowMs, cost, now);
  }

  #consumeFixed(
    key: string,
    limit: number,
    windowMs: number,
    cost: number,
    now: number,
  ): RateLimitResult {
    const window = this.#fixed.get(key, now);
    const count = window?.count ?? 0;
    if (count + cost > limit) {
      // cost <= limit, so a refusal means something is counted and `window` exists.
      const resetAt = window?.expiresAt ?? now;
      return {
        allowed: false,
        limit,
        remaining: Math.max(0, limit - count),
        resetAt,
        retryAfterMs: resetAt - now,
      };
    }
    if (cost === 0)
      return {
        allowed: true,
        limit,
        remaining: limit - count,
        resetAt: window?.expiresAt ?? now,
        retryAfterMs: 0,
      };
    const next = window
      ? { count: count + cost, expiresAt: window.expiresAt }
      : { count: cost, expiresAt: now + windowMs };
    this.#fixed.set(key, next, now);
    return {
      allowed: true,
      limit,
      remaining: limit - next.count,
      resetAt: next.expiresAt,
      retryAfterMs: 0,
    };
  }

  #consumeSliding(
    key: string,
    limit: number,
    windowMs: number,
    cost: number,
    now: number,
  ): RateLimitResult {
    const times = this.#sliding.get(key, now)?.times ?? [];
    // A unit counted at t is inside the window while now < t + windowMs.
    let expired = 0;
    while (expired < times.length && (times[expired] as number) <= now - windowMs) expired++;
    if (expired > 0) times.splice(0, expired);
    const count = times.length;
    const allowed = count + cost <= limit;
    if (allowed && cost > 0) {
      // Keep the log sorted even if the clock stepped back (e.g. mocked timers).
      let at = times.length;
      while (at > 0 && (times[at - 1] as number) > now) at--;
      times.splice(at, 0, ...new Array<number>(cost).fill(now));
    }
    if (times.length > 0) {
      this.#sliding.set(
        key,
        { times, windowMs, expiresAt: (times[times.length - 1] as number) + windowMs },
        now,
      );
    } else {
      this.#sliding.delete(key);
    }
    const resetAt = times.length > 0 ? (times[0] as number) + windowMs : now;
    // Refused: the unit at index count+cost-limit-1 must leave the window before `cost` fits.
    const retryAfterMs = allowed ? 0 : (times[count + cost - limit - 1] as number) + windowMs - now;
    return { allowed, limit, remaining: Math.max(0, limit - times.length), resetAt, retryAfterMs };
  }

  async reset(key: string): Promise<void> {
    storeArguments.key('key', key);
    this.#fixed.delete(key);
    this.#sliding.delete(key);
  }
}

interface SagaEntry {
  version: number;
  data: string;
  updatedAt: number;
  expiresAt: number;
}

/**
 * In-memory {@link ISagaStore}: the default `sagaStore`. State is lost when the process exits;
 * use `@kit/store-redis` for sagas that must survive restarts or span instances.
 *
 * @example
 * ```ts
 * const sagas = new MemorySagaStore();
 * const s1 = await sagas.create('order-42', { step: 'reserve' });
 * await sagas.update('order-42', { step: 'charge' }, s1.version);
 * ```
 */
export class MemorySagaStore implements ISagaStore {
  readonly #entries = new ExpiringMap<SagaEntry>();

  async create<T extends JsonValue>(
    id: string,
    data: T,
    options: SagaWriteOptions = {},
  ): Promise<SagaState<T>> {
    storeArguments.key('id', id);
    const text = storeArguments.json('data', data);
    const ttlMs =
      options.ttlMs === undefined ? undefined : storeArguments.ms('options.ttlMs', options.ttlMs);
    const now = Date.now();
    const existing = this.#entries.get(id, now);
    if (existing) throw new SagaConflictError(id, 0, existing.version);
    const entry = {
      version: 1,
      data: text,
      updatedAt: now,
      expiresAt: ttlMs === undefined ? Infinity : now + ttlMs,
    };
    this.#entries.set(id, entry, now);
    return { id, version: 1, data: parse<T>(text), updatedAt: now };
  }

  async get<T extends JsonValue = JsonValue>(id: string): Promise<SagaState<T> | undefined> {
    storeArguments.key('id', id);
    const entry = this.#entries.get(id, Date.now());
    return (
      entry && {
        id,
        version: entry.version,
        data: parse<T>(entry.data),
        updatedAt: entry.updatedAt,
      }
    );
  }

  async update<T extends JsonValue>(
    id: string,
    data: T,
    expectedVersion: number,
    options: SagaWriteOptions = {},
  ): Promise<SagaState<T>> {
    storeArguments.key('id', id);
    const text = storeArguments.json('data', data);
    storeArguments.version('expectedVersion', expectedVersion);
    const ttlMs =
      options.ttlMs === undefined ? undefined : storeArguments.ms('options.ttlMs', options.ttlMs);
    const now = Date.now();
    const existing = this.#entries.get(id, now);
    if (!existing || existing.version !== expectedVersion)
      throw new SagaConflictError(id, expectedVersion, existing?.version);
    const entry = {
      version: expectedVersion + 1,
      data: text,
      updatedAt: now,
      expiresAt: ttlMs === undefined ? existing.expiresAt : now + ttlMs,
    };
    this.#entries.set(id, entry, now);
    return { id, version: entry.version, data: parse<T>(text), updatedAt: now };
  }

  async delete(id: string, expectedVersion?: number): Promise<boolean> {
    storeArguments.key('id', id);
    if (expectedVersion !== undefined) storeArguments.version('expectedVersion', expectedVersion);
    const existing = this.#entries.get(id, Date.now());
    if (!existing) return false;
    if (expectedVersion !== undefined && existing.version !== expectedVersion)
      throw new SagaConflictError(id, expectedVersion, existing.version);
    return this.#entries.delete(id);
  }
}

/**
 * In-memory {@link ICronJobStore}: the default `cronJobStore`. Locks are per process, so with
 * several instances every instance gets its own lock; use `@kit/store-redis` to run a job once
 * across instances.
 *
 * @example
 * ```ts
 * const locks = new MemoryCronJobStore();
 * if (await locks.tryAcquire('nightly', 'me', 60_000)) await locks.release('nightly', 'me');
 * ```
 */
export class MemoryCronJobStore implements ICronJobStore {
  readonly #locks = new ExpiringMap<{ owner: string; expiresAt: number }>();

  async tryAcquire(job: string, owner: string, ttlMs: number): Promise<boolean> {
    storeArguments.key('job', job);
    storeArguments.key('owner', owner);
    storeArguments.ms('ttlMs', ttlMs);
    const now = Date.now();
    const lock = this.#locks.get(job, now);
    if (lock && lock.owner !== owner) return false;
    this.#locks.set(job, { owner, expiresAt: now + ttlMs }, now);
    return true;
  }

  async renew(job: string, owner: string, ttlMs: number): Promise<boolean> {
    storeArguments.key('job', job);
    storeArguments.key('owner', owner);
    storeArguments.ms('ttlMs', ttlMs);
    const now = Date.now();
    const lock = this.#locks.get(job, now);
    if (!lock || lock.owner !== owner) return false;
    this.#locks.set(job, { owner, expiresAt: now + ttlMs }, now);
    return true;
  }

  async release(job: string, owner: string): Promise<boolean> {
    storeArguments.key('job', job);
    storeArguments.key('owner', owner);
    const lock = this.#locks.get(job, Date.now());
    if (!lock || lock.owner !== owner) return false;
    return this.#locks.delete(job);
  }

  async getLock(job: string): Promise<CronLock | undefined> {
    storeArguments.key('job', job);
    const lock = this.#locks.get(job, Date.now());
    return lock && { owner: lock.owner, expiresAt: lock.expiresAt };
  }
}

/**
 * Registers the in-memory stores under {@link KitStoreNames}, leaving any name the host (or a
 * host-provided container) already registered alone. Called by `addKit`.
 */
export function registerMemoryStores(services: KitServices): void {
  const defaults: Record<string, () => object> = {
    [KitStoreNames.idempotency]: () => new MemoryIdempotencyStore(),
    [KitStoreNames.rateLimit]: () => new MemoryRateLimitStore(),
    [KitStoreNames.saga]: () => new MemorySagaStore(),
    [KitStoreNames.cronJob]: () => new MemoryCronJobStore(),
  };
  for (const [name, create] of Object.entries(defaults)) {
    if (!services.hasRegistration(name)) services.register(name, asFunction(create).singleton());
  }
}
