// A single recorded write as ONE statement on PostgreSQL and PGlite: the write and the rows its
// write hooks record, composed from each hook's SQL form (seam/changes.ts, `ChangeSinkSql`) and the
// dialect's change expressions (`SqlDialect.changeSql`) into a
// data-modifying CTE, autocommitted and prepared like any other write:
//
//   WITH kit_old AS (SELECT <key>, <columns> FROM t WHERE <key> AND <scope> FOR UPDATE),
//        kit_new AS (UPDATE t SET … FROM kit_old WHERE t.pk = kit_old.kit_key [AND version IN (…)] RETURNING …),
//        kit_c0  AS (INSERT INTO kit_changes (…) SELECT … FROM kit_old, kit_new),
//        kit_c1  AS (INSERT INTO kit_outbox (…) SELECT … FROM kit_old, kit_new)
//   SELECT <the row after> FROM kit_new
//
// A statement is atomic: the write and its change rows commit together or not at all. Without
// BEGIN/COMMIT and with a named statement, a recorded write costs one round trip, as an unrecorded
// one does. See docs/decisions.md ("One statement for a recorded single write").
import { sql, type Compilable, type Expression, type ExpressionBuilder } from 'kysely';
import type { ChangeContext, ChangeOperation, ChangeSinkSql, ChangeSql } from '../seam/changes.js';
import type { Db } from '../sql/engine.js';
import type { Filter } from '../sql/query.js';
import { Slot, statement, type Statement } from '../sql/statements.js';
import type { Table } from '../seam/table.js';

/** The context values a statement binds, by slot name. */
type Binds = Map<string, (context: ChangeContext) => unknown>;

/** The dialect's `ChangeSql` over the CTE's `kit_old` and `kit_new`, its context values bound in slots `<prefix><name>`. */
function changeSql(
  table: Table,
  operation: ChangeOperation,
  binds: Binds,
  prefix: string,
): ChangeSql {
  const forms = table.dialect.changeSql;
  if (!forms)
    throw new Error(
      `a single write's changes in its own statement: the dialect of ${table.name} writes none`,
    );
  return forms.over(table.entity, operation, (name, value) => {
    const slot = `${prefix}${name}`;
    binds.set(slot, value);
    return sql`${new Slot(slot)}`;
  });
}

/** A composed statement and the context values it binds. */
interface InlineStatement {
  readonly statement: Statement;
  readonly binds: Binds;
}

/** The values of a composed statement's context slots for one write. */
export function contextValues(
  binds: Binds,
  context: ChangeContext | undefined,
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  const ctx = context ?? {};
  for (const [slot, value] of binds) values[slot] = value(ctx) ?? null;
  return values;
}

/** Whether a value a write sets is an expression of the statement (Kit's stamps, `version + 1`) rather than a bound value. */
function isExpression(value: unknown): value is Expression<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { toOperationNode?: unknown }).toOperationNode === 'function'
  );
}

/**
 * The SET (or VALUES) of a write with each bound value in a slot `w_<column>`: the statement's
 * shape, as a cache key, and the values to bind.
 */
export function slotValues(values: Readonly<Record<string, unknown>>): {
  shape: string;
  set: Record<string, unknown>;
  bound: Record<string, unknown>;
} {
  const set: Record<string, unknown> = {};
  const bound: Record<string, unknown> = {};
  let shape = '';
  for (const [column, value] of Object.entries(values)) {
    if (isExpression(value)) {
      set[column] = value;
      shape += `${column}\u0001e\u0000`;
    } else {
      set[column] = new Slot(`w_${column}`);
      bound[`w_${column}`] = value;
      shape += `${column}\u0000`;
    }
  }
  return { shape, set, bound };
}

/**
 * The composed statements of one table, by shape, each with the binds its build filled; dropped
 * when the table's sinks change. Past `limit` shapes a statement is built unnamed and not kept, as
 * `StatementCache` does.
 */
export class InlineStatements {
  #sinks: readonly ChangeSinkSql[] | undefined;
  readonly #kept = new Map<string, InlineStatement>();

  constructor(private readonly limit = 64) {}

  get(
    sinks: readonly ChangeSinkSql[],
    key: string,
    build: (binds: Binds) => Compilable,
  ): InlineStatement {
    if (this.#sinks !== sinks) {
      this.#sinks = sinks;
      this.#kept.clear();
    }
    const found = this.#kept.get(key);
    if (found) return found;
    const binds: Binds = new Map();
    const kept = this.#kept.size < this.limit;
    const made = { statement: statement(build(binds), kept), binds };
    if (kept) this.#kept.set(key, made);
    return made;
  }
}

/** A `db.with(…)` chain, as the composition uses it (Kysely's own types track each CTE's columns, which a dynamic table has none of). */
interface Chain {
  with(name: string, build: () => unknown): Chain;
  selectFrom(from: string): { select(selection: readonly unknown[] | unknown): Compilable };
}

/** Each sink's INSERT … SELECT over the change, as CTEs `kit_c<i>` on `query`. */
function withSinks(
  query: Chain,
  db: Db,
  table: Table,
  operation: ChangeOperation,
  sinks: readonly ChangeSinkSql[],
  binds: Binds,
): Chain {
  const from = operation === 'create' ? ['kit_new'] : ['kit_old', 'kit_new'];
  let chain = query;
  sinks.forEach((sink, n) => {
    const columns = Object.entries(sink.columns(changeSql(table, operation, binds, `c${n}_`)));
    chain = chain.with(`kit_c${n}`, () =>
      db
        .insertInto(sink.table)
        .columns(columns.map(([c]) => c) as never)
        .expression(
          db
            .selectFrom(from as never)
            .select(columns.map(([c, e]) => sql`${e}`.as(c)) as never) as never,
        ),
    );
  });
  return chain;
}

/** `kit_old`: the row a write replaces, inside the key and the scope (slotted filters), its key and columns, locked. */
function oldRow(db: Db, table: Table, scope: readonly Filter[]) {
  return db
    .selectFrom(table.name)
    .select([
      sql.ref(table.pk.column).as('kit_key'),
      ...table.entity.fields.map((f, i) => sql.ref(f.column).as(`kit_o_${i}`)),
    ] as never)
    .where((eb) => table.byKey(eb, new Slot('key'), scope))
    .forUpdate();
}

/** The row's columns as `kit_n_<i>`, for the sinks, beside the caller's selection. */
function newColumns(table: Table): unknown[] {
  return table.entity.fields.map((f, i) => sql.ref(`${table.name}.${f.column}`).as(`kit_n_${i}`));
}

/** The caller's row from `kit_new`, as the selection names it. */
function answer(table: Table) {
  return table.entity.fields.map((f) => sql.ref(`kit_new.${f.name}`).as(f.name));
}

/**
 * The conditions an update or delete of `kit_old`'s row adds: its key, and its version among the
 * `versions` the caller's `If-Match` named (slots `v0`…).
 */
function sameRow(eb: ExpressionBuilder<never, never>, table: Table, versions: number | undefined) {
  const own = (column: string) => sql.ref(`${table.name}.${column}`);
  const conditions = [eb(own(table.pk.column), '=', sql.ref('kit_old.kit_key'))];
  if (versions !== undefined && table.version) {
    const slots = Array.from({ length: versions }, (_, i) => new Slot(`v${i}`));
    conditions.push(eb(own(table.version.column), 'in', slots as never));
  }
  return conditions;
}

/** `UPDATE` (an update, a patch, a soft delete) of one row with its changes: one statement. */
export function updateStatement(
  db: Db,
  table: Table,
  operation: ChangeOperation,
  set: Record<string, unknown>,
  versions: number | undefined,
  scope: readonly Filter[],
  sinks: readonly ChangeSinkSql[],
  binds: Binds,
): Compilable {
  const query = db
    .with('kit_old', () => oldRow(db, table, scope))
    .with('kit_new', () =>
      db
        .updateTable(table.name)
        .set(set)
        .from('kit_old' as never)
        .where((eb) => eb.and(sameRow(eb, table, versions)))
        .returning([...table.selection, ...newColumns(table)] as never),
    );
  return withSinks(query as unknown as Chain, db, table, operation, sinks, binds)
    .selectFrom('kit_new')
    .select(answer(table));
}

/** `DELETE` of one row with its change: one statement answering the deleted key. */
export function deleteStatement(
  db: Db,
  table: Table,
  versions: number | undefined,
  scope: readonly Filter[],
  sinks: readonly ChangeSinkSql[],
  binds: Binds,
): Compilable {
  const own = (column: string) => sql.ref(`${table.name}.${column}`);
  const query = db
    .with('kit_old', () => oldRow(db, table, scope))
    .with('kit_new', () =>
      db
        .deleteFrom(table.name)
        .using('kit_old' as never)
        .where((eb) => eb.and(sameRow(eb, table, versions)))
        .returning(own(table.pk.column).as('kit_key') as never),
    );
  return withSinks(query as unknown as Chain, db, table, 'delete', sinks, binds)
    .selectFrom('kit_new')
    .select([sql.ref('kit_new.kit_key').as('key')]);
}

/** `INSERT` of one row (`columns` slotted, Kit's stamps as expressions) with its change: one statement. */
export function insertStatement(
  db: Db,
  table: Table,
  values: Record<string, unknown>,
  sinks: readonly ChangeSinkSql[],
  binds: Binds,
): Compilable {
  const query = db.with('kit_new', () =>
    (Object.keys(values).length === 0
      ? db.insertInto(table.name).defaultValues()
      : db.insertInto(table.name).values(values)
    ).returning([...table.selection, ...newColumns(table)] as never),
  );
  return withSinks(query as unknown as Chain, db, table, 'create', sinks, binds)
    .selectFrom('kit_new')
    .select(answer(table));
}

/** Slot values of a conditional write's versions (`v<i>`). */
export function versionValues(ifVersion: readonly number[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  ifVersion?.forEach((v, i) => (out[`v${i}`] = v));
  return out;
}
