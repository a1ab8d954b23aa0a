// The four store contracts. Every implementation (memory here, Redis in @kit/store-redis) must
// pass the same conformance suite, so the wording below is the behaviour, not a hint.

/**
 * A value the stores can persist: what `JSON.stringify` writes and `JSON.parse` reads back.
 * Stores keep a JSON copy, so what you read is a fresh object, never the one you passed.
 *
 * @example
 * ```ts
 * const response: JsonValue = { statusCode: 201, body: { id: 'p_1' } };
 * ```
 */
export type JsonValue =
  string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

// ---------------------------------------------------------------------------------------------
// Idempotency

/**
 * Options of {@link IIdempotencyStore.reserve}.
 *
 * @example
 * ```ts
 * const options: IdempotencyReserveOptions = { ttlMs: 30_000, fingerprint: sha256(JSON.stringify(request.body)) };
 * ```
 */
export interface IdempotencyReserveOptions {
  /**
   * How long the reservation holds, in milliseconds, while the operation runs. When it lapses
   * without `complete` or `release`, the next caller may reserve the key again (the first
   * holder is presumed dead).
   */
  ttlMs: number;
  /**
   * A digest of the request (for example a hash of method, path and body). When both the stored
   * record and this call carry one and they differ, the outcome is `mismatch`: the client reused
   * a key for a different request.
   */
  fingerprint?: string;
}

/**
 * Options of {@link IIdempotencyStore.complete}.
 *
 * @example
 * ```ts
 * await store.complete(key, token, response, { ttlMs: 24 * 60 * 60 * 1000 } satisfies IdempotencyCompleteOptions);
 * ```
 */
export interface IdempotencyCompleteOptions {
  /** How long the stored response is replayed, in milliseconds (for example 24 hours). */
  ttlMs: number;
}

/**
 * What {@link IIdempotencyStore.reserve} found:
 * - `reserved`: this caller is the first writer; run the operation, then `complete` (or `release`)
 *   with `token`.
 * - `pending`: another caller holds the key and has not completed; retry after `retryAfterMs`.
 * - `completed`: the operation already ran; `response` is what its first writer stored.
 * - `mismatch`: the key is in use for a request with a different fingerprint.
 *
 * @example
 * ```ts
 * const r: IdempotencyReservation = await store.reserve(key, { ttlMs: 30_000 });
 * if (r.outcome === 'completed') return r.response;   // narrowed: response is there
 * ```
 */
export type IdempotencyReservation =
  | { readonly outcome: 'reserved'; readonly token: string }
  | { readonly outcome: 'pending'; readonly retryAfterMs: number }
  | { readonly outcome: 'completed'; readonly response: JsonValue }
  | { readonly outcome: 'mismatch' };

/**
 * Idempotency keys with first-writer-wins (registered as `idempotencyStore`).
 *
 * Across any number of instances sharing the store, exactly one concurrent `reserve` of a key
 * gets `reserved`; the others get `pending` until the holder calls `complete` (then everyone gets
 * `completed` with the stored response until its TTL lapses) or `release` (then the key is free
 * again). Only the holder's `token` can complete or release, and only while the reservation is
 * still held: once it lapsed, `complete` returns false and stores nothing.
 *
 * @example
 * ```ts
 * const store = app.kit.services.resolve<IIdempotencyStore>('idempotencyStore');
 * app.post('/payments', async (request, reply) => {
 *   const key = `payments:${request.headers['idempotency-key']}`;
 *   const r = await store.reserve(key, { ttlMs: 30_000, fingerprint: hash(request.body) });
 *   if (r.outcome === 'completed') return reply.code(200).send(r.response);
 *   if (r.outcome === 'pending') return reply.code(409).header('retry-after', Math.ceil(r.retryAfterMs / 1000)).send();
 *   if (r.outcome === 'mismatch') return reply.code(422).send({ message: 'key reused for another request' });
 *   try {
 *     const payment = await charge(request.body);
 *     await store.complete(key, r.token, payment, { ttlMs: 86_400_000 });
 *     return reply.code(201).send(payment);
 *   } catch (err) {
 *     await store.release(key, r.token);   // let the client retry
 *     throw err;
 *   }
 * });
 * ```
 */
export interface IIdempotencyStore {
  /** Reserves `key` for this caller, or reports who has it (see {@link IdempotencyReservation}). */
  reserve(key: string, options: IdempotencyReserveOptions): Promise<IdempotencyReservation>;
  /**
   * Stores the response of the reservation `token` holds and keeps it for `ttlMs`. Returns false
   * (and stores nothing) when the reservation is no longer this token's: it lapsed, was released,
   * or was already completed.
   */
  complete(
    key: string,
    token: string,
    response: JsonValue,
    options: IdempotencyCompleteOptions,
  ): Promise<boolean>;
  /** Gives up a pending reservation so the key can be reserved again. False when `token` does not hold it. */
  release(key: string, token: string): Promise<boolean>;
}

// ---------------------------------------------------------------------------------------------
// Rate limiting

/**
 * `fixed-window`: at most `limit` units per window; the window starts with the first counted unit
 * and all units are freed together when it ends. `sliding-window`: at most `limit` units in any
 * period of `windowMs` (an exact sliding log; each unit is freed `windowMs` after it was counted).
 *
 * @example
 * ```ts
 * const algorithm: RateLimitAlgorithm = 'sliding-window';
 * await limiter.consume('ip:10.0.0.1', { limit: 100, windowMs: 60_000, algorithm });
 * ```
 */
export type RateLimitAlgorithm = 'fixed-window' | 'sliding-window';

/**
 * Options of {@link IRateLimitStore.consume}.
 *
 * @example
 * ```ts
 * // A bulk import counts as 10 of the tenant's 1000 calls per hour.
 * const options: RateLimitOptions = { limit: 1000, windowMs: 3_600_000, cost: 10 };
 * ```
 */
export interface RateLimitOptions {
  /** Units admitted per window (a positive integer). */
  limit: number;
  /** Window length in milliseconds. */
  windowMs: number;
  /** Default `fixed-window`. A key should always be used with the same algorithm. */
  algorithm?: RateLimitAlgorithm;
  /** Units this call takes, default 1; 0 reads the state without counting; at most `limit`. */
  cost?: number;
}

/**
 * The decision of {@link IRateLimitStore.consume}.
 *
 * @example
 * ```ts
 * const r: RateLimitResult = await limiter.consume(key, { limit: 100, windowMs: 60_000 });
 * reply.header('ratelimit-remaining', r.remaining).header('ratelimit-reset', Math.ceil((r.resetAt - Date.now()) / 1000));
 * ```
 */
export interface RateLimitResult {
  /** True when the units were counted; a refused call counts nothing. */
  readonly allowed: boolean;
  /** The `limit` the call was made with. */
  readonly limit: number;
  /** Units still available in the window after this call. */
  readonly remaining: number;
  /**
   * Epoch milliseconds (the store's clock) of the next moment `remaining` grows: the end of the
   * fixed window, or when the oldest counted unit leaves the sliding window. Equals the store's
   * current time when nothing is counted.
   */
  readonly resetAt: number;
  /** 0 when allowed; otherwise milliseconds until a call of the same cost can be admitted. */
  readonly retryAfterMs: number;
}

/**
 * Atomic rate counting (registered as `rateLimitStore`). Check and count are one atomic step, so
 * across any number of instances sharing the store at most `limit` units are admitted per window.
 *
 * For HTTP routes, `kitRateLimitStore` puts it behind `@fastify/rate-limit` (headers, 429,
 * per-route options); call it directly for everything else:
 *
 * @example
 * ```ts
 * const limiter = app.kit.services.resolve<IRateLimitStore>('rateLimitStore');
 * // At most 1000 outgoing e-mails per tenant and hour, across every worker.
 * const r = await limiter.consume(`mail:${tenantId}`, { limit: 1000, windowMs: 3_600_000 });
 * if (!r.allowed) await delay(r.retryAfterMs);
 * ```
 */
export interface IRateLimitStore {
  /** Counts `cost` units against `key` if they fit in the window, atomically. */
  consume(key: string, options: RateLimitOptions): Promise<RateLimitResult>;
  /** Forgets everything counted for `key` (both algorithms). */
  reset(key: string): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Sagas

/**
 * A saga's persisted state. Declare `T` as a `type` alias: TypeScript does not treat an
 * `interface` as assignable to {@link JsonValue}.
 *
 * @example
 * ```ts
 * type OrderSaga = { step: 'reserve' | 'charge' | 'ship'; orderId: string };
 * const s: SagaState<OrderSaga> | undefined = await sagas.get<OrderSaga>('order-42');
 * ```
 */
export interface SagaState<T extends JsonValue = JsonValue> {
  readonly id: string;
  /** 1 after `create`, +1 per `update`. */
  readonly version: number;
  readonly data: T;
  /** Epoch milliseconds (the store's clock) of the last write. */
  readonly updatedAt: number;
}

/**
 * Options of {@link ISagaStore.create} and {@link ISagaStore.update}.
 *
 * @example
 * ```ts
 * await sagas.create('order-42', { step: 'reserve' }, { ttlMs: 7 * 24 * 3_600_000 } satisfies SagaWriteOptions);
 * ```
 */
export interface SagaWriteOptions {
  /**
   * When given, the state expires this long after the write. When omitted, `create` keeps the
   * state until deleted and `update` keeps whatever expiry it had.
   */
  ttlMs?: number;
}

/**
 * Saga state with optimistic concurrency (registered as `sagaStore`). Every write names the
 * version it read; when another writer got there first, the write fails with a
 * `SagaConflictError` (`KIT_ERR_SAGA_CONFLICT`) carrying the actual version, and nothing changes.
 *
 * @example
 * ```ts
 * const sagas = app.kit.services.resolve<ISagaStore>('sagaStore');
 * await sagas.create('order-42', { step: 'reserve-stock' });
 * for (;;) {
 *   const s = (await sagas.get<{ step: string }>('order-42'))!;
 *   try {
 *     await sagas.update('order-42', { step: 'charge' }, s.version);
 *     break;
 *   } catch (err) {
 *     if (!(err instanceof SagaConflictError)) throw err;   // someone else moved it: re-read
 *   }
 * }
 * ```
 */
export interface ISagaStore {
  /** Creates the saga at version 1. Throws `SagaConflictError` when `id` exists. */
  create<T extends JsonValue>(
    id: string,
    data: T,
    options?: SagaWriteOptions,
  ): Promise<SagaState<T>>;
  /** The current state, or `undefined`. */
  get<T extends JsonValue = JsonValue>(id: string): Promise<SagaState<T> | undefined>;
  /**
   * Replaces the data if the stored version is `expectedVersion` and returns the new state
   * (version + 1). Throws `SagaConflictError` otherwise, also when the saga does not exist.
   */
  update<T extends JsonValue>(
    id: string,
    data: T,
    expectedVersion: number,
    options?: SagaWriteOptions,
  ): Promise<SagaState<T>>;
  /**
   * Deletes the saga. With `expectedVersion`, only that version is deleted (otherwise
   * `SagaConflictError`). Returns false when it did not exist.
   */
  delete(id: string, expectedVersion?: number): Promise<boolean>;
}

// ---------------------------------------------------------------------------------------------
// Cron locks

/**
 * Who holds a cron lock, and until when.
 *
 * @example
 * ```ts
 * const lock: CronLock | undefined = await locks.getLock('nightly-report');
 * app.log.info({ holder: lock?.owner, until: lock && new Date(lock.expiresAt) }, 'nightly-report lock');
 * ```
 */
export interface CronLock {
  readonly owner: string;
  /** Epoch milliseconds (the store's clock) when the lock lapses unless renewed. */
  readonly expiresAt: number;
}

/**
 * Cron locks (registered as `cronJobStore`): among instances sharing the store, at most one owner
 * holds a job's lock at a time. A lock lapses after its TTL unless its owner renews it, so a
 * crashed holder is replaced. Only the owner can renew or release. `owner` must be unique per
 * process (for example `${hostname()}:${process.pid}:${randomUUID()}`).
 *
 * @example
 * ```ts
 * const locks = app.kit.services.resolve<ICronJobStore>('cronJobStore');
 * const owner = `${hostname()}:${process.pid}:${randomUUID()}`;
 * setInterval(async () => {
 *   if (!(await locks.tryAcquire('nightly-report', owner, 60_000))) return;   // another instance runs it
 *   try {
 *     await runNightlyReport(() => locks.renew('nightly-report', owner, 60_000));
 *   } finally {
 *     await locks.release('nightly-report', owner);
 *   }
 * }, 10_000);
 * ```
 */
export interface ICronJobStore {
  /**
   * Takes the lock for `ttlMs` when it is free or lapsed and returns true. When `owner` already
   * holds it, extends it to `ttlMs` and returns true. Returns false when another owner holds it.
   */
  tryAcquire(job: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Extends the lock to `ttlMs` from now. False (and nothing changes) unless `owner` holds it. */
  renew(job: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Frees the lock. False (and nothing changes) unless `owner` holds it. */
  release(job: string, owner: string): Promise<boolean>;
  /** The current holder, or `undefined` when the lock is free. */
  getLock(job: string): Promise<CronLock | undefined>;
}
