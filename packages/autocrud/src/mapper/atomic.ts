// Atomic writes of many rows: a bulk create, a nested create (a row and its one-to-many children),
// a bulk merge patch and an upsert on a declared unique key. Each runs in one transaction: every
// row is written or none, and the row that failed is named (BatchRowError). Rows are checked
// before the transaction starts; a signal that aborts between two statements rolls it back.
import { KitError } from '@kit/core';
import { sql, type Compilable } from 'kysely';
import type { EntityField } from '../entity.js';
import { keyValue, patchValues } from './arguments.js';
import { encodeValue } from './columns.js';
import type { Db } from './engine.js';
import { chunkRows, insertRows } from './bulk-insert.js';
import { BatchRowError, ConstraintViolationError, InvalidValueError, VersionConflictError } from './errors.js';
import { databaseClock } from './stamps.js';
import { Slot, StatementCache, type Statement } from './statements.js';
import type { Eb } from './query.js';
import { splitTable } from './tables.js';
import type { PreparedInsert, Row, Table } from './table.js';

/** Runs one row's statement so that a database refusal of it becomes `BatchRowError(index)`. */
type RowRunner = <Q>(index: number, statement: () => Promise<{ rows: Q[] }>) => Promise<Q[]>;

/**
 * Runs `work` in one transaction on `table`'s database; `row(index, statement)` runs one row's
 * statement so that a database refusal of it becomes `BatchRowError(index)`. Between rows, an
 * aborted `signal` rolls the transaction back.
 */
async function atomically<T>(table: Table, signal: AbortSignal | undefined, work: (db: Db, trx: Db, row: RowRunner) => Promise<T>, relation?: () => string | undefined): Promise<T> {
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
    return await table.run((db) => db.transaction().execute((trx) => work(db, trx, row)), signal);
  } catch (err) {
    if (failed !== undefined && (err instanceof ConstraintViolationError || err instanceof InvalidValueError)) throw new BatchRowError(failed, err, relation?.());
    throw err;
  }
}

/** Each input's insert, or `BatchRowError` naming the first that cannot be written (nothing ran). */
function prepareInserts(table: Table, inputs: readonly Readonly<Record<string, unknown>>[], relation?: string): PreparedInsert[] {
  return inputs.map((input, index) => {
    try {
      return table.insertValues(input);
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
export async function createMany(table: Table, inputs: readonly Readonly<Record<string, unknown>>[], signal: AbortSignal | undefined): Promise<Row[]> {
  const prepared = prepareInserts(table, inputs);
  if (prepared.length === 0) return [];
  if (prepared.some((p) => chunkRows(table, p.columns) > 1)) {
    try {
      return await table.run((db) => db.transaction().execute(async (trx) => (await insertRows(table, db, trx, prepared, signal)).map((stored) => table.decode(stored))), signal);
    } catch (err) {
      if (!refused(err)) throw err;
    }
  }
  return atomically(table, signal, async (db, trx, row) => {
    const rows: Row[] = [];
    for (const { columns, values } of prepared) {
      const insert = table.insertStatement(db, columns);
      const [stored] = await row(rows.length, () => trx.executeQuery<Row>(insert.bind(values)));
      if (!stored) throw new Error(`INSERT INTO ${table.name} ... RETURNING answered no row`);
      rows.push(table.decode(stored));
    }
    return rows;
  });
}

/** The rows of one one-to-many relation of a nested create. */
export interface ChildRows {
  /** The child's table. */
  readonly table: Table;
  /** The child's field that references the parent (set to the new parent's key). */
  readonly field: string;
  readonly rows: readonly Readonly<Record<string, unknown>>[];
}

/**
 * Creates a row and the rows of its one-to-many relations in one transaction; the stored row with
 * each relation's stored rows under the relation's name. A child's failure is `BatchRowError` with
 * `relation` and `index`; the parent's own is thrown as `create` throws it.
 */
export async function createTree(table: Table, input: Readonly<Record<string, unknown>>, children: Readonly<Record<string, ChildRows>>, signal: AbortSignal | undefined): Promise<Row> {
  const parent = table.insertValues(input);
  const relations = Object.entries(children).map(([name, { table: child, field, rows }]) => {
    const column = (child.entity.field(field) as EntityField).column;
    for (let index = 0; index < rows.length; index++) {
      if (Object.prototype.hasOwnProperty.call(rows[index], field)) {
        throw new BatchRowError(index, new KitError('KIT_ERR_INVALID_ARGUMENT', `${child.entity.name}.${field} is set by the nested create (the new ${table.entity.name}'s key); leave it out.`), name);
      }
    }
    // The key is the new parent's, bound when it is known.
    const prepared = prepareInserts(child, rows, name).map(({ columns, values }) => ({ columns: [column, ...columns], values }));
    return { name, child, column, prepared };
  });
  const insertParent = async (db: Db, trx: Db): Promise<{ tree: Row; key: unknown }> => {
    const insert = table.insertStatement(db, parent.columns);
    // The parent's own refusal is not a row's: thrown as create throws it.
    const [stored] = (await trx.executeQuery<Row>(insert.bind(parent.values))).rows;
    if (!stored) throw new Error(`INSERT INTO ${table.name} ... RETURNING answered no row`);
    return { tree: table.decode(stored), key: stored[table.pk.name] };
  };
  if (relations.some(({ child, prepared }) => prepared.some((p) => chunkRows(child, p.columns) > 1))) {
    try {
      return await table.run(
        (db) =>
          db.transaction().execute(async (trx) => {
            const { tree, key } = await insertParent(db, trx);
            for (const { name, child, column, prepared } of relations) {
              const stored = await insertRows(child, db, trx, prepared, signal, { [column]: key });
              tree[name] = stored.map((row) => child.decode(row));
            }
            return tree;
          }),
        signal,
      );
    } catch (err) {
      // Refused: written again a statement per row (below), which names the row.
      if (!refused(err)) throw err;
    }
  }
  let relation: string | undefined;
  return atomically(
    table,
    signal,
    async (db, trx, row) => {
      const { tree, key } = await insertParent(db, trx);
      for (const { name, child, column, prepared } of relations) {
        relation = name;
        const rows: Row[] = [];
        for (const { columns, values } of prepared) {
          const childInsert = child.insertStatement(db, columns);
          const [created] = await row(rows.length, () => trx.executeQuery<Row>(childInsert.bind({ ...values, [column]: key })));
          if (!created) throw new Error(`INSERT INTO ${child.name} ... RETURNING answered no row`);
          rows.push(child.decode(created));
        }
        tree[name] = rows;
      }
      return tree;
    },
    () => relation,
  );
}

/** One row of a bulk merge patch. */
export interface RowPatch {
  readonly key: unknown;
  readonly patch: Readonly<Record<string, unknown>>;
  readonly ifVersion?: readonly number[] | undefined;
}

/** Applies a JSON Merge Patch to each row in one transaction, each at its own version; the stored rows in order. */
export async function patchMany(table: Table, changes: readonly RowPatch[], signal: AbortSignal | undefined): Promise<Row[]> {
  const prepared = changes.map((change, index) => {
    try {
      const ifVersion = table.checkCondition(change);
      const key = keyValue(table.pk, change.key);
      if (key === undefined) throw new BatchRowError(index, undefined);
      const values = patchValues(table.entity, table.flavour, change.patch);
      return { key, ifVersion, values: Object.keys(values).length > 0 ? table.maintained(values) : undefined };
    } catch (err) {
      throw err instanceof BatchRowError ? err : new BatchRowError(index, err);
    }
  });
  if (prepared.length === 0) return [];
  return atomically(table, signal, async (db, trx, row) => {
    const rows: Row[] = [];
    for (const { key, ifVersion, values } of prepared) {
      const index = rows.length;
      const target = (eb: Eb) => table.target(eb, key, ifVersion?.length === 0 ? undefined : ifVersion);
      const query = values ? db.updateTable(table.name).set(values).where(target).returning(table.selection) : db.selectFrom(table.name).select(table.selection).where(target);
      const [stored] = ifVersion?.length === 0 ? [] : await row(index, () => trx.executeQuery<Row>(query.compile()));
      if (!stored) {
        // Nothing matched: the row is missing, or at another version.
        const [current] = await row(index, () => trx.executeQuery<Row>(db.selectFrom(table.name).select(sql.ref((table.version ?? table.pk).column).as('current')).where((eb) => table.byKey(eb, key)).compile()));
        throw new BatchRowError(index, current === undefined ? undefined : new VersionConflictError(Number(current.current)));
      }
      rows.push(table.decode(stored));
    }
    return rows;
  });
}

/**
 * What an upsert does to a row whose unique key is taken: `merge` writes the fields the row
 * brings over the existing row's (PostgREST's `resolution=merge-duplicates`), `ignore` leaves the
 * existing row as it is (`resolution=ignore-duplicates`).
 *
 * @example
 * ```ts
 * await customers.upsertMany(rows, { resolution: 'ignore' satisfies UpsertResolution });
 * ```
 */
export type UpsertResolution = 'merge' | 'ignore';

/**
 * What an upsert did to one row: created (a free key, or a soft-deleted holder revived), updated
 * (merged into the row holding the key), or unchanged (`ignore` and a live holder).
 *
 * @example
 * ```ts
 * const created = (await customers.upsertMany(rows)).filter((r) => r.outcome === ('created' satisfies UpsertOutcome));
 * ```
 */
export type UpsertOutcome = 'created' | 'updated' | 'unchanged';

/**
 * One row of an upsert as stored, and what happened to it.
 *
 * @example
 * ```ts
 * const [first]: UpsertedRow[] = await customers.upsertMany([{ name: 'Ada', email: 'ada@example.com' }]);
 * ```
 */
export interface UpsertedRow {
  readonly row: Row;
  readonly outcome: UpsertOutcome;
}

// The pre-read and the INSERT ... ON CONFLICT of each table, by shape.
const upsertStatements = new WeakMap<Table, StatementCache>();

function cacheOf(table: Table): StatementCache {
  let cache = upsertStatements.get(table);
  if (!cache) upsertStatements.set(table, (cache = new StatementCache()));
  return cache;
}

/**
 * The INSERT ... ON CONFLICT (key) of one set of columns. The existing row is named by the table's
 * name (an unqualified column would be ambiguous with the proposed row, `excluded`). A soft-deleted
 * row holding the key is revived as a create would write it: every writable field the row leaves
 * out takes the proposed row's value (its default), `createdAt` the clock, the version goes on.
 */
function upsertStatement(table: Table, db: Db, key: readonly EntityField[], columns: readonly string[], resolution: UpsertResolution): Statement {
  return cacheOf(table).get(`${resolution}\u0001${columns.join('\u0000')}`, (): Compilable => {
    const { entity, flavour } = table;
    const own = splitTable(table.name).name;
    const existing = (column: string) => sql.ref(`${own}.${column}`);
    const proposed = (column: string) => sql.ref(`excluded.${column}`);
    const soft = entity.softDelete === undefined ? undefined : (entity.field(entity.softDelete) as EntityField);
    const deleted = soft ? sql`${existing(soft.column)} = ${encodeValue(flavour, soft, true)}` : undefined;
    const keyColumns = new Set(key.map((f) => f.column));
    const set: Record<string, unknown> = {};
    for (const name of entity.writable) {
      const column = (entity.field(name) as EntityField).column;
      if (keyColumns.has(column)) continue;
      const sent = columns.includes(column);
      if (resolution === 'merge' && sent) set[column] = proposed(column);
      else if (deleted) set[column] = sql`case when ${deleted} then ${proposed(column)} else ${existing(column)} end`;
    }
    if (soft) set[soft.column] = encodeValue(flavour, soft, false);
    // Nothing else to write (the row brings only its key): a no-op update, so the row is answered.
    if (Object.keys(set).length === 0 && key[0]) set[key[0].column] = existing(key[0].column);
    if (table.version) set[table.version.column] = sql`${existing(table.version.column)} + 1`;
    const clock = databaseClock(flavour);
    if (entity.updatedAt !== undefined) set[(entity.field(entity.updatedAt) as EntityField).column] = clock;
    if (entity.createdAt !== undefined && deleted) {
      const column = (entity.field(entity.createdAt) as EntityField).column;
      set[column] = sql`case when ${deleted} then ${clock} else ${existing(column)} end`;
    }
    const stamps = Object.fromEntries(columns.map((c) => [c, new Slot(c)]));
    for (const stamp of [entity.createdAt, entity.updatedAt]) if (stamp !== undefined) stamps[(entity.field(stamp) as EntityField).column] = clock as unknown as Slot;
    const insert = db.insertInto(table.name).values(stamps);
    const selection = flavour === 'postgres' ? [...table.selection, sql<boolean>`xmax = 0`.as('kit_inserted')] : table.selection;
    return insert
      .onConflict((oc) => {
        const target = oc.columns(key.map((f) => f.column) as never);
        // ignore: only a soft-deleted row is written (revived); a live one stays as it is.
        return resolution === 'ignore' && !deleted ? target.doNothing() : resolution === 'ignore' ? target.doUpdateSet(set as never).where(deleted as never) : target.doUpdateSet(set as never);
      })
      .returning(selection as never);
  });
}

/** The row holding `key`'s values, deleted or not: its primary key and whether it is soft-deleted. Locked on PostgreSQL. */
function holderStatement(table: Table, db: Db, key: readonly EntityField[]): Statement {
  return cacheOf(table).get('holder', (): Compilable => {
    const soft = table.entity.softDelete === undefined ? undefined : (table.entity.field(table.entity.softDelete) as EntityField);
    const query = db
      .selectFrom(table.name)
      .select([sql.ref(table.pk.column).as('key'), ...(soft ? [sql.ref(soft.column).as('deleted')] : [])] as never)
      .where((eb) => eb.and(key.map((f) => eb(sql.ref(f.column), '=', new Slot(f.column)))));
    return table.flavour === 'postgres' ? query.forUpdate() : query;
  });
}

/**
 * Inserts each row, or, where a row with the same values of the unique `key` exists, merges it
 * (or leaves it: `ignore`), in one transaction and in order; each stored row and what happened to
 * it. Each row must carry every field of the key.
 */
export async function upsertMany(table: Table, key: readonly string[], inputs: readonly Readonly<Record<string, unknown>>[], resolution: UpsertResolution, signal: AbortSignal | undefined): Promise<UpsertedRow[]> {
  const keyFields = key.map((name) => table.entity.field(name) as EntityField);
  const prepared = inputs.map((input, index) => {
    const missing = key.find((name) => input[name] === undefined || input[name] === null);
    if (missing !== undefined) throw new BatchRowError(index, new KitError('KIT_ERR_INVALID_ARGUMENT', `${missing} is required: it is part of the unique key (${key.join(', ')}) the upsert matches rows on.`));
    try {
      return table.insertValues(input);
    } catch (err) {
      throw new BatchRowError(index, err);
    }
  });
  if (prepared.length === 0) return [];
  const soft = table.entity.softDelete === undefined ? undefined : (table.entity.field(table.entity.softDelete) as EntityField);
  return atomically(table, signal, async (db, trx, row) => {
    const out: UpsertedRow[] = [];
    for (const { columns, values } of prepared) {
      const index = out.length;
      const holderQuery = holderStatement(table, db, keyFields);
      const [holder] = await row(index, () => trx.executeQuery<Row>(holderQuery.bind(values)));
      const revived = holder !== undefined && soft !== undefined && (holder.deleted === true || holder.deleted === 1);
      const upsert = upsertStatement(table, db, keyFields, columns, resolution);
      const [stored] = await row(index, () => trx.executeQuery<Row>(upsert.bind(values)));
      if (stored) {
        // PostgreSQL says whether it inserted (a row another transaction inserted meanwhile is an update).
        const inserted = table.flavour === 'postgres' ? stored.kit_inserted === true : holder === undefined;
        out.push({ row: table.decode(stored), outcome: inserted || revived ? 'created' : 'updated' });
        continue;
      }
      // ignore, and a live row holds the key: answered as it is.
      const [current] = await row(index, () => trx.executeQuery<Row>(db.selectFrom(table.name).select(table.selection).where((eb) => eb.and(keyFields.map((f) => eb(sql.ref(f.column), '=', values[f.column])))).compile()));
      if (!current) throw new Error(`INSERT INTO ${table.name} ... ON CONFLICT answered no row and none holds the key`);
      out.push({ row: table.decode(current), outcome: 'unchanged' });
    }
    return out;
  });
}
