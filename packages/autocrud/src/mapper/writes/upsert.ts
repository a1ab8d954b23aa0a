// The upsert on a declared unique key: each row inserted, or merged into (or left as) the row
// holding its key, in one transaction and in order, a statement per row (docs/decisions.md,
// "Upsert: still one statement per row"): the outcome of each row needs its holder's state first.
import { encodeValue } from '../sql/dialect.js';
import { KitError } from '@kit/core';
import { expressionBuilder, sql, type Compilable } from 'kysely';
import type { Entity, EntityField } from '../../entity.js';
import { atomically, refuseGoneParents } from './atomically.js';
import type { Db, DynamicDatabase } from '../sql/engine.js';
import { BatchRowError, ConstraintViolationError } from '../errors.js';
import type { Scope } from '../sql/query.js';
import { scopeConditions, slotScope, type SlottedScope } from '../sql/scope.js';
import { Slot, StatementCache, type Statement } from '../sql/statements.js';
import { splitTable } from '../schema/tables.js';
import type { Row, Table } from '../seam/table.js';
import type { ChangeContext, ChangeRecord } from '../seam/changes.js';

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
function upsertStatement(
  table: Table,
  db: Db,
  key: readonly EntityField[],
  columns: readonly string[],
  resolution: UpsertResolution,
  scope: SlottedScope,
): Statement {
  // By key too: an entity with two unique keys has a statement per key it is upserted on.
  return cacheOf(table).get(
    `${resolution}\u0001${key.map((f) => f.column).join('\u0000')}\u0001${columns.join('\u0000')}\u0001${scope.shape}`,
    (): Compilable => {
      const { entity, dialect } = table;
      const own = splitTable(table.name).name;
      const existing = (column: string) => sql.ref(`${own}.${column}`);
      const proposed = (column: string) => sql.ref(`excluded.${column}`);
      const soft =
        entity.softDelete === undefined
          ? undefined
          : (entity.field(entity.softDelete) as EntityField);
      const deleted = soft
        ? sql`${existing(soft.column)} = ${encodeValue(dialect, soft, true)}`
        : undefined;
      const keyColumns = new Set(key.map((f) => f.column));
      const set: Record<string, unknown> = {};
      for (const name of entity.writable) {
        const column = (entity.field(name) as EntityField).column;
        if (keyColumns.has(column)) continue;
        const sent = columns.includes(column);
        if (resolution === 'merge' && sent) set[column] = proposed(column);
        else if (deleted)
          set[column] =
            sql`case when ${deleted} then ${proposed(column)} else ${existing(column)} end`;
      }
      if (soft) set[soft.column] = encodeValue(dialect, soft, false);
      // Nothing else to write (the row brings only its key): a no-op update, so the row is answered.
      if (Object.keys(set).length === 0 && key[0]) set[key[0].column] = existing(key[0].column);
      if (table.version) set[table.version.column] = sql`${existing(table.version.column)} + 1`;
      const clock = dialect.clock();
      if (entity.updatedAt !== undefined)
        set[(entity.field(entity.updatedAt) as EntityField).column] = clock;
      if (entity.createdAt !== undefined && deleted) {
        const column = (entity.field(entity.createdAt) as EntityField).column;
        set[column] = sql`case when ${deleted} then ${clock} else ${existing(column)} end`;
      }
      const stamps = Object.fromEntries(columns.map((c) => [c, new Slot(c)]));
      for (const stamp of [entity.createdAt, entity.updatedAt])
        if (stamp !== undefined)
          stamps[(entity.field(stamp) as EntityField).column] = clock as unknown as Slot;
      const insert = db.insertInto(table.name).values(stamps);
      // Under a scope, the existing row is written only when it is inside it: a key held by a row
      // outside the caller's scope is never overwritten (nor revived), whatever the conflict target.
      const inScope = scopeConditions(
        expressionBuilder<DynamicDatabase, string>(),
        dialect,
        entity,
        scope.filters,
        own,
      );
      const guard = [...(resolution === 'ignore' && deleted ? [deleted] : []), ...inScope];
      const when = guard.length === 0 ? undefined : sql.join(guard, sql` and `);
      const selection = dialect.upsertInserted
        ? [...table.selection, dialect.upsertInserted.as('kit_inserted')]
        : table.selection;
      return insert
        .onConflict((oc) => {
          const target = oc.columns(key.map((f) => f.column) as never);
          // ignore: only a soft-deleted row is written (revived); a live one stays as it is.
          if (resolution === 'ignore' && !deleted) return target.doNothing();
          return when
            ? target.doUpdateSet(set as never).where(when as never)
            : target.doUpdateSet(set as never);
        })
        .returning(selection as never);
    },
  );
}

/**
 * The row holding `key`'s values, deleted or not: its primary key and whether it is soft-deleted,
 * and with `full` (a table that records its changes) the whole row as well. Locked on PostgreSQL.
 * Under a scope, only a row inside it (one outside is never written nor recorded: see
 * {@link upsertStatement}).
 */
function holderStatement(
  table: Table,
  db: Db,
  key: readonly EntityField[],
  scope: SlottedScope,
  full: boolean,
): Statement {
  return cacheOf(table).get(
    `holder\u0001${full ? 'full' : ''}\u0001${key.map((f) => f.column).join('\u0000')}\u0001${scope.shape}`,
    (): Compilable => {
      const soft =
        table.entity.softDelete === undefined
          ? undefined
          : (table.entity.field(table.entity.softDelete) as EntityField);
      const query = db
        .selectFrom(table.name)
        .select([
          ...(full ? table.selection : []),
          sql.ref(table.pk.column).as('kit_key'),
          ...(soft ? [sql.ref(soft.column).as('kit_deleted')] : []),
        ] as never)
        .where((eb) =>
          eb.and([
            ...key.map((f) => eb(sql.ref(f.column), '=', new Slot(f.column))),
            ...scopeConditions(eb, table.dialect, table.entity, scope.filters),
          ]),
        );
      return table.dialect.lockRows(query);
    },
  );
}

/**
 * Inserts each row, or, where a row with the same values of the unique `key` exists, merges it
 * (or leaves it: `ignore`), in one transaction and in order; each stored row and what happened to
 * it. Each row must carry every field of the key.
 */
export async function upsertMany(
  table: Table,
  key: readonly string[],
  inputs: readonly Readonly<Record<string, unknown>>[],
  resolution: UpsertResolution,
  signal: AbortSignal | undefined,
  scope?: Scope,
  context?: ChangeContext,
): Promise<UpsertedRow[]> {
  const keyFields = key.map((name) => table.entity.field(name) as EntityField);
  // Each row is created inside the scope (its fields set from it); an existing row is merged, or answered, only inside it.
  const written = table.writeScope(scope, true);
  const scoped = slotScope(table.dialect, table.entity, written?.where ?? [], 'scope:');
  const prepared = inputs.map((input, index) => {
    const missing = key.find((name) => input[name] === undefined || input[name] === null);
    if (missing !== undefined)
      throw new BatchRowError(
        index,
        new KitError(
          'KIT_ERR_INVALID_ARGUMENT',
          `${missing} is required: it is part of the unique key (${key.join(', ')}) the upsert matches rows on.`,
        ),
      );
    try {
      return table.insertValues(input, written);
    } catch (err) {
      throw new BatchRowError(index, err);
    }
  });
  if (prepared.length === 0) return [];
  const soft =
    table.entity.softDelete === undefined
      ? undefined
      : (table.entity.field(table.entity.softDelete) as EntityField);
  const recording = table.hooks.recording;
  return atomically(
    table,
    signal,
    async (db, trx, row, record) => {
      await refuseGoneParents(table, db, trx, inputs, undefined, scope);
      const out: UpsertedRow[] = [];
      const changed: ChangeRecord[] = [];
      for (const { columns, values } of prepared) {
        const index = out.length;
        // The holder is read inside the scope: a key held outside it is neither written nor recorded.
        const holderQuery = holderStatement(table, db, keyFields, scoped, recording);
        const [holder] = await row(index, () =>
          trx.executeQuery<Row>(holderQuery.bind({ ...values, ...scoped.values })),
        );
        const revived =
          holder !== undefined &&
          soft !== undefined &&
          (holder.kit_deleted === true || holder.kit_deleted === 1);
        const upsert = upsertStatement(table, db, keyFields, columns, resolution, scoped);
        const [stored] = await row(index, () =>
          trx.executeQuery<Row>(upsert.bind({ ...values, ...scoped.values })),
        );
        if (stored) {
          // PostgreSQL says whether it inserted (a row another transaction inserted meanwhile is an update).
          const inserted = table.dialect.upsertInserted
            ? stored.kit_inserted === true
            : holder === undefined;
          const after = table.decode(stored);
          out.push({ row: after, outcome: inserted || revived ? 'created' : 'updated' });
          // A merge writes the fields the row brings: a patch. A revived row is created again, over the deleted one.
          if (recording)
            changed.push(
              table.change(
                inserted ? 'create' : revived ? 'create' : 'patch',
                holder && !inserted ? table.decode(holder) : undefined,
                after,
              ),
            );
          continue;
        }
        // ignore, and a live row holds the key: answered as it is.
        const inScope = written?.where ?? [];
        const [current] = await row(index, () =>
          trx.executeQuery<Row>(
            db
              .selectFrom(table.name)
              .select(table.selection)
              .where((eb) =>
                eb.and([
                  ...keyFields.map((f) => eb(sql.ref(f.column), '=', values[f.column])),
                  ...scopeConditions(eb, table.dialect, table.entity, inScope),
                ]),
              )
              .compile(),
          ),
        );
        // A row outside the caller's scope holds the key: refused as a create of that key is (409, the key named), nothing written.
        if (!current && inScope.length > 0)
          throw new BatchRowError(
            index,
            new ConstraintViolationError('unique', { columns: keyFields.map((f) => f.column) }),
          );
        if (!current)
          throw new Error(
            `INSERT INTO ${table.name} ... ON CONFLICT answered no row and none holds the key`,
          );
        out.push({ row: table.decode(current), outcome: 'unchanged' });
      }
      await record(table, changed);
      return out;
    },
    undefined,
    (index) => (inputs[index] ? { table, input: inputs[index] } : undefined),
    context,
  );
}

/**
 * The unique key an upsert matches on: `asked` when it is one the entity declares, else its first.
 *
 * @example
 * ```ts
 * const key = upsertKey(Product, ['sku']); // ['sku'], or KIT_ERR_INVALID_ARGUMENT naming the keys
 * ```
 */
export function upsertKey(entity: Entity, asked: readonly string[] | undefined): readonly string[] {
  const keys = entity.unique;
  if (keys.length === 0)
    throw new KitError(
      'KIT_ERR_INVALID_ARGUMENT',
      `upsertMany: entity ${entity.name} declares no unique key (defineEntity({ unique: [['<field>']] })).`,
    );
  if (asked === undefined) return keys[0] as readonly string[];
  const found = keys.find((k) => k.length === asked.length && k.every((f) => asked.includes(f)));
  if (!found)
    throw new KitError(
      'KIT_ERR_INVALID_ARGUMENT',
      `upsertMany: (${asked.join(', ')}) is not a unique key of ${entity.name}; its keys: ${keys.map((k) => `(${k.join(', ')})`).join(', ')}.`,
    );
  return found;
}
