// A bulk create: many rows of one entity in one transaction, in multi-row statements, written
// again one statement each when the database refuses one so that the refused row is named. What a
// nested create shares with it (each row's insert, the refusals, the created rows' changes) is here.
import { chunkRows, insertRows } from './bulk-insert.js';
import {
  BatchRowError,
  ConstraintViolationError,
  InvalidValueError,
  noRowAnswered,
} from '../errors.js';
import type { Scope } from '../sql/query.js';
import type { PreparedInsert, Row, Table, WriteScope } from '../seam/table.js';
import type { ChangeContext, ChangeRecord } from '../seam/changes.js';
import { atomically, refuseGoneParents } from './atomically.js';

/**
 * Each input's insert, or `BatchRowError` naming the first that cannot be written (nothing ran).
 *
 * @example
 * ```ts
 * const prepared = prepareInserts(table, inputs, undefined, table.writeScope(scope, true));
 * ```
 */
export function prepareInserts(
  table: Table,
  inputs: readonly Readonly<Record<string, unknown>>[],
  relation?: string,
  scope?: WriteScope,
): PreparedInsert[] {
  return inputs.map((input, index) => {
    try {
      return table.insertValues(input, scope);
    } catch (err) {
      throw new BatchRowError(index, err, relation);
    }
  });
}

/**
 * A refusal by the database of something a row holds: after a multi-row statement, which row is
 * not known.
 *
 * @example
 * ```ts
 * if (!refused(err)) throw err; // else write the rows again one statement each
 * ```
 */
export function refused(err: unknown): boolean {
  return err instanceof ConstraintViolationError || err instanceof InvalidValueError;
}

/**
 * Inserts every row of `inputs` in one transaction; the stored rows in that order. The rows go in
 * multi-row statements (bulk-insert.ts); when the database refuses one, the transaction has
 * rolled back and the rows are written again one statement each in a new transaction, which names
 * the refused row (`BatchRowError`) or, when the refusal has gone meanwhile, commits them all.
 */
export async function createMany(
  table: Table,
  inputs: readonly Readonly<Record<string, unknown>>[],
  signal: AbortSignal | undefined,
  scope?: Scope,
  context?: ChangeContext,
): Promise<Row[]> {
  // Under a scope, every row's scope fields are set from it (see Table.insertValues).
  const prepared = prepareInserts(table, inputs, undefined, table.writeScope(scope, true));
  if (prepared.length === 0) return [];
  if (prepared.some((p) => chunkRows(table, p.columns) > 1)) {
    try {
      return await table.transaction(signal, context, async (db, trx, record) => {
        await refuseGoneParents(table, db, trx, inputs, undefined, scope);
        const rows = (await insertRows(table, db, trx, prepared, signal)).map((stored) =>
          table.decode(stored),
        );
        await record(table, createdChanges(table, rows));
        return rows;
      });
    } catch (err) {
      if (!refused(err)) throw err;
    }
  }
  return atomically(
    table,
    signal,
    async (db, trx, row, record) => {
      await refuseGoneParents(table, db, trx, inputs, undefined, scope);
      const rows: Row[] = [];
      for (const { columns, values } of prepared) {
        const insert = table.insertStatement(db, columns);
        const [stored] = await row(rows.length, () => trx.executeQuery<Row>(insert.bind(values)));
        if (!stored) throw noRowAnswered(`INSERT INTO ${table.name} ... RETURNING`);
        rows.push(table.decode(stored));
      }
      await record(table, createdChanges(table, rows));
      return rows;
    },
    undefined,
    (index) => (inputs[index] ? { table, input: inputs[index] } : undefined),
    context,
  );
}

/**
 * The changes of rows a write created (none when the table records none: no work).
 *
 * @example
 * ```ts
 * await record(table, createdChanges(table, rows));
 * ```
 */
export function createdChanges(table: Table, rows: readonly Row[]): ChangeRecord[] {
  return table.hooks.recording ? rows.map((r) => table.change('create', undefined, r)) : [];
}
