// What differs between the SQL the engines speak, as one object per engine (engines/<name>/dialect.ts).
// Code outside those objects asks the dialect what to write and never which engine it runs on, so
// a new engine is a new folder, and a feature that reads differently per engine is a new member
// here (packages/autocrud/test/engine-branches.test.ts counts the branches that would undo that).
import type {
  ColumnDefinitionBuilder,
  Expression,
  RawBuilder,
  SqlBool,
  TableMetadata,
} from 'kysely';
import type { EntityField } from '../../entity.js';
import type { ColumnCodec, ColumnType } from './columns.js';
import type { Db } from './db.js';
import type { InlineChangeSql } from './change-sql.js';
import type { IncludeEmbedding } from './embedding.js';

/**
 * How strongly a read locks its rows: `FOR UPDATE`, `FOR SHARE`, `FOR KEY SHARE` on PostgreSQL.
 *
 * @example
 * ```ts
 * const locked = dialect.lockRows(query, 'key share');
 * ```
 */
export type LockStrength = 'update' | 'share' | 'key share';

/**
 * A query that can lock its rows (Kysely's SELECT builder).
 *
 * @example
 * ```ts
 * const locked = dialect.lockRows(db.selectFrom('books').selectAll(), 'share');
 * ```
 */
export interface LockableQuery<Q> {
  forUpdate(): Q;
  forShare(): Q;
  forKeyShare(): Q;
}

/**
 * One SQL dialect: the column types and value codecs, the expressions and statement forms that
 * are written differently per engine, and what the engine's statements can do.
 *
 * @example
 * ```ts
 * const codec = dialect.codec(field);
 * const query = db.selectFrom('books').select(codec.read('price').as('price'));
 * const locked = dialect.lockRows(query);
 * ```
 */
export interface SqlDialect {
  /** The tag of this dialect's migration files (`<name>.<tag>.sql`): PGlite runs PostgreSQL's. */
  readonly migrationTag: string;
  /** The dialect's name in a migration file's header (`PostgreSQL and PGlite`). */
  readonly label: string;
  /** OpenTelemetry's `db.system.name` for the engine's statements. */
  readonly traceSystem: string;
  /** The most parameters one statement may bind (a multi-row INSERT is cut to fit). */
  readonly maxParameters: number;

  /** How `field`'s values are read, decoded and bound. */
  codec(field: EntityField): ColumnCodec;
  /** The column type `createTables` declares for `field`; `undefined` where none holds it exactly. */
  columnType(field: EntityField): string | undefined;
  /**
   * Whether a column of type `column` holds `field`'s values exactly: `undefined` when it does,
   * else what to declare instead (`false`: nothing to advise), for the start-up check's message.
   */
  refusal(field: EntityField, column: ColumnType): string | false | undefined;
  /**
   * The column types the catalog says beyond Kysely's introspection, by `schema.table.column`,
   * or `undefined` where the introspected type name says all ({@link declaredType}).
   */
  columnTypes(
    db: Db,
    tables: readonly string[],
  ): Promise<ReadonlyMap<string, ColumnType> | undefined>;
  /** A column's type from the type name Kysely's introspection gives. */
  declaredType(dataType: string): ColumnType;
  /** A table or column name as the engine compares it (SQLite's names ignore case). */
  foldName(name: string): string;
  /** Of the tables of one name in several schemas, the one an unqualified name means. */
  unqualified(candidates: readonly TableMetadata[]): TableMetadata | undefined;

  /** A key column's definition: its generated default, where the engine makes one. */
  keyColumn(column: ColumnDefinitionBuilder, field: EntityField): ColumnDefinitionBuilder;
  /** A sequence-numbered key column (the outbox's `seq`). */
  serialKey(column: ColumnDefinitionBuilder): ColumnDefinitionBuilder;
  /** The type of a 64-bit integer column (milliseconds since the epoch). */
  readonly bigintType: string;
  /**
   * Runs `create` (which reads what exists, then creates what is missing) as the one instance
   * creating tables: where two sessions' `CREATE TABLE IF NOT EXISTS` can collide, under a lock.
   */
  creatingTables<T>(db: Db, create: (db: Db) => Promise<T>): Promise<T>;

  /** The database's clock as Kit's timestamps hold it (`createdAt`, `updatedAt`). */
  clock(): RawBuilder<unknown>;
  /** The database's clock in milliseconds since the epoch (the outbox's times). */
  epochMs(): RawBuilder<number>;
  /** "`column` contains the text `pattern`" (made by {@link containsPattern}, or a statement's slot for it). */
  contains(column: string, pattern: unknown, insensitive: boolean): RawBuilder<boolean>;
  /** The value {@link contains} binds for `text`. */
  containsPattern(text: string, insensitive: boolean): string;
  /** A list of bound values (already encoded) as one parameter, for {@link inList}. */
  bindList(values: readonly unknown[]): unknown;
  /** "`column` is one of the list in `list`" (one parameter: the same statement whatever the count). */
  inList(column: Expression<unknown>, list: unknown, elementType?: string): RawBuilder<SqlBool>;
  /**
   * A read that locks its rows until the transaction ends (`update` unless told), where the
   * transaction does not already hold the database's write lock.
   */
  lockRows<Q extends LockableQuery<Q>>(query: Q, strength?: LockStrength): Q;

  /**
   * What an upsert returns to tell an insert from an update (read back as `kit_inserted`), or
   * `undefined` where only the row read before it can tell.
   */
  readonly upsertInserted: RawBuilder<boolean> | undefined;
  /** Whether a data-changing statement may sit in a WITH clause (one statement writes a row and its changes). */
  readonly writableCte: boolean;
  /** With {@link writableCte}: a change as expressions over that one statement's rows, and the casts and functions a sink's SQL form needs. */
  readonly changeSql: InlineChangeSql | undefined;
  /** Whether a multi-row INSERT … RETURNING answers the rows in VALUES order with generated integer keys. */
  readonly orderedReturning: boolean;
  /**
   * With {@link orderedReturning}: the type of each column of `table` (by column name), as a cast
   * in the ordered insert's VALUES list names it, without a modifier (the assignment then applies
   * it, as to a bound value). Read from the catalog on `db`, the insert's transaction.
   */
  insertTypes(
    db: Db,
    table: { readonly schema?: string | undefined; readonly name: string },
  ): Promise<ReadonlyMap<string, string>>;
  /** How related rows are embedded in the parent row's statement, or `undefined`: read by a statement per relation (reads/includes.ts). */
  readonly embedding: IncludeEmbedding | undefined;
  /** Whether the driver refuses to read an integer past 2^53 - 1 (`ERR_OUT_OF_RANGE`) instead of answering it. */
  readonly refusesWideIntegers: boolean;
}

/**
 * A field value as `dialect`'s driver binds it (`null` as is).
 *
 * @example
 * ```ts
 * const bound = encodeValue(dialect, field, true);   // 1 on SQLite, true on PostgreSQL
 * ```
 */
export function encodeValue(dialect: SqlDialect, field: EntityField, value: unknown): unknown {
  return value === null ? null : dialect.codec(field).encode(value);
}
