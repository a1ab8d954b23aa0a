import { KitError } from '@kit/core';
import { autoCrudErrors } from '../errors.js';

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
    super('KIT_ERR_DATABASE_UNAVAILABLE', autoCrudErrors.message('KIT_ERR_DATABASE_UNAVAILABLE', { reason }), options);
    this.name = 'DatabaseUnavailableError';
  }
}

/**
 * The connection broke while a statement ran on it (its backend was terminated, the server shut
 * down or crashed, the network dropped it): this call fails, but the database is not marked down;
 * the next call takes another connection, and only a failure to connect marks it down. A read can
 * be retried at once; a write may or may not have been applied. The routes answer 503 with
 * `Retry-After: 1`.
 *
 * @example
 * ```ts
 * catch (err) { if (err instanceof ConnectionLostError) return products.get(id); }   // a read: retry once
 * ```
 */
export class ConnectionLostError extends DatabaseUnavailableError {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, options);
    this.name = 'ConnectionLostError';
    this.message = `The database connection was lost while the statement ran (${reason}): a read can be retried at once; a write may or may not have been applied.`;
  }
}

/**
 * No connection could be had within `acquireTimeoutMs` (every pooled connection busy, or an
 * embedded engine's single session or file lock held): the database is up, only saturated. The
 * query was not run. The routes answer 503 with `Retry-After`; unlike
 * {@link DatabaseUnavailableError} it does not mark the database down, and no log line calls it
 * unavailable.
 *
 * @example
 * ```ts
 * catch (err) { if (err instanceof DatabaseBusyError) metrics.busy.inc(); }
 * ```
 */
export class DatabaseBusyError extends KitError {
  constructor(
    readonly waitedMs: number,
    options?: { cause?: unknown },
  ) {
    super('KIT_ERR_DATABASE_BUSY', autoCrudErrors.message('KIT_ERR_DATABASE_BUSY', { waitedMs }), options);
    this.name = 'DatabaseBusyError';
  }
}

/**
 * A statement ran longer than `statementTimeoutMs` and was cancelled by the database: nothing of
 * it was written. The routes answer 504.
 *
 * @example
 * ```ts
 * catch (err) { if (err instanceof StatementTimeoutError) app.log.warn({ limitMs: err.limitMs }, 'slow query cancelled'); }
 * ```
 */
export class StatementTimeoutError extends KitError {
  constructor(
    readonly limitMs: number,
    options?: { cause?: unknown },
  ) {
    super('KIT_ERR_DATABASE_TIMEOUT', autoCrudErrors.message('KIT_ERR_DATABASE_TIMEOUT', { limitMs }), options);
    this.name = 'StatementTimeoutError';
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
  /** For a unique violation, the columns of the key whose values are taken, where the database names them. */
  readonly columns: readonly string[] | undefined;

  constructor(
    readonly kind: 'unique' | 'foreignKey',
    options?: { cause?: unknown; columns?: readonly string[] | undefined },
  ) {
    super(
      'KIT_ERR_DATABASE_CONFLICT',
      kind === 'unique' ? 'The write conflicts with an existing row (a unique constraint).' : 'The write conflicts with related rows (a foreign-key constraint).',
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'ConstraintViolationError';
    this.columns = options?.columns;
  }
}

/**
 * A write names a row that does not exist (or is soft-deleted) in a field that references
 * another entity: nothing was written. The routes answer 422 naming the field and the key.
 *
 * @example
 * ```ts
 * catch (err) { if (err instanceof MissingReferenceError) console.log(err.field, err.key, err.target); }
 * ```
 */
export class MissingReferenceError extends KitError {
  constructor(
    readonly entity: string,
    readonly field: string,
    readonly key: unknown,
    readonly target: string,
  ) {
    super('KIT_ERR_AUTOCRUD_MISSING_REFERENCE', autoCrudErrors.message('KIT_ERR_AUTOCRUD_MISSING_REFERENCE', { entity, field, key: JSON.stringify(key), target }));
    this.name = 'MissingReferenceError';
  }
}

/**
 * A delete refused because other rows still refer to the row (`onDelete: 'restrict'`, the
 * default): nothing was deleted. `referrer` and `field` name who refers, `referrerKey` one such
 * row. The routes answer 409.
 *
 * @example
 * ```ts
 * catch (err) { if (err instanceof StillReferencedError) console.log(`${err.referrer} ${String(err.referrerKey)} still refers to it through ${err.field}`); }
 * ```
 */
export class StillReferencedError extends KitError {
  constructor(
    readonly entity: string,
    readonly key: unknown,
    readonly referrer: string,
    readonly field: string,
    readonly referrerKey: unknown,
  ) {
    super(
      'KIT_ERR_AUTOCRUD_STILL_REFERENCED',
      autoCrudErrors.message('KIT_ERR_AUTOCRUD_STILL_REFERENCED', { entity, key: JSON.stringify(key), referrer, field, referrerKey: JSON.stringify(referrerKey) }),
    );
    this.name = 'StillReferencedError';
  }
}

/**
 * The columns of the unique key a driver error says is taken: PostgreSQL's and PGlite's `detail`
 * (`Key (order_id, sku)=(...) already exists.`), SQLite's message (`UNIQUE constraint failed:
 * t.order_id, t.sku`). Only the names are kept, never the values.
 */
export function takenColumns(err: unknown): string[] | undefined {
  const e = err as { detail?: unknown; message?: unknown } | null;
  const pg = typeof e?.detail === 'string' ? /^Key \((.+?)\)=\(/.exec(e.detail) : null;
  if (pg) return (pg[1] as string).split(', ').map((c) => c.replace(/^"(.*)"$/, '$1').replaceAll('""', '"'));
  const lite = typeof e?.message === 'string' ? /UNIQUE constraint failed: (.+)$/.exec(e.message) : null;
  if (lite) return (lite[1] as string).split(', ').map((c) => c.slice(c.lastIndexOf('.') + 1));
  return undefined;
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
    super('KIT_ERR_DATABASE_INVALID_VALUE', autoCrudErrors.message('KIT_ERR_DATABASE_INVALID_VALUE'), options);
    this.name = 'InvalidValueError';
  }
}

/**
 * A stored value Kit cannot answer exactly (an integer beyond 2^53 - 1 in an `integer` field, a
 * timestamp past year 9999, NaN in a `number` field, a text that is not Kit's form of its kind):
 * nothing is answered rather than a rounded or shifted value. The message names the entity, the
 * field and the row; the routes answer 500 and log it.
 *
 * @example
 * ```ts
 * catch (err) { if (err instanceof UnrepresentableValueError) app.log.error({ field: err.field }, err.message); }
 * ```
 */
export class UnrepresentableValueError extends KitError {
  constructor(
    readonly entity: string,
    readonly field: string | undefined,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super('KIT_ERR_AUTOCRUD_UNREPRESENTABLE', `${field === undefined ? `A field of ${entity}` : `${entity}.${field}`} ${detail}; Kit answers no value it cannot answer exactly.`, options);
    this.name = 'UnrepresentableValueError';
  }
}

/**
 * A conditional write (`ifVersion`) found the row at another version: nothing was written.
 * `currentVersion` is the row's version now. The routes answer 412 with its `ETag`.
 *
 * @example
 * ```ts
 * try { await products.update(7, { name: 'Kettle', price: 40 }, { ifVersion: [3] }); } catch (err) {
 *   if (err instanceof VersionConflictError) console.log('someone else wrote version', err.currentVersion);
 * }
 * ```
 */
export class VersionConflictError extends KitError {
  constructor(readonly currentVersion: number) {
    super('KIT_ERR_AUTOCRUD_VERSION_CONFLICT', autoCrudErrors.message('KIT_ERR_AUTOCRUD_VERSION_CONFLICT', { currentVersion }));
    this.name = 'VersionConflictError';
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

/**
 * How an engine classifies a driver error: `unavailable` (the database cannot be reached: marks it
 * down), `lost` (a connection broke while in use: this call fails, the database is not marked
 * down), `busy` (no connection within acquireTimeoutMs: the database is up), `timeout` (cancelled
 * by statementTimeoutMs), a constraint, an invalid value, or anything else.
 */
export type ErrorClass = 'unavailable' | 'lost' | 'busy' | 'timeout' | 'unique' | 'foreignKey' | 'invalid' | 'other';

/**
 * One row of an atomic write (`createMany`, `patchMany`) failed, so the whole write was rolled back
 * and nothing of it is stored. `index` is the row's position in the call's array; `cause` is the
 * row's own error (`KitError` `KIT_ERR_INVALID_ARGUMENT` for a bad value, `ConstraintViolationError`,
 * `InvalidValueError`, `VersionConflictError`), or `undefined` when the row to change does not
 * exist (`missing`).
 *
 * @example
 * ```ts
 * try { await products.createMany(rows); } catch (err) {
 *   if (err instanceof BatchRowError) app.log.info({ row: err.index }, 'nothing was written');
 * }
 * ```
 */
export class BatchRowError extends Error {
  constructor(
    readonly index: number,
    cause: unknown,
    /** For a nested create: the one-to-many relation (`lines`) the row belongs to; `index` is its position there. */
    readonly relation?: string,
  ) {
    const row = relation === undefined ? `Row ${index} of the batch` : `${relation}[${index}]`;
    super(cause === undefined ? `${row} does not exist; nothing was written.` : `${row} failed; nothing was written: ${(cause as Error).message}`, { cause });
    this.name = 'BatchRowError';
  }

  /** True when the row to change does not exist (or is soft-deleted). */
  get missing(): boolean {
    return this.cause === undefined;
  }
}
