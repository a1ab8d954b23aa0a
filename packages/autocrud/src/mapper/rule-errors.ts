// The mapper's errors for AutoCrud's own rules broken by a call or found in the data: a reference
// to a missing row, a row still referred to, a stale version, tables that do not fit the entities,
// a stored value Kit cannot answer exactly, and the failed row of an atomic batch. Like the
// database's conditions (errors.ts), each carries its status and problem texts from the catalogue.
import { autoCrudErrors, RETRY_AFTER_SECONDS, routeProblems } from '../errors.js';
import {
  AnswerableError,
  fillProblem,
  type BatchRow,
  type ProblemShape,
  type ProblemSubject,
} from '../answers.js';

/**
 * A write names a row that does not exist (or is soft-deleted) in a field that references
 * another entity: nothing was written. The routes answer 422 naming the field and the key.
 *
 * @example
 * ```ts
 * catch (err) { if (err instanceof MissingReferenceError) console.log(err.field, err.key, err.target); }
 * ```
 */
export class MissingReferenceError extends AnswerableError<'KIT_ERR_AUTOCRUD_MISSING_REFERENCE'> {
  constructor(
    readonly entity: string,
    readonly field: string,
    readonly key: unknown,
    readonly target: string,
  ) {
    super(
      'KIT_ERR_AUTOCRUD_MISSING_REFERENCE',
      autoCrudErrors.message('KIT_ERR_AUTOCRUD_MISSING_REFERENCE', {
        entity,
        field,
        key: JSON.stringify(key),
        target,
      }),
    );
    this.name = 'MissingReferenceError';
  }

  /** A 422 naming the body field and the key it names. */
  problem(): ProblemShape {
    return this.#naming(this.field);
  }

  /** The 422 naming the row's field (`[3].customerId`, `lines[3].productId`). */
  rowProblem(row: BatchRow): ProblemShape {
    return this.#naming(`${row.path}.${this.field}`);
  }

  /** The 422 of the missing reference, naming the body field `name` that holds it. */
  #naming(name: string): ProblemShape {
    const detail = this.text('missing', { target: this.target, key: JSON.stringify(this.key) });
    return {
      status: this.httpStatus,
      detail: fillProblem(routeProblems.fieldFault, { field: name, detail }),
      errors: [{ name, detail }],
    };
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
export class StillReferencedError extends AnswerableError<'KIT_ERR_AUTOCRUD_STILL_REFERENCED'> {
  constructor(
    readonly entity: string,
    readonly key: unknown,
    readonly referrer: string,
    readonly field: string,
    readonly referrerKey: unknown,
  ) {
    super(
      'KIT_ERR_AUTOCRUD_STILL_REFERENCED',
      autoCrudErrors.message('KIT_ERR_AUTOCRUD_STILL_REFERENCED', {
        entity,
        key: JSON.stringify(key),
        referrer,
        field,
        referrerKey: JSON.stringify(referrerKey),
      }),
    );
    this.name = 'StillReferencedError';
  }

  /** A 409 naming who still refers to the row, also as the `referrer` member. */
  problem(): ProblemShape {
    return this.answer(
      'referred',
      {
        entity: this.entity,
        key: JSON.stringify(this.key),
        referrer: this.referrer,
        referrerKey: JSON.stringify(this.referrerKey),
        field: this.field,
      },
      {
        members: { referrer: { entity: this.referrer, field: this.field, key: this.referrerKey } },
      },
    );
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
export class UnrepresentableValueError extends AnswerableError<'KIT_ERR_AUTOCRUD_UNREPRESENTABLE'> {
  constructor(
    readonly entity: string,
    readonly field: string | undefined,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(
      'KIT_ERR_AUTOCRUD_UNREPRESENTABLE',
      `${field === undefined ? `A field of ${entity}` : `${entity}.${field}`} ${detail}; Kit answers no value it cannot answer exactly.`,
      options,
    );
    this.name = 'UnrepresentableValueError';
  }

  /** The data, not the request, is at fault: a 500 whose log line (not the answer) names the field and the row. */
  problem(subject: ProblemSubject): ProblemShape {
    return this.answer(
      'inexact',
      { entity: subject.name },
      { log: { level: 'error', message: this.text('log') } },
    );
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
export class VersionConflictError extends AnswerableError<'KIT_ERR_AUTOCRUD_VERSION_CONFLICT'> {
  constructor(readonly currentVersion: number) {
    super(
      'KIT_ERR_AUTOCRUD_VERSION_CONFLICT',
      autoCrudErrors.message('KIT_ERR_AUTOCRUD_VERSION_CONFLICT', { currentVersion }),
    );
    this.name = 'VersionConflictError';
  }

  /** A 412 with the row's current ETag (its version, a strong entity-tag as the routes write it), to retry with. */
  problem(subject: ProblemSubject): ProblemShape {
    return this.answer(
      'stale',
      { entity: subject.name, currentVersion: this.currentVersion },
      { headers: { etag: `"${String(this.currentVersion)}"` } },
    );
  }

  /** The 412 naming the stale row, with its version now as the `currentVersion` member. */
  rowProblem(row: BatchRow): ProblemShape {
    const detail = this.text('row', { currentVersion: this.currentVersion });
    return this.answer(
      'rowAdvice',
      { row: row.which, detail },
      { errors: [{ name: row.path, detail }], members: { currentVersion: this.currentVersion } },
    );
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
export class SchemaMismatchError extends AnswerableError<'KIT_ERR_AUTOCRUD_SCHEMA'> {
  constructor(message: string) {
    super('KIT_ERR_AUTOCRUD_SCHEMA', message);
    this.name = 'SchemaMismatchError';
  }

  /** A logged 503 with `Retry-After`: the tables may be migrated while the service runs. */
  problem(): ProblemShape {
    return this.answer('notReady', undefined, {
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
      log: { level: 'error', message: this.text('log') },
    });
  }
}

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
    super(
      cause === undefined
        ? `${row} does not exist; nothing was written.`
        : `${row} failed; nothing was written: ${(cause as Error).message}`,
      { cause },
    );
    this.name = 'BatchRowError';
  }

  /** True when the row to change does not exist (or is soft-deleted). */
  get missing(): boolean {
    return this.cause === undefined;
  }
}
