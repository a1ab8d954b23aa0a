// The outbox's three tables, as `createTables` makes them, the migration writer writes them and
// the start-up check asks for them: `kit_outbox` (the records still waiting: one per committed
// change, written in the write's transaction, deleted once delivered), `kit_outbox_dead` (the
// records out of attempts, moved there with their last error) and `kit_outbox_lease` (the one row
// that says which instance dispatches; docs/decisions.md, "The outbox dispatcher's leader").
// `kit_outbox` has no index but its primary key: delivering deletes, a retry updates columns no
// index holds (docs/decisions.md, "The outbox table holds only what waits").
// Times the dispatcher compares across instances are the database's clock in epoch milliseconds.
import {
  sql,
  type ColumnDefinitionBuilder,
  type Compilable,
  type CreateTableBuilder,
} from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any table name and columns: the builders only chain.
type CreateTable = CreateTableBuilder<any, any>;

/** A schema statement: compiled for a migration, or run with IF NOT EXISTS by createTables. */
interface Executable {
  execute(): Promise<unknown>;
}
import type { Db } from '../sql/engine.js';
import type { SqlDialect } from '../sql/dialect.js';
import { SchemaMismatchError } from '../errors.js';
import { findTable } from '../schema/tables.js';

/** The outbox's records. */
export const OUTBOX_TABLE = 'kit_outbox';
/** The records out of attempts. */
export const OUTBOX_DEAD_TABLE = 'kit_outbox_dead';
/** The dispatcher's lease. */
export const OUTBOX_LEASE_TABLE = 'kit_outbox_lease';

/** The columns a record has in `kit_outbox` and keeps in `kit_outbox_dead`, after `seq`. */
export const RECORD_COLUMNS = [
  'id',
  'entity',
  'row_key',
  'operation',
  'version_before',
  'version_after',
  'payload',
  'correlation_id',
  'subject',
  'trace_id',
  'created_at',
  'attempts',
  'next_at',
  'done',
  'last_error',
] as const;

/** The statements that make the outbox's tables, with a name for each (`create table kit_outbox`). */
function outboxBuilders(
  db: Db,
  dialect: SqlDialect,
): { table: string; change: string; builder: Compilable & { ifNotExists(): Executable } }[] {
  const big = dialect.bigintType;
  // One record's columns; `kit_outbox_dead` keeps them all, with the same `seq`.
  const recordColumns = <T extends CreateTable>(
    table: T,
    seq: (c: ColumnDefinitionBuilder) => ColumnDefinitionBuilder,
  ): T =>
    table
      .addColumn('seq', sql.raw(big), seq)
      // The idempotency id: a random UUID per record, unique by construction (no index for a write to pay for).
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('entity', 'text', (c) => c.notNull())
      .addColumn('row_key', 'text', (c) => c.notNull())
      .addColumn('operation', 'text', (c) => c.notNull())
      .addColumn('version_before', 'integer')
      .addColumn('version_after', 'integer')
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('correlation_id', 'text')
      .addColumn('subject', 'text')
      .addColumn('trace_id', 'text')
      .addColumn('created_at', sql.raw(big), (c) => c.notNull().defaultTo(dialect.epochMs()))
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_at', sql.raw(big), (c) => c.notNull().defaultTo(0))
      .addColumn('done', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('last_error', 'text') as T;
  // AUTOINCREMENT on SQLite: a deleted record's seq is never given again (rowid reuses the maximum's).
  const records = recordColumns(db.schema.createTable(OUTBOX_TABLE), (c) => dialect.serialKey(c));
  const dead = recordColumns(db.schema.createTable(OUTBOX_DEAD_TABLE), (c) =>
    c.primaryKey(),
  ).addColumn('dead_at', sql.raw(big), (c) => c.notNull().defaultTo(dialect.epochMs()));
  const lease = db.schema
    .createTable(OUTBOX_LEASE_TABLE)
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('term', 'integer', (c) => c.notNull())
    .addColumn('expires_at', sql.raw(big), (c) => c.notNull());
  return [
    { table: OUTBOX_TABLE, change: `create table ${OUTBOX_TABLE}`, builder: records },
    { table: OUTBOX_DEAD_TABLE, change: `create table ${OUTBOX_DEAD_TABLE}`, builder: dead },
    { table: OUTBOX_LEASE_TABLE, change: `create table ${OUTBOX_LEASE_TABLE}`, builder: lease },
  ];
}

/** The outbox statements a migration needs: those whose table is missing (`tables` from introspection). */
export function outboxMigration(
  db: Db,
  dialect: SqlDialect,
  tables: Parameters<typeof findTable>[0],
): { statements: string[]; changes: string[] } {
  const statements: string[] = [];
  const changes: string[] = [];
  for (const { table, change, builder } of outboxBuilders(db, dialect)) {
    if (findTable(tables, table, dialect) !== undefined) continue;
    statements.push(builder.compile().sql);
    changes.push(change);
  }
  return { statements, changes };
}

/**
 * Checks (and with `createTables` first creates) the outbox's tables. Throws `SchemaMismatchError`
 * naming a missing one.
 */
export async function prepareOutbox(
  db: Db,
  dialect: SqlDialect,
  createTables: boolean,
): Promise<void> {
  let tables = await db.introspection.getTables();
  const builders = outboxBuilders(db, dialect);
  if (createTables && builders.some(({ table }) => !findTable(tables, table, dialect))) {
    tables = await dialect.creatingTables(db, async (db) => {
      for (const { builder } of outboxBuilders(db, dialect)) await builder.ifNotExists().execute();
      return db.introspection.getTables();
    });
  }
  for (const { table } of builders) {
    if (!findTable(tables, table, dialect)) {
      throw new SchemaMismatchError(
        `Table '${table}' (the outbox) does not exist. Write the migration that adds it: writeMigration({ url, entities, dir, outbox: true }) from @kit/autocrud writes it for review, and migrate: 'apply' applies it at start-up (docs/autocrud.md, Outbox); or pass createTables: true to addKitAutoCrud in development.`,
      );
    }
  }
}
