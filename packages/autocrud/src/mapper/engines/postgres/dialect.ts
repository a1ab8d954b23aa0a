// PostgreSQL's SQL (PGlite speaks it too): what the rest of the mapper asks a dialect for.
import {
  sql,
  type ColumnDefinitionBuilder,
  type Expression,
  type RawBuilder,
  type SqlBool,
  type TableMetadata,
} from 'kysely';
import type { EntityField } from '../../../entity.js';
import type { ColumnType } from '../../sql/columns.js';
import type { LockableQuery, LockStrength, SqlDialect } from '../../sql/dialect.js';
import type { Db } from '../../sql/engine.js';
import type { IncludeEmbedding } from '../../sql/embedding.js';
import { postgresChanges } from './change-sql.js';
import { postgresEmbedding } from './embed.js';
import {
  postgresCodec,
  postgresColumnDdl,
  postgresColumnType,
  postgresRefusal,
} from './columns.js';

/**
 * Kit's advisory lock key for schema changes (an int8; Kysely's own Migrator uses another):
 * migrations hold it for their session, `createTables` for its transaction.
 *
 * @example
 * ```ts
 * await sql`select pg_advisory_xact_lock(${sql.raw(SCHEMA_LOCK_KEY)})`.execute(tx);
 * ```
 */
export const SCHEMA_LOCK_KEY = '7364915278043516723';

/** `LIKE` metacharacters of the caller's text, matched literally (PostgreSQL's default escape is `\`). */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

// ICU's root locale: Unicode case mapping whatever the database's own collation (a C-locale
// database folds ASCII only). Present in PostgreSQL built with ICU (Debian's, the official
// images, the managed services) and in PGlite.
const UNICODE_CASE = sql.raw('"und-x-icu"');

/**
 * PostgreSQL column types beyond Kysely's introspection (a type name only): through domains to the
 * base type, whether it is an enum, and a numeric's precision and scale. By `schema.table.column`.
 */
async function columnTypes(db: Db, tables: readonly string[]): Promise<Map<string, ColumnType>> {
  const names = [...new Set(tables.map((t) => t.slice(t.indexOf('.') + 1)))];
  const { rows } = await sql<{
    schema: string;
    table: string;
    column: string;
    declared: string;
    base: string;
    typtype: string;
    typmod: number;
  }>`
    select n.nspname as schema, c.relname as table, a.attname as column, format_type(a.atttypid, a.atttypmod) as declared,
      coalesce(b.typname, t.typname) as base, coalesce(b.typtype, t.typtype) as typtype,
      case when t.typtype = 'd' then t.typtypmod else a.atttypmod end as typmod
    from pg_catalog.pg_attribute a
      join pg_catalog.pg_class c on c.oid = a.attrelid
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      join pg_catalog.pg_type t on t.oid = a.atttypid
      left join pg_catalog.pg_type b on t.typtype = 'd' and b.oid = t.typbasetype
    where a.attnum > 0 and not a.attisdropped and c.relname in (${sql.join(names)})`.execute(db);
  return new Map(
    rows.map((r) => [
      `${r.schema}.${r.table}.${r.column}`,
      postgresColumnType(r.declared, r.base, r.typtype, Number(r.typmod)),
    ]),
  );
}

/** The columns' types as `regtype` names them (no modifier), for the ordered insert's casts. */
async function insertTypes(
  db: Db,
  table: { readonly schema?: string | undefined; readonly name: string },
): Promise<ReadonlyMap<string, string>> {
  const quoted = [table.schema, table.name]
    .filter((p): p is string => p !== undefined)
    .map((p) => `"${p.replaceAll('"', '""')}"`)
    .join('.');
  const { rows } = await db.executeQuery<{ name: string; type: string }>(
    sql`select attname as name, atttypid::regtype::text as type from pg_attribute where attrelid = to_regclass(${quoted}) and attnum > 0 and not attisdropped`.compile(
      db,
    ),
  );
  return new Map(rows.map((r) => [r.name, r.type]));
}

// The dialect's embedding, made once on first use.
let embedding: IncludeEmbedding | undefined;

/**
 * PostgreSQL's dialect: exact column types (numeric, timestamptz, jsonb), identity and UUID keys,
 * `= any(array)` lists, `FOR UPDATE` locks, writable CTEs, and related rows embedded as JSON.
 *
 * @example
 * ```ts
 * const engine: Engine = { kind: 'postgres', dialect: postgresDialect, db, ... };
 * ```
 */
export const postgresDialect: SqlDialect = {
  migrationTag: 'postgres',
  label: 'PostgreSQL and PGlite',
  traceSystem: 'postgresql',
  // The protocol counts a statement's parameters in 16 bits.
  maxParameters: 65535,

  codec: postgresCodec,
  columnType: postgresColumnDdl,
  refusal: postgresRefusal,
  columnTypes,
  declaredType: (dataType: string): ColumnType => ({ declared: dataType, family: 'other' }),
  // Names are exact once quoted, as Kysely quotes them.
  foldName: (name: string): string => name,
  // Unqualified: what the default search_path finds.
  unqualified: (candidates: readonly TableMetadata[]): TableMetadata | undefined =>
    candidates.find((t) => t.schema === 'public') ??
    (candidates.length === 1 ? candidates[0] : undefined),

  keyColumn(column: ColumnDefinitionBuilder, field: EntityField): ColumnDefinitionBuilder {
    if (field.type === 'integer') return column.generatedByDefaultAsIdentity();
    if (field.type === 'string') return column.defaultTo(sql`gen_random_uuid()`);
    return column;
  },
  serialKey: (column: ColumnDefinitionBuilder): ColumnDefinitionBuilder =>
    column.primaryKey().generatedByDefaultAsIdentity(),
  bigintType: 'bigint',
  /**
   * Two PostgreSQL sessions running the same `CREATE TABLE IF NOT EXISTS` at once do not both
   * skip: one fails on the catalog's unique index (23505) or with 42P07, so instances starting
   * together would see a start-up failure. `create` runs in a transaction holding the schema
   * lock; the tables appear together at its commit.
   */
  creatingTables<T>(db: Db, create: (db: Db) => Promise<T>): Promise<T> {
    return db.transaction().execute(async (tx) => {
      await sql`select pg_advisory_xact_lock(${sql.raw(SCHEMA_LOCK_KEY)})`.execute(tx);
      return create(tx);
    });
  },

  // With microseconds, the statement's own time: one stamp for every row a statement writes.
  clock: (): RawBuilder<unknown> => sql`statement_timestamp()`,
  epochMs: (): RawBuilder<number> =>
    sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`,
  /**
   * Case-sensitive: LIKE on the column's text, so that citext and enum columns behave as text
   * does. Case-insensitive: ILIKE under ICU's root collation, which maps letter by letter (simple
   * case mapping): `É` matches `é`, `ß` does not match `SS`.
   */
  contains(column: string, pattern: unknown, insensitive: boolean): RawBuilder<boolean> {
    const ref = sql.ref(column);
    return insensitive
      ? sql<boolean>`${ref}::text collate ${UNICODE_CASE} ilike ${pattern}`
      : sql<boolean>`${ref}::text like ${pattern}`;
  },
  containsPattern: (text: string): string => `%${escapeLike(text)}%`,
  bindList: (values: readonly unknown[]): unknown => values,
  inList: (
    column: Expression<unknown>,
    list: unknown,
    elementType?: string,
  ): RawBuilder<SqlBool> =>
    elementType === undefined
      ? sql<SqlBool>`${column} = any(${list})`
      : sql<SqlBool>`${column} = any(${list}::${sql.raw(elementType)}[])`,
  lockRows: <Q extends LockableQuery<Q>>(query: Q, strength: LockStrength = 'update'): Q =>
    strength === 'update'
      ? query.forUpdate()
      : strength === 'share'
        ? query.forShare()
        : query.forKeyShare(),

  // xmax is 0 on a row version this transaction inserted (a row another transaction inserted meanwhile is an update).
  upsertInserted: sql<boolean>`xmax = 0`,
  writableCte: true,
  changeSql: postgresChanges,
  orderedReturning: true,
  insertTypes,
  // Built on first use: its scopes bind values through this very dialect.
  get embedding(): IncludeEmbedding {
    return (embedding ??= postgresEmbedding(postgresDialect));
  },
  refusesWideIntegers: false,
};
