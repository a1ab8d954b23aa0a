// The mapper's errors: here the database's conditions (unreachable, lost, busy, too slow, a
// constraint, a refused value), in rule-errors.ts AutoCrud's own rules (re-exported below). Each
// carries its code and, from the catalogue (../errors.ts), the status and problem texts a generated
// route answers it with (`problem`, and `rowProblem` when it failed one row of a batch), as each of
// Fastify's error constructors carries its status and template: the routes' error handler only
// renders what the error says (../answers.ts). No HTTP library is imported here.
import { autoCrudErrors, BUSY_RETRY_AFTER_SECONDS, RETRY_AFTER_SECONDS } from '../errors.js';
import {
  AnswerableError,
  type BatchRow,
  type ProblemShape,
  type ProblemSubject,
} from '../answers.js';

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
export class DatabaseUnavailableError extends AnswerableError<'KIT_ERR_DATABASE_UNAVAILABLE'> {
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      'KIT_ERR_DATABASE_UNAVAILABLE',
      autoCrudErrors.message('KIT_ERR_DATABASE_UNAVAILABLE', { reason }),
      options,
    );
    this.name = 'DatabaseUnavailableError';
  }

  /** A 503 with `Retry-After`, saying nothing of the reason (it may name the database's host). */
  problem(): ProblemShape {
    return this.answer('unavailable', undefined, {
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    });
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
    return this.answer('lost', undefined, {
      headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) },
    });
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
export class DatabaseBusyError extends AnswerableError<'KIT_ERR_DATABASE_BUSY'> {
  constructor(
    readonly waitedMs: number,
    options?: { cause?: unknown },
  ) {
    super(
      'KIT_ERR_DATABASE_BUSY',
      autoCrudErrors.message('KIT_ERR_DATABASE_BUSY', { waitedMs }),
      options,
    );
    this.name = 'DatabaseBusyError';
  }

  /** A 503 with a short `Retry-After`: a connection frees up in moments. */
  problem(): ProblemShape {
    return this.answer('busy', undefined, {
      headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) },
    });
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
export class StatementTimeoutError extends AnswerableError<'KIT_ERR_DATABASE_TIMEOUT'> {
  constructor(
    readonly limitMs: number,
    options?: { cause?: unknown },
  ) {
    super(
      'KIT_ERR_DATABASE_TIMEOUT',
      autoCrudErrors.message('KIT_ERR_DATABASE_TIMEOUT', { limitMs }),
      options,
    );
    this.name = 'StatementTimeoutError';
  }

  /** A 504 saying nothing of it was written. */
  problem(): ProblemShape {
    return this.answer('timeout');
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
export class ConstraintViolationError extends AnswerableError<'KIT_ERR_DATABASE_CONFLICT'> {
  /** For a unique violation, the columns of the key whose values are taken, where the database names them. */
  readonly columns: readonly string[] | undefined;

  constructor(
    readonly kind: 'unique' | 'foreignKey',
    options?: { cause?: unknown; columns?: readonly string[] | undefined },
  ) {
    super(
      'KIT_ERR_DATABASE_CONFLICT',
      kind === 'unique'
        ? 'The write conflicts with an existing row (a unique constraint).'
        : 'The write conflicts with related rows (a foreign-key constraint).',
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'ConstraintViolationError';
    this.columns = options?.columns;
  }

  /** A 409 naming the fields whose values are taken when the database named the key, else the kind of constraint. */
  problem(subject: ProblemSubject): ProblemShape {
    const fields = takenFields(subject, this);
    if (fields) {
      return this.answer(
        'taken',
        { entity: subject.name, fields: fields.join(' and '), rule: conflictText(fields) },
        { errors: fields.map((name) => ({ name, detail: this.text('fieldTaken') })) },
      );
    }
    return this.answer(this.kind === 'unique' ? 'unique' : 'foreignKey', {
      entity: subject.name,
    });
  }

  /** The 409 of the row that broke the constraint. */
  rowProblem(row: BatchRow): ProblemShape {
    const fields = takenFields(row.entity, this);
    const detail = fields
      ? this.text('rowTaken', {
          fields: fields.join(' and '),
          verb: fields.length === 1 ? 'is' : 'are',
          rule: conflictText(fields),
        })
      : this.text(this.kind === 'unique' ? 'rowUnique' : 'rowForeignKey', {
          entity: row.entity.name,
        });
    return this.rowAnswer(row, detail);
  }
}

/** The fields of the unique key a conflict names (by their columns), when the database named it. */
export function takenFields(
  subject: ProblemSubject,
  error: ConstraintViolationError,
): string[] | undefined {
  if (error.kind !== 'unique' || !error.columns) return undefined;
  const fields = error.columns.map(
    (column) =>
      subject.fields.find(
        (f) => f.column === column || f.column.toLowerCase() === column.toLowerCase(),
      )?.name,
  );
  return fields.every((f): f is string => f !== undefined) && fields.length > 0
    ? fields
    : undefined;
}

/** How a unique conflict on `fields` is explained. */
export function conflictText(fields: readonly string[]): string {
  return fields.length === 1
    ? `${fields[0] as string} must be unique`
    : `the combination of ${fields.join(', ')} must be unique`;
}

/**
 * The columns of the unique key a driver error says is taken: PostgreSQL's and PGlite's `detail`
 * (`Key (order_id, sku)=(...) already exists.`), SQLite's message (`UNIQUE constraint failed:
 * t.order_id, t.sku`). Only the names are kept, never the values.
 */
export function takenColumns(err: unknown): string[] | undefined {
  const e = err as { detail?: unknown; message?: unknown } | null;
  const pg = typeof e?.detail === 'string' ? /^Key \((.+?)\)=\(/.exec(e.detail) : null;
  if (pg)
    return (pg[1] as string)
      .split(', ')
      .map((c) => c.replace(/^"(.*)"$/, '$1').replaceAll('""', '"'));
  const lite =
    typeof e?.message === 'string' ? /UNIQUE constraint failed: (.+)$/.exec(e.message) : null;
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
export class InvalidValueError extends AnswerableError<'KIT_ERR_DATABASE_INVALID_VALUE'> {
  constructor(options?: { cause?: unknown }) {
    super(
      'KIT_ERR_DATABASE_INVALID_VALUE',
      autoCrudErrors.message('KIT_ERR_DATABASE_INVALID_VALUE'),
      options,
    );
    this.name = 'InvalidValueError';
  }

  /** A 400 saying that a value cannot be stored, never which constraint (its name is the database's). */
  problem(subject: ProblemSubject): ProblemShape {
    return this.answer('invalid', { entity: subject.name });
  }

  /** The 400 naming the row that holds the value. */
  rowProblem(row: BatchRow): ProblemShape {
    return this.rowAnswer(row, this.text('row'));
  }
}

/**
 * A write statement answered no row where it must (`statement` says which, as `INSERT INTO
 * products ... RETURNING`): the database or its driver broke the statement's contract. Not an
 * answer of its own: the routes' handler logs it and answers 500, as any unexpected error.
 *
 * @example
 * ```ts
 * if (!row) throw noRowAnswered(`INSERT INTO ${table.name} ... RETURNING`);
 * ```
 */
export function noRowAnswered(statement: string): Error {
  return autoCrudErrors.error('KIT_ERR_AUTOCRUD_NO_ROW_ANSWERED', { statement });
}

/**
 * How an engine classifies a driver error: `unavailable` (the database cannot be reached: marks it
 * down), `lost` (a connection broke while in use: this call fails, the database is not marked
 * down), `busy` (no connection within acquireTimeoutMs: the database is up), `timeout` (cancelled
 * by statementTimeoutMs), a constraint, an invalid value, or anything else.
 */
export type ErrorClass =
  'unavailable' | 'lost' | 'busy' | 'timeout' | 'unique' | 'foreignKey' | 'invalid' | 'other';

export {
  BatchRowError,
  MissingReferenceError,
  SchemaMismatchError,
  StillReferencedError,
  UnrepresentableValueError,
  VersionConflictError,
} from './rule-errors.js';
