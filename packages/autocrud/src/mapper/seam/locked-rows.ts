// The locked reads of a row a recorded write replaces, on the write's transaction: the row read
// and locked until the transaction ends, and PostgreSQL's one UPDATE that locks a row, writes it
// and answers it before and after. Each table's statements are compiled once and kept beside it.
import { sql, type CompiledQuery } from 'kysely';
import type { ColumnCodec } from '../sql/columns.js';
import type { Db } from '../sql/engine.js';
import type { Filter } from '../sql/query.js';
import { slotScope } from '../sql/scope.js';
import {
  Slot,
  statement,
  StatementCache,
  type Executor,
  type Statement,
} from '../sql/statements.js';
import type { Row, Table } from './table.js';

/** What one table's locked reads keep: compiled once, reused by every write. */
interface LockedState {
  // The locked read of a row a recorded write replaces.
  locked: Statement | undefined;
  // The same read under a scope, by the scope's shape.
  readonly scoped: StatementCache;
  // The row's columns read as `kit_before_<i>`, for the UPDATE that answers the row before and after (PostgreSQL).
  before: unknown[] | undefined;
}

const states = new WeakMap<Table, LockedState>();

function stateOf(table: Table): LockedState {
  let state = states.get(table);
  if (!state)
    states.set(
      table,
      (state = { locked: undefined, scoped: new StatementCache(), before: undefined }),
    );
  return state;
}

const NO_FILTERS: readonly Filter[] = [];

/**
 * The row with this key (not soft-deleted, inside the call's scope: checked filters, see
 * scope.ts) as stored, undecoded, read on the write's transaction and locked until it ends:
 * `FOR UPDATE` on PostgreSQL and PGlite; on SQLite the transaction already holds the database's
 * write lock (BEGIN IMMEDIATE). A row outside the scope is absent: neither written nor recorded.
 *
 * @example
 * ```ts
 * const raw = await lockedRow(table, db, execute, key, scope);
 * const before = raw && table.decode(raw);
 * ```
 */
export async function lockedRow(
  table: Table,
  db: Db,
  execute: Executor,
  key: unknown,
  scope: readonly Filter[] = NO_FILTERS,
): Promise<Row | undefined> {
  const state = stateOf(table);
  // Under a scope, one statement per scope shape, its values in slots (as a scoped get's).
  const scoped = slotScope(table.dialect, table.entity, scope, 's');
  const build = () => {
    const query = db
      .selectFrom(table.name)
      .select(table.selection)
      .where((eb) => table.byKey(eb, new Slot('key'), scoped.filters));
    return table.dialect.lockRows(query);
  };
  const read =
    scoped.filters.length === 0
      ? (state.locked ??= statement(build(), false))
      : state.scoped.get(scoped.shape, build);
  const [row] = await execute(read.bind({ ...scoped.values, key }), '');
  return row;
}

/**
 * PostgreSQL: one row's UPDATE that locks the row, writes it and answers it before and after, in
 * one statement: `UPDATE t SET … FROM (SELECT key, <columns> FROM t WHERE <key> FOR UPDATE) kit_old
 * WHERE t.key = kit_old.key [AND version IN (…)] RETURNING <row>, kit_old.*`. The locked sub-select
 * reads the row's newest committed version (READ COMMITTED re-reads a locked row), so `before` is
 * what the write replaced. No row: absent, soft-deleted, outside the call's `scope` (checked
 * filters, in the locked sub-select: a row outside it is neither written nor recorded), or at
 * another version.
 *
 * @example
 * ```ts
 * const [raw] = await execute(lockedUpdate(table, db, values, key, ifVersion, where), '');
 * ```
 */
export function lockedUpdate(
  table: Table,
  db: Db,
  values: Record<string, unknown>,
  key: unknown,
  ifVersion: readonly number[] | undefined,
  scope: readonly Filter[] = NO_FILTERS,
): CompiledQuery {
  const state = stateOf(table);
  const before = (state.before ??= table.entity.fields.map((f, i) =>
    (table.codecs[i] as ColumnCodec).read(f.column).as(`kit_before_${i}`),
  ));
  const old = db
    .selectFrom(table.name)
    .select([sql.ref(table.pk.column).as('kit_old_key'), ...before] as never)
    .where((eb) => table.byKey(eb, key, scope))
    .forUpdate()
    .as('kit_old');
  const own = (column: string) => sql.ref(`${table.name}.${column}`);
  return db
    .updateTable(table.name)
    .set(values)
    .from(old)
    .where((eb) => {
      const conditions = [eb(own(table.pk.column), '=', sql.ref('kit_old.kit_old_key'))];
      if (ifVersion !== undefined && table.version)
        conditions.push(eb(own(table.version.column), 'in', [...ifVersion]));
      return eb.and(conditions);
    })
    .returning([
      ...table.selection,
      ...table.entity.fields.map((_, i) =>
        sql.ref(`kit_old.kit_before_${i}`).as(`kit_before_${i}`),
      ),
    ] as never)
    .compile();
}

/**
 * A {@link lockedUpdate} answer as the rows before and after, decoded.
 *
 * @example
 * ```ts
 * const { before, after } = splitLocked(table, raw);
 * ```
 */
export function splitLocked(table: Table, raw: Row): { before: Row; after: Row } {
  const old: Row = {};
  table.entity.fields.forEach((f, i) => (old[f.name] = raw[`kit_before_${i}`]));
  return { before: table.decode(old), after: table.decode(raw) };
}
