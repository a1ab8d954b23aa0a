// Atomic writes of many rows: a bulk create, a nested create (a row and its one-to-many children)
// and a bulk merge patch; the upsert (upsert.ts) runs on `atomically` too. Each runs in one
// transaction: every row is written or none, and the row that failed is named (BatchRowError).
// Rows are checked before the transaction starts; a signal that aborts between two statements
// rolls it back.
import { KitError } from '@kit/core';
import { sql } from 'kysely';
import type { EntityField } from '../../entity.js';
import { keyValue, patchValues } from '../sql/arguments.js';
import type { Db } from '../sql/engine.js';
import { chunkRows, insertRows } from './bulk-insert.js';
import {
  BatchRowError,
  ConstraintViolationError,
  InvalidValueError,
  noRowAnswered,
  VersionConflictError,
} from '../errors.js';
import { firstMissingReference, refusedReference } from './references.js';
import type { Eb, Scope } from '../sql/query.js';
import { checkReadOnly } from '../sql/scope.js';
import type { PreparedInsert, Recorder, Row, Table, WriteScope } from '../seam/table.js';
import type { ChangeContext, ChangeRecord } from '../seam/changes.js';
import type { Executor } from '../sql/statements.js';

/** Runs one row's statement so that a database refusal of it becomes `BatchRowError(index)`. */
type RowRunner = <Q>(index: number, statement: () => Promise<{ rows: Q[] }>) => Promise<Q[]>;

/** The row a batch sent at `index` (of `relation` for a nested create's children), and its table. */
type RowOf = (
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

/** Each input's insert, or `BatchRowError` naming the first that cannot be written (nothing ran). */
function prepareInserts(
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

/** A refusal by the database of something a row holds: after a multi-row statement, which row is not known. */
function refused(err: unknown): boolean {
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

/** The changes of rows a write created (none when the table records none: no work). */
function createdChanges(table: Table, rows: readonly Row[]): ChangeRecord[] {
  return table.hooks.recording ? rows.map((r) => table.change('create', undefined, r)) : [];
}

/** The rows of one one-to-many relation of a nested create. */
export interface ChildRows {
  /** The child's table. */
  readonly table: Table;
  /** The child's field that references the parent (set to the new parent's key). */
  readonly field: string;
  readonly rows: readonly Readonly<Record<string, unknown>>[];
  /** The caller's scope on the child entity: each child row is created inside it. */
  readonly scope?: Scope;
}

/**
 * Creates a row and the rows of its one-to-many relations in one transaction; the stored row with
 * each relation's stored rows under the relation's name. A child's failure is `BatchRowError` with
 * `relation` and `index`; the parent's own is thrown as `create` throws it.
 */
export async function createTree(
  table: Table,
  input: Readonly<Record<string, unknown>>,
  children: Readonly<Record<string, ChildRows>>,
  signal: AbortSignal | undefined,
  scope?: Scope,
  context?: ChangeContext,
): Promise<Row> {
  const parent = table.insertValues(input, table.writeScope(scope, true));
  const relations = Object.entries(children).map(
    ([name, { table: child, field, rows, scope: childScope }]) => {
      const column = (child.entity.field(field) as EntityField).column;
      for (let index = 0; index < rows.length; index++) {
        if (Object.prototype.hasOwnProperty.call(rows[index], field)) {
          throw new BatchRowError(
            index,
            new KitError(
              'KIT_ERR_INVALID_ARGUMENT',
              `${child.entity.name}.${field} is set by the nested create (the new ${table.entity.name}'s key); leave it out.`,
            ),
            name,
          );
        }
      }
      // The key is the new parent's, bound when it is known.
      const prepared = prepareInserts(child, rows, name, child.writeScope(childScope, true)).map(
        ({ columns, values }) => ({ columns: [column, ...columns], values }),
      );
      return { name, child, column, prepared };
    },
  );
  const insertParent = async (
    db: Db,
    trx: Db,
    record: Recorder,
  ): Promise<{ tree: Row; key: unknown }> => {
    if (table.entity.references.length > 0) {
      const gone = await firstMissingReference(
        db,
        table.dialect,
        table.entity,
        [input],
        true,
        async (query) => (await trx.executeQuery<Row>(query)).rows,
        scope?.references,
      );
      if (gone) throw gone.error;
    }
    const insert = table.insertStatement(db, parent.columns);
    // The parent's own refusal is not a row's: thrown as create throws it.
    const [stored] = (await trx.executeQuery<Row>(insert.bind(parent.values))).rows;
    if (!stored) throw noRowAnswered(`INSERT INTO ${table.name} ... RETURNING`);
    const tree = table.decode(stored);
    // Recorded before the relations are set on it: the change is the parent's own row.
    await record(table, createdChanges(table, [{ ...tree }]));
    return { tree, key: stored[table.pk.name] };
  };
  if (
    relations.some(({ child, prepared }) => prepared.some((p) => chunkRows(child, p.columns) > 1))
  ) {
    try {
      return await table.transaction(signal, context, async (db, trx, record) => {
        const { tree, key } = await insertParent(db, trx, record);
        for (const { name, child, column, prepared } of relations) {
          await refuseGoneParents(
            child,
            db,
            trx,
            children[name]?.rows ?? [],
            name,
            children[name]?.scope,
          );
          const stored = (
            await insertRows(child, db, trx, prepared, signal, { [column]: key })
          ).map((row) => child.decode(row));
          await record(child, createdChanges(child, stored));
          tree[name] = stored;
        }
        return tree;
      });
    } catch (err) {
      // Refused: written again a statement per row (below), which names the row.
      if (!refused(err)) throw err;
    }
  }
  let relation: string | undefined;
  const childOf: RowOf = (index, name) => {
    const sent = name === undefined ? undefined : children[name];
    const row = sent?.rows[index];
    return sent && row ? { table: sent.table, input: row } : undefined;
  };
  return atomically(
    table,
    signal,
    async (db, trx, row, record) => {
      const { tree, key } = await insertParent(db, trx, record);
      for (const { name, child, column, prepared } of relations) {
        relation = name;
        await refuseGoneParents(
          child,
          db,
          trx,
          children[name]?.rows ?? [],
          name,
          children[name]?.scope,
        );
        const rows: Row[] = [];
        for (const { columns, values } of prepared) {
          const childInsert = child.insertStatement(db, columns);
          const [created] = await row(rows.length, () =>
            trx.executeQuery<Row>(childInsert.bind({ ...values, [column]: key })),
          );
          if (!created) throw noRowAnswered(`INSERT INTO ${child.name} ... RETURNING`);
          rows.push(child.decode(created));
        }
        await record(child, createdChanges(child, rows));
        tree[name] = rows;
      }
      return tree;
    },
    () => relation,
    childOf,
    context,
  ).catch(async (err: unknown) => {
    // The parent's own foreign key refused: named as create names it.
    if (err instanceof ConstraintViolationError && err.kind === 'foreignKey') {
      const missing = await refusedReference(table, input, signal);
      if (missing) throw missing;
    }
    throw err;
  });
}

/** One row of a bulk merge patch. */
interface RowPatch {
  readonly key: unknown;
  readonly patch: Readonly<Record<string, unknown>>;
  readonly ifVersion?: readonly number[] | undefined;
}

/** Applies a JSON Merge Patch to each row in one transaction, each at its own version; the stored rows in order. */
export async function patchMany(
  table: Table,
  changes: readonly RowPatch[],
  signal: AbortSignal | undefined,
  scope?: Scope,
  context?: ChangeContext,
): Promise<Row[]> {
  // Under a scope, a row outside it is missing (never a version conflict), its eq fields keep their value, and it is never recorded.
  const scoped = table.writeScope(scope, false);
  const where = scoped?.where ?? [];
  const prepared = changes.map((change, index) => {
    try {
      const ifVersion = table.checkCondition(change);
      const key = keyValue(table.pk, change.key);
      if (key === undefined) throw new BatchRowError(index, undefined);
      if (scoped) checkReadOnly(table.entity, scoped.scope, change.patch);
      const values = patchValues(table.entity, table.dialect, change.patch);
      return {
        key,
        ifVersion,
        values:
          Object.keys(values).length > 0
            ? table.maintained(scoped ? Object.assign(values, scoped.set) : values)
            : undefined,
      };
    } catch (err) {
      throw err instanceof BatchRowError ? err : new BatchRowError(index, err);
    }
  });
  if (prepared.length === 0) return [];
  const patches = changes.map((change) => change.patch);
  const recording = table.hooks.recording;
  return atomically(
    table,
    signal,
    async (db, trx, row, record, execute) => {
      await refuseGoneParents(table, db, trx, patches, undefined, scope);
      const rows: Row[] = [];
      const changed: ChangeRecord[] = [];
      for (const { key, ifVersion, values } of prepared) {
        const index = rows.length;
        // The row it replaces, read and locked on the transaction inside the scope (a row with nothing to write is not a change).
        const before =
          recording && values && ifVersion?.length !== 0
            ? await table.locked(db, execute, key, where)
            : undefined;
        const target = (eb: Eb) =>
          table.target(eb, key, ifVersion?.length === 0 ? undefined : ifVersion, where);
        const query = values
          ? db.updateTable(table.name).set(values).where(target).returning(table.selection)
          : db.selectFrom(table.name).select(table.selection).where(target);
        const [stored] =
          ifVersion?.length === 0
            ? []
            : await row(index, () => trx.executeQuery<Row>(query.compile()));
        if (!stored) {
          // Nothing matched: the row is missing, or at another version.
          const [current] = await row(index, () =>
            trx.executeQuery<Row>(
              db
                .selectFrom(table.name)
                .select(sql.ref((table.version ?? table.pk).column).as('current'))
                .where((eb) => table.byKey(eb, key, where))
                .compile(),
            ),
          );
          throw new BatchRowError(
            index,
            current === undefined ? undefined : new VersionConflictError(Number(current.current)),
          );
        }
        const after = table.decode(stored);
        if (before) changed.push(table.change('patch', table.decode(before), after));
        rows.push(after);
      }
      await record(table, changed);
      return rows;
    },
    undefined,
    (index) => (patches[index] ? { table, input: patches[index] } : undefined),
    context,
  );
}
