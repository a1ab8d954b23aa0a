// SQLite's SQL: what the rest of the mapper asks a dialect for.
import {
  sql,
  type ColumnDefinitionBuilder,
  type Expression,
  type RawBuilder,
  type SqlBool,
  type TableMetadata,
} from 'kysely';
import type { LockableQuery, SqlDialect } from '../../sql/dialect.js';
import type { Db } from '../../sql/engine.js';
import { sqliteCodec, sqliteColumnDdl, sqliteColumnType, sqliteRefusal } from './columns.js';

/**
 * The SQL function Kit registers on every SQLite connection: JavaScript's `toLowerCase()`, the
 * Unicode lower case (SQLite's own lower() and LIKE fold only ASCII letters).
 *
 * @example
 * ```ts
 * database.function(LOWER_FUNCTION, { deterministic: true }, lowerText);
 * ```
 */
export const LOWER_FUNCTION = 'kit_lower';

/**
 * {@link LOWER_FUNCTION}'s body: text in lower case, anything else (NULL) as it is.
 *
 * @example
 * ```ts
 * lowerText('ÉCOLE'); // 'école'
 * ```
 */
export function lowerText(value: unknown): unknown {
  return typeof value === 'string' ? value.toLowerCase() : value;
}

/**
 * SQLite's dialect: type affinities (text in Kit's form for dates, UUIDs and decimals of at most
 * 15 digits in a REAL), case-insensitive names, JSON-array lists, no row locks (a write
 * transaction holds the database's write lock from BEGIN IMMEDIATE), no DML inside WITH.
 *
 * @example
 * ```ts
 * const engine: Engine = { kind: 'sqlite', dialect: sqliteDialect, db, ... };
 * ```
 */
export const sqliteDialect: SqlDialect = {
  migrationTag: 'sqlite',
  label: 'SQLite',
  traceSystem: 'sqlite',
  // SQLITE_MAX_VARIABLE_NUMBER since SQLite 3.32 (node:sqlite's build refuses the 32767th).
  maxParameters: 32766,

  codec: sqliteCodec,
  columnType: sqliteColumnDdl,
  refusal: sqliteRefusal,
  columnTypes: (): Promise<undefined> => Promise.resolve(undefined),
  declaredType: sqliteColumnType,
  foldName: (name: string): string => name.toLowerCase(),
  unqualified: (candidates: readonly TableMetadata[]): TableMetadata | undefined => candidates[0],

  // An INTEGER PRIMARY KEY is the rowid, numbered by SQLite itself; a text key has no default.
  keyColumn: (column: ColumnDefinitionBuilder): ColumnDefinitionBuilder => column,
  // AUTOINCREMENT: a deleted record's seq is never given again (rowid reuses the maximum's).
  serialKey: (column: ColumnDefinitionBuilder): ColumnDefinitionBuilder =>
    column.primaryKey().autoIncrement(),
  bigintType: 'integer',
  // SQLite checks IF NOT EXISTS under its write lock, so concurrent creators need no lock of Kit's.
  creatingTables: <T>(db: Db, create: (db: Db) => Promise<T>): Promise<T> => create(db),

  // 'now' has milliseconds, written as Kit's six fraction digits.
  clock: (): RawBuilder<unknown> => sql`(strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')`,
  epochMs: (): RawBuilder<number> =>
    sql<number>`(cast((julianday('now') - 2440587.5) * 86400000 as integer))`,
  /**
   * SQLite's LIKE ignores ASCII case, so case-sensitive "contains" is instr(), which compares
   * bytes and has no wildcards at all; case-insensitive is instr() over both sides in Unicode
   * lower case ({@link LOWER_FUNCTION}), letter by letter as PostgreSQL's ILIKE under ICU.
   */
  contains(column: string, pattern: unknown, insensitive: boolean): RawBuilder<boolean> {
    const ref = sql.ref(column);
    return insensitive
      ? sql<boolean>`instr(${sql.raw(LOWER_FUNCTION)}(${ref}), ${pattern}) > 0`
      : sql<boolean>`instr(${ref}, ${pattern}) > 0`;
  },
  containsPattern: (text: string, insensitive: boolean): string =>
    insensitive ? text.toLowerCase() : text,
  // One JSON text: a 64-bit integer is bound as a bigint, which JSON.stringify refuses, so it is written as a JSON number.
  bindList: (values: readonly unknown[]): unknown =>
    `[${values.map((v) => (typeof v === 'bigint' ? v.toString() : JSON.stringify(v))).join(',')}]`,
  inList: (column: Expression<unknown>, list: unknown): RawBuilder<SqlBool> =>
    sql<SqlBool>`${column} in (select value from json_each(${list}))`,
  // The write transaction already holds the database's write lock (BEGIN IMMEDIATE).
  lockRows: <Q extends LockableQuery<Q>>(query: Q): Q => query,

  upsertInserted: undefined,
  writableCte: false,
  changeSql: undefined,
  orderedReturning: false,
  // Never asked: without ordered RETURNING a generated key's rows go one statement each.
  insertTypes: (): Promise<ReadonlyMap<string, string>> => Promise.resolve(new Map()),
  embedding: undefined,
  refusesWideIntegers: true,
};
