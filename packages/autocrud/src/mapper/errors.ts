import { KitError } from '@kit/core';

/**
 * The database cannot be reached (down, restarting, refusing connections, or still starting).
 * The mapper fails fast with it instead of queueing work; the routes answer 503 with
 * `Retry-After`. `reason` never names a host, user or password.
 *
 * @example
 * ```ts
 * try { await products.get(1); } catch (err) {
 *   if (err instanceof DatabaseUnavailableError) app.log.warn({ reason: err.reason }, 'database down');
 * }
 * ```
 */
export class DatabaseUnavailableError extends KitError {
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super('KIT_ERR_DATABASE_UNAVAILABLE', `The database is unavailable (${reason}); the query was not run. It is retried on the next call.`, options);
    this.name = 'DatabaseUnavailableError';
  }
}

/**
 * A write broke a unique or foreign-key constraint: nothing was written. The routes answer 409.
 *
 * @example
 * ```ts
 * catch (err) { if (err instanceof ConstraintViolationError && err.kind === 'unique') return reply.code(409).send(); }
 * ```
 */
export class ConstraintViolationError extends KitError {
  constructor(
    readonly kind: 'unique' | 'foreignKey',
    options?: { cause?: unknown },
  ) {
    super(
      'KIT_ERR_DATABASE_CONFLICT',
      kind === 'unique' ? 'The write conflicts with an existing row (a unique constraint).' : 'The write conflicts with related rows (a foreign-key constraint).',
      options,
    );
    this.name = 'ConstraintViolationError';
  }
}

/**
 * The database refused a value (out of range for its column, a NOT NULL or CHECK constraint, an
 * unrepresentable text): nothing was written. The routes answer 400.
 *
 * @example
 * ```ts
 * catch (err) { if (err instanceof InvalidValueError) return reply.code(400).send({ message: err.message }); }
 * ```
 */
export class InvalidValueError extends KitError {
  constructor(options?: { cause?: unknown }) {
    super('KIT_ERR_DATABASE_INVALID_VALUE', 'The database refused a value: out of range for its column, or against a NOT NULL or CHECK constraint.', options);
    this.name = 'InvalidValueError';
  }
}

/**
 * A table or column an entity needs is missing, or of an incompatible type. At start-up this
 * fails `app.ready()`; found later (the database came back different), calls fail with it.
 *
 * @example
 * ```ts
 * await app.ready().catch((err) => { if (err.code === 'KIT_ERR_AUTOCRUD_SCHEMA') console.error(err.message); throw err; });
 * ```
 */
export class SchemaMismatchError extends KitError {
  constructor(message: string) {
    super('KIT_ERR_AUTOCRUD_SCHEMA', message);
    this.name = 'SchemaMismatchError';
  }
}

/** How an engine classifies a driver error. */
export type ErrorClass = 'unavailable' | 'unique' | 'foreignKey' | 'invalid' | 'other';
