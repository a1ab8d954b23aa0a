// Many rows' INSERTs in as few statements as each engine's bound-parameter limit allows: a
// multi-row INSERT ... RETURNING per chunk of consecutive rows that set the same columns. The
// stored rows are answered in the order sent without relying on the order RETURNING emits them
// in (docs/decisions.md, "Bulk insert: one statement per chunk"):
// - a key Kit made (a UUID) or the row sent: each returned row is matched to its input by key;
// - a key the database generates (identity, serial): on PostgreSQL and PGlite the rows are
//   inserted from `(VALUES ...) ORDER BY <ordinal>`, so the sequence numbers them in the order
//   sent, and the returned rows are sorted by key; SQLite has no such form (a rowid's order is not
//   tied to the source's), so there the rows go one statement each, in order.
// A statement the database refuses names no row: the caller finds it by replaying row by row.
import { sql, type Compilable, type CompiledQuery, type RawBuilder } from 'kysely';
import type { Db } from '../sql/engine.js';
import { kitTimestamps } from '../sql/stamps.js';
import { splitTable } from '../schema/tables.js';
import type { PreparedInsert, Row, Table } from '../seam/table.js';
import { noRowAnswered } from '../errors.js';

/** At most this many rows in one statement, whatever the limit allows (a request carries at most 1000). */
const MAX_CHUNK_ROWS = 1000;

/** A value of one row of a multi-row statement. */
class RowSlot {
  constructor(
    readonly row: number,
    readonly column: string,
  ) {}
}

/** A multi-row statement compiled once per shape (its columns and row count), bound at each call. */
interface BulkStatement {
  bind(rows: readonly Readonly<Record<string, unknown>>[]): CompiledQuery;
}

function compile(query: Compilable): BulkStatement {
  const compiled = query.compile();
  const parameters = compiled.parameters;
  return {
    bind: (rows) => ({
      ...compiled,
      parameters: parameters.map((p) =>
        p instanceof RowSlot ? (rows[p.row] as Record<string, unknown>)[p.column] : p,
      ),
    }),
  };
}

// Per table: its multi-row statements by shape (bounded, as statements.ts bounds single rows')
// and, where the ordinal form is used, its columns' types (read once, for its casts).
interface BulkState {
  readonly statements: Map<string, BulkStatement>;
  types: Promise<ReadonlyMap<string, string>> | undefined;
}
const states = new WeakMap<Table, BulkState>();
const STATEMENT_LIMIT = 64;

function stateOf(table: Table): BulkState {
  let state = states.get(table);
  if (!state) states.set(table, (state = { statements: new Map(), types: undefined }));
  return state;
}

/** The columns' types as the ordered insert's casts name them (the dialect's catalog, read once per table). */
function columnTypes(table: Table, trx: Db): Promise<ReadonlyMap<string, string>> {
  const state = stateOf(table);
  state.types ??= table.dialect.insertTypes(trx, splitTable(table.name)).catch((err: unknown) => {
    state.types = undefined;
    throw err;
  });
  return state.types;
}

/** How the rows of one set of columns are inserted and matched to their answers. */
type Mode = 'keyed' | 'ordinal' | 'single';

function modeOf(table: Table, columns: readonly string[]): Mode {
  if (columns.length === 0) return 'single'; // DEFAULT VALUES takes one row
  if (columns.includes(table.pk.column)) return 'keyed';
  return table.dialect.orderedReturning && table.pk.type === 'integer' ? 'ordinal' : 'single';
}

function statementOf(
  table: Table,
  db: Db,
  mode: Exclude<Mode, 'single'>,
  columns: readonly string[],
  count: number,
  types: ReadonlyMap<string, string> | undefined,
): BulkStatement {
  const state = stateOf(table);
  const key = `${mode}\u0001${count}\u0001${columns.join('\u0000')}`;
  const found = state.statements.get(key);
  if (found) return found;
  const stamps: Record<string, RawBuilder<unknown>> = kitTimestamps(
    table.entity,
    table.dialect,
    'create',
  );
  let query: Compilable;
  if (mode === 'keyed') {
    const rows = Array.from({ length: count }, (_, r) =>
      Object.fromEntries(columns.map((c) => [c, stamps[c] ?? new RowSlot(r, c)])),
    );
    query = db.insertInto(table.name).values(rows).returning(table.selection);
  } else {
    const bound = columns.filter((c) => stamps[c] === undefined);
    const value = (r: number, c: string) => {
      const type = types?.get(c);
      // The first row's casts type the VALUES list's columns (its other rows follow them).
      if (r === 0 && type === undefined) throw new Error(`${table.name} has no column ${c}`);
      return r === 0
        ? sql`cast(${new RowSlot(r, c)} as ${sql.raw(type as string)})`
        : sql`${new RowSlot(r, c)}`;
    };
    const values = Array.from(
      { length: count },
      (_, r) => sql`(${sql.join([...bound.map((c) => value(r, c)), sql.raw(String(r))])})`,
    );
    const source = sql`select ${sql.join(columns.map((c) => stamps[c] ?? sql.id('kit_rows', c)))} from (values ${sql.join(values)}) as kit_rows(${sql.join([...bound.map((c) => sql.id(c)), sql.id('kit_row_ordinal')])}) order by kit_row_ordinal`;
    query = db
      .insertInto(table.name)
      .columns(columns as never)
      .expression(source)
      .returning(table.selection);
  }
  const made = compile(query);
  // Past the limit a shape is compiled at each call, so that memory stays bounded.
  if (state.statements.size < STATEMENT_LIMIT) state.statements.set(key, made);
  return made;
}

/** `stored` (one chunk's RETURNING) in the order of `values`. */
function ordered(
  table: Table,
  mode: Exclude<Mode, 'single'>,
  values: readonly Readonly<Record<string, unknown>>[],
  stored: Row[],
): Row[] {
  if (stored.length !== values.length)
    throw new Error(`INSERT INTO ${table.name} of ${values.length} rows answered ${stored.length}`);
  const key = table.pk;
  if (mode === 'ordinal') {
    // The sequence numbered the rows in the order sent (ORDER BY the ordinal): sorted by key is that order.
    return stored
      .map((row) => ({ row, key: BigInt(String(row[key.name])) }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .map((e) => e.row);
  }
  const position = new Map(values.map((v, i) => [String(v[key.column]), i]));
  const out = new Array<Row>(values.length);
  for (const row of stored) {
    const at = position.get(String(row[key.name]));
    if (at === undefined || out[at] !== undefined)
      throw new Error(`INSERT INTO ${table.name} answered a row whose key matches no row sent`);
    out[at] = row;
  }
  return out;
}

/**
 * Inserts `rows` on the transaction `trx` (each row's values plus `common`, the same for every
 * row: a nested create's reference to its parent) and answers the stored rows, undecoded, in the
 * order of `rows`. A refusal by the database rejects with the driver's error: no row is named.
 */
export async function insertRows(
  table: Table,
  db: Db,
  trx: Db,
  rows: readonly PreparedInsert[],
  signal: AbortSignal | undefined,
  common?: Readonly<Record<string, unknown>>,
): Promise<Row[]> {
  const out: Row[] = [];
  let start = 0;
  while (start < rows.length) {
    const columns = (rows[start] as PreparedInsert).columns;
    const shape = columns.join('\u0000');
    let end = start + 1;
    while (end < rows.length && (rows[end] as PreparedInsert).columns.join('\u0000') === shape)
      end++;
    const mode = modeOf(table, columns);
    const values = rows
      .slice(start, end)
      .map((r) => (common ? { ...r.values, ...common } : r.values));
    if (mode === 'single') {
      const insert = table.insertStatement(db, columns);
      for (const v of values) {
        if (signal?.aborted) throw signal.reason;
        const [stored] = (await trx.executeQuery<Row>(insert.bind(v))).rows;
        if (!stored) throw noRowAnswered(`INSERT INTO ${table.name} ... RETURNING`);
        out.push(stored);
      }
    } else {
      const types = mode === 'ordinal' ? await columnTypes(table, trx) : undefined;
      const size = chunkRows(table, columns);
      for (let from = 0; from < values.length; from += size) {
        if (signal?.aborted) throw signal.reason;
        const chunk = values.slice(from, from + size);
        const statement = statementOf(table, db, mode, columns, chunk.length, types);
        out.push(
          ...ordered(table, mode, chunk, (await trx.executeQuery<Row>(statement.bind(chunk))).rows),
        );
      }
    }
    start = end;
  }
  return out;
}

/**
 * How many rows that set `columns` one statement of `table` carries: as many as the engine's
 * parameter limit allows (the clock's stamps are SQL, not parameters), at most 1000; 1 where
 * they go one statement each.
 */
export function chunkRows(table: Table, columns: readonly string[]): number {
  if (modeOf(table, columns) === 'single') return 1;
  const stamps = kitTimestamps(table.entity, table.dialect, 'create');
  return Math.min(
    MAX_CHUNK_ROWS,
    Math.floor(
      table.dialect.maxParameters /
        Math.max(1, columns.filter((c) => stamps[c] === undefined).length),
    ),
  );
}
