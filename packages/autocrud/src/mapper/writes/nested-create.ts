// A nested create: a row and the rows of its one-to-many relations in one transaction, each
// child's reference set to the new parent's key.
import { KitError } from '@kit/core';
import type { EntityField } from '../../entity.js';
import type { Db } from '../sql/engine.js';
import { chunkRows, insertRows } from './bulk-insert.js';
import { BatchRowError, ConstraintViolationError, noRowAnswered } from '../errors.js';
import { firstMissingReference, refusedReference } from './references.js';
import type { Scope } from '../sql/query.js';
import type { Recorder, Row, Table } from '../seam/table.js';
import type { ChangeContext } from '../seam/changes.js';

import { createdChanges, prepareInserts, refused } from './bulk-create.js';
import { atomically, refuseGoneParents, type RowOf } from './atomically.js';

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
  // A child row naming a parent of its own (another reference) that is gone: refused in both paths.
  const refuseGone = (child: Table, name: string, db: Db, trx: Db): Promise<void> =>
    refuseGoneParents(child, db, trx, children[name]?.rows ?? [], name, children[name]?.scope);
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
          await refuseGone(child, name, db, trx);
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
        await refuseGone(child, name, db, trx);
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
