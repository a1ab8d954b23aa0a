// The mapper's errors. Each carries its code and, from the catalogue (../errors.ts), the status and
// problem texts a generated route answers it with (`problem`, and `rowProblem` when it failed one
// row of a batch), as each of Fastify's error constructors carries its status and template: the
// routes' error handler only renders what the error says. No HTTP library is imported here.
import { KitError } from '@kit/core';
import {
  autoCrudErrors,
  BUSY_RETRY_AFTER_SECONDS,
  fillProblem,
  problemText,
  RETRY_AFTER_SECONDS,
  routeProblems,
  statusOf,
  type Answerable,
  type BatchRow,
  type ProblemShape,
  type ProblemSubject,
} from '../errors.js';

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
export class DatabaseUnavailableError extends KitError implements Answerable {
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super('KIT_ERR_DATABASE_UNAVAILABLE', autoCrudErrors.message('KIT_ERR_DATABASE_UNAVAILABLE', { reason }), options);
    this.name = 'DatabaseUnavailableError';
  }

  /** 503, as the catalogue declares for its code. */
  get httpStatus(): number {
    return statusOf('KIT_ERR_DATABASE_UNAVAILABLE');
  }

  /** A 503 with `Retry-After`, saying nothing of the reason (it may name the database's host). */
  problem(): ProblemShape {
    return { status: this.httpStatus, detail: problemText('KIT_ERR_DATABASE_UNAVAILABLE', 'unavailable'), headers: { 'retry-after': String(RETRY_AFTER_SECONDS) } };
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

  /** A 503 whose `Retry-After` is short: one connection broke, not the database; the next request takes another. */
  override problem(): ProblemShape {
    return { status: this.httpStatus, detail: problemText('KIT_ERR_DATABASE_UNAVAILABLE', 'lost'), headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) } };
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
export class DatabaseBusyError extends KitError implements Answerable {
  constructor(
    readonly waitedMs: number,
    options?: { cause?: unknown },
  ) {
    super('KIT_ERR_DATABASE_BUSY', autoCrudErrors.message('KIT_ERR_DATABASE_BUSY', { waitedMs }), options);
    this.name = 'DatabaseBusyError';
  }

  /** 503, as the catalogue declares for its code. */
  get httpStatus(): number {
    return statusOf('KIT_ERR_DATABASE_BUSY');
  }

  /** A 503 with a short `Retry-After`: a connection frees up in moments. */
  problem(): ProblemShape {
    return { status: this.httpStatus, detail: problemText('KIT_ERR_DATABASE_BUSY', 'busy'), headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) } };
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
export class StatementTimeoutError extends KitError implements Answerable {
  constructor(
    readonly limitMs: number,
    options?: { cause?: unknown },
  ) {
    super('KIT_ERR_DATABASE_TIMEOUT', autoCrudErrors.message('KIT_ERR_DATABASE_TIMEOUT', { limitMs }), options);
    this.name = 'StatementTimeoutError';
  }

  /** 504, as the catalogue declares for its code. */
  get httpStatus(): number {
    return statusOf('KIT_ERR_DATABASE_TIMEOUT');
  }

  /** A 504 saying nothing of it was written. */
  problem(): ProblemShape {
    return { status: this.httpStatus, detail: problemText('KIT_ERR_DATABASE_TIMEOUT', 'timeout') };
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
export class ConstraintViolationError extends KitError implements Answerable {
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

  /** 409, as the catalogue declares for its code. */
  get httpStatus(): number {
    return statusOf('KIT_ERR_DATABASE_CONFLICT');
  }

  /** A 409 naming the fields whose values are taken when the database named the key, else the kind of constraint. */
  problem(subject: ProblemSubject): ProblemShape {
    const fields = takenFields(subject, this);
    if (fields) {
      const detail = problemText('KIT_ERR_DATABASE_CONFLICT', 'taken', { entity: subject.name, fields: fields.join(' and '), rule: conflictText(fields) });
      return { status: this.httpStatus, detail, errors: fields.map((name) => ({ name, detail: problemText('KIT_ERR_DATABASE_CONFLICT', 'fieldTaken') })) };
    }
    return { status: this.httpStatus, detail: problemText('KIT_ERR_DATABASE_CONFLICT', this.kind === 'unique' ? 'unique' : 'foreignKey', { entity: subject.name }) };
  }

  /** The 409 of the row that broke the constraint. */
  rowProblem(row: BatchRow): ProblemShape {
    const fields = takenFields(row.entity, this);
    const detail = fields
      ? problemText('KIT_ERR_DATABASE_CONFLICT', 'rowTaken', { fields: fields.join(' and '), verb: fields.length === 1 ? 'is' : 'are', rule: conflictText(fields) })
      : problemText('KIT_ERR_DATABASE_CONFLICT', this.kind === 'unique' ? 'rowUnique' : 'rowForeignKey', { entity: row.entity.name });
    return rowShape(this.httpStatus, row, detail);
  }
}

/** The fields of the unique key a conflict names (by their columns), when the database named it. */
export function takenFields(subject: ProblemSubject, error: ConstraintViolationError): string[] | undefined {
  if (error.kind !== 'unique' || !error.columns) return undefined;
  const fields = error.columns.map((column) => subject.fields.find((f) => f.column === column || f.column.toLowerCase() === column.toLowerCase())?.name);
  return fields.every((f): f is string => f !== undefined) && fields.length > 0 ? fields : undefined;
}

/** How a unique conflict on `fields` is explained. */
export function conflictText(fields: readonly string[]): string {
  return fields.length === 1 ? `${fields[0] as string} must be unique` : `the combination of ${fields.join(', ')} must be unique`;
}

/** A problem about one row of a batch: the row named in the detail and as the one field at fault. */
function rowShape(status: number, row: BatchRow, detail: string, members?: Readonly<Record<string, unknown>>): ProblemShape {
  return { status, detail: fillProblem(routeProblems.rowFault, { row: row.which, detail }), errors: [{ name: row.path, detail }], ...(members ? { members } : {}) };
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
export class MissingReferenceError extends KitError implements Answerable {
  constructor(
    readonly entity: string,
    readonly field: string,
    readonly key: unknown,
    readonly target: string,
  ) {
    super('KIT_ERR_AUTOCRUD_MISSING_REFERENCE', autoCrudErrors.message('KIT_ERR_AUTOCRUD_MISSING_REFERENCE', { entity, field, key: JSON.stringify(key), target }));
    this.name = 'MissingReferenceError';
  }

  /** 422, as the catalogue declares for its code. */
  get httpStatus(): number {
    return statusOf('KIT_ERR_AUTOCRUD_MISSING_REFERENCE');
  }

  /** A 422 naming the body field and the key it names. */
  problem(): ProblemShape {
    return referenceShape(this, this.field);
  }

  /** The 422 naming the row's field (`[3].customerId`, `lines[3].productId`). */
  rowProblem(row: BatchRow): ProblemShape {
    return referenceShape(this, `${row.path}.${this.field}`);
  }
}

/** The 422 of a missing reference, naming the body field `name` that holds it. */
function referenceShape(error: MissingReferenceError, name: string): ProblemShape {
  const detail = problemText('KIT_ERR_AUTOCRUD_MISSING_REFERENCE', 'missing', { target: error.target, key: JSON.stringify(error.key) });
  return { status: error.httpStatus, detail: fillProblem(routeProblems.fieldFault, { field: name, detail }), errors: [{ name, detail }] };
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
export class StillReferencedError extends KitError implements Answerable {
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

  /** 409, as the catalogue declares for its code. */
  get httpStatus(): number {
    return statusOf('KIT_ERR_AUTOCRUD_STILL_REFERENCED');
  }

  /** A 409 naming who still refers to the row, also as the `referrer` member. */
  problem(): ProblemShape {
    return {
      status: this.httpStatus,
      detail: problemText('KIT_ERR_AUTOCRUD_STILL_REFERENCED', 'referred', { entity: this.entity, key: JSON.stringify(this.key), referrer: this.referrer, referrerKey: JSON.stringify(this.referrerKey), field: this.field }),
      members: { referrer: { entity: this.referrer, field: this.field, key: this.referrerKey } },
    };
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
export class InvalidValueError extends KitError implements Answerable {
  constructor(options?: { cause?: unknown }) {
    super('KIT_ERR_DATABASE_INVALID_VALUE', autoCrudErrors.message('KIT_ERR_DATABASE_INVALID_VALUE'), options);
    this.name = 'InvalidValueError';
  }

  /** 400, as the catalogue declares for its code. */
  get httpStatus(): number {
    return statusOf('KIT_ERR_DATABASE_INVALID_VALUE');
  }

  /** A 400 saying that a value cannot be stored, never which constraint (its name is the database's). */
  problem(subject: ProblemSubject): ProblemShape {
    return { status: this.httpStatus, detail: problemText('KIT_ERR_DATABASE_INVALID_VALUE', 'invalid', { entity: subject.name }) };
  }

  /** The 400 naming the row that holds the value. */
  rowProblem(row: BatchRow): ProblemShape {
    return rowShape(this.httpStatus, row, problemText('KIT_ERR_DATABASE_INVALID_VALUE', 'row'));
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
export class UnrepresentableValueError extends KitError implements Answerable {
  constructor(
    readonly entity: string,
    readonly field: string | undefined,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super('KIT_ERR_AUTOCRUD_UNREPRESENTABLE', `${field === undefined ? `A field of ${entity}` : `${entity}.${field}`} ${detail}; Kit answers no value it cannot answer exactly.`, options);
    this.name = 'UnrepresentableValueError';
  }

  /** 500, as the catalogue declares for its code. */
  get httpStatus(): number {
    return statusOf('KIT_ERR_AUTOCRUD_UNREPRESENTABLE');
  }

  /** The data, not the request, is at fault: a 500 whose log line (not the answer) names the field and the row. */
  problem(subject: ProblemSubject): ProblemShape {
    return {
      status: this.httpStatus,
      detail: problemText('KIT_ERR_AUTOCRUD_UNREPRESENTABLE', 'inexact', { entity: subject.name }),
      log: { level: 'error', message: problemText('KIT_ERR_AUTOCRUD_UNREPRESENTABLE', 'log') },
    };
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
export class VersionConflictError extends KitError implements Answerable {
  constructor(readonly currentVersion: number) {
    super('KIT_ERR_AUTOCRUD_VERSION_CONFLICT', autoCrudErrors.message('KIT_ERR_AUTOCRUD_VERSION_CONFLICT', { currentVersion }));
    this.name = 'VersionConflictError';
  }

  /** 412, as the catalogue declares for its code. */
  get httpStatus(): number {
    return statusOf('KIT_ERR_AUTOCRUD_VERSION_CONFLICT');
  }

  /** A 412 with the row's current ETag (its version, a strong entity-tag as the routes write it), to retry with. */
  problem(subject: ProblemSubject): ProblemShape {
    return {
      status: this.httpStatus,
      detail: problemText('KIT_ERR_AUTOCRUD_VERSION_CONFLICT', 'stale', { entity: subject.name, currentVersion: this.currentVersion }),
      headers: { etag: `"${String(this.currentVersion)}"` },
    };
  }

  /** The 412 naming the stale row, with its version now as the `currentVersion` member. */
  rowProblem(row: BatchRow): ProblemShape {
    const detail = problemText('KIT_ERR_AUTOCRUD_VERSION_CONFLICT', 'row', { currentVersion: this.currentVersion });
    return {
      status: this.httpStatus,
      detail: problemText('KIT_ERR_AUTOCRUD_VERSION_CONFLICT', 'rowAdvice', { row: row.which, detail }),
      errors: [{ name: row.path, detail }],
      members: { currentVersion: this.currentVersion },
    };
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
export class SchemaMismatchError extends KitError implements Answerable {
  constructor(message: string) {
    super('KIT_ERR_AUTOCRUD_SCHEMA', message);
    this.name = 'SchemaMismatchError';
  }

  /** 503, as the catalogue declares for its code. */
  get httpStatus(): number {
    return statusOf('KIT_ERR_AUTOCRUD_SCHEMA');
  }

  /** A logged 503 with `Retry-After`: the tables may be migrated while the service runs. */
  problem(): ProblemShape {
    return {
      status: this.httpStatus,
      detail: problemText('KIT_ERR_AUTOCRUD_SCHEMA', 'notReady'),
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
      log: { level: 'error', message: problemText('KIT_ERR_AUTOCRUD_SCHEMA', 'log') },
    };
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
