// The transaction every atomic write of many rows runs in: a bulk create (bulk-create.ts), a
// nested create (nested-create.ts), a bulk merge patch (bulk-patch.ts) and the upsert (upsert.ts).
// Every row is written or none, and the row that failed is named (BatchRowError). Rows are
// checked before the transaction starts; a signal that aborts between two statements rolls it
// back.
import type { Db } from '../sql/engine.js';
import { BatchRowError, ConstraintViolationError, InvalidValueError } from '../errors.js';
import { firstMissingReference, refusedReference } from './references.js';
import type { Scope } from '../sql/query.js';
import type { Recorder, Row, Table } from '../seam/table.js';
import type { ChangeContext } from '../seam/changes.js';
import type { Executor } from '../sql/statements.js';

/**
 * Runs one row's statement so that a database refusal of it becomes `BatchRowError(index)`.
 *
 * @example
 * ```ts
 * const [stored] = await row(index, () => trx.executeQuery<Row>(insert.bind(values)));
 * ```
 */
export type RowRunner = <Q>(index: number, statement: () => Promise<{ rows: Q[] }>) => Promise<Q[]>;

/**
 * The row a batch sent at `index` (of `relation` for a nested create's children), and its table.
 *
 * @example
 * ```ts
 * const rowOf: RowOf = (index) => ({ table, input: inputs[index] as Row });
 * ```
 */
export type RowOf = (
  index: number,
  relation: string | undefined,
) => { readonly table: Table; readonly input: Readonly<Record<string, unknown>> } | undefined;

/**
 * Before a batch is written, in its transaction: `BatchRowError` for the first row that names a
 * soft-deleted parent, which the database's foreign key cannot see (references.ts). One statement
 * per reference for the whole batch.
 */
export async function refuseGoneParents(
  table: Table,
  db: Db,
  trx: Db,
  inputs: readonly Readonly<Record<string, unknown>>[],
  relation?: string,
  scope?: Scope,
): Promise<void> {
  if (table.entity.references.length === 0 || inputs.length === 0) return;
  const missing = await firstMissingReference(
    db,
    table.dialect,
    table.entity,
    inputs,
    true,
    async (query) => (await trx.executeQuery<Row>(query)).rows,
    scope?.references,
  );
  if (missing) throw new BatchRowError(missing.index, missing.error, relation);
}

/**
 * After the database refused a row for a foreign key (the transaction rolled back): the field and
 * key at fault as the error's cause, so the answer names `[3].customerId`, not only the row.
 */
async function explainRefusal(
  err: BatchRowError,
  rowOf: RowOf | undefined,
  signal: AbortSignal | undefined,
): Promise<BatchRowError> {
  const cause = err.cause;
  if (!(cause instanceof ConstraintViolationError) || cause.kind !== 'foreignKey') return err;
  const sent = rowOf?.(err.index, err.relation);
  const missing = sent && (await refusedReference(sent.table, sent.input, signal));
  return missing ? new BatchRowError(err.index, missing, err.relation) : err;
}

/**
 * Runs `work` in one transaction on `table`'s database; `row(index, statement)` runs one row's
 * statement so that a database refusal of it becomes `BatchRowError(index)`, naming the field when
 * the refusal is a foreign key (`rowOf` gives the row). Between rows, an aborted `signal` rolls
 * the transaction back.
 */
export async function atomically<T>(
  table: Table,
  signal: AbortSignal | undefined,
  work: (db: Db, trx: Db, row: RowRunner, record: Recorder, execute: Executor) => Promise<T>,
  relation?: () => string | undefined,
  rowOf?: RowOf,
  context?: ChangeContext,
): Promise<T> {
  let failed: number | undefined;
  const row: RowRunner = async (index, statement) => {
    if (signal?.aborted) throw signal.reason;
    try {
      return (await statement()).rows;
    } catch (err) {
      failed = index;
      throw err;
    }
  };
  try {
    return await table.transaction(signal, context, (db, trx, record, execute) =>
      work(db, trx, row, record, execute),
    );
  } catch (err) {
    if (
      failed !== undefined &&
      (err instanceof ConstraintViolationError || err instanceof InvalidValueError)
    )
      throw await explainRefusal(new BatchRowError(failed, err, relation?.()), rowOf, signal);
    throw err;
  }
}
