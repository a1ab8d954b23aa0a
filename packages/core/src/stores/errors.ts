import { KitError, show } from '../shared/errors.js';

/**
 * `KIT_ERR_SAGA_CONFLICT`: a saga write named a version that is not the stored one (another
 * writer got there first, or the saga does not exist). Nothing was written. Carries
 * `statusCode` 409 so that, left unhandled in a route, Fastify answers 409 Conflict.
 *
 * @example
 * ```ts
 * try {
 *   await sagas.update(id, next, state.version);
 * } catch (err) {
 *   if (err instanceof SagaConflictError) app.log.info({ actual: err.actualVersion }, 'saga moved on, re-reading');
 *   else throw err;
 * }
 * ```
 */
export class SagaConflictError extends KitError {
  /** HTTP status Fastify uses when this error reaches its error handler. */
  readonly statusCode = 409;

  constructor(
    /** The saga id. */
    readonly sagaId: string,
    /** The version the caller expected (`0` for `create`). */
    readonly expectedVersion: number,
    /** The stored version, or `undefined` when the saga does not exist. */
    readonly actualVersion: number | undefined,
  ) {
    super(
      'KIT_ERR_SAGA_CONFLICT',
      actualVersion === undefined
        ? `Saga ${show(sagaId)} does not exist (expected version ${expectedVersion}); nothing was written.`
        : expectedVersion === 0
          ? `Saga ${show(sagaId)} already exists at version ${actualVersion}; nothing was written.`
          : `Saga ${show(sagaId)} is at version ${actualVersion}, not the expected ${expectedVersion}; re-read it and retry.`,
    );
    this.name = 'SagaConflictError';
  }
}

/**
 * `KIT_ERR_STORE_UNAVAILABLE`: the backing store (for example Redis) cannot be reached, or did not
 * answer in time. Raised at once instead of queueing the call. A write that fails this way may or
 * may not have been applied (the reply can be lost after the server ran it). Carries `statusCode`
 * 503 so that, left unhandled in a route, Fastify answers 503 Service Unavailable. The message
 * never contains credentials or addresses; the underlying error is `cause`.
 *
 * @example
 * ```ts
 * try {
 *   await limiter.consume(key, { limit: 100, windowMs: 60_000 });
 * } catch (err) {
 *   if (err instanceof StoreUnavailableError) return;   // fail open: admit the request while Redis is down
 *   throw err;
 * }
 * ```
 */
export class StoreUnavailableError extends KitError {
  /** HTTP status Fastify uses when this error reaches its error handler. */
  readonly statusCode = 503;

  constructor(
    /** The store kind, for example `redis`. */
    readonly store: string,
    /** Why, in a few words (`not connected`, `timed out after 2000 ms`, ...). */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      'KIT_ERR_STORE_UNAVAILABLE',
      `The ${store} store is unavailable (${reason}); the call was not queued. Retry when it is back.`,
      options,
    );
    this.name = 'StoreUnavailableError';
  }
}
