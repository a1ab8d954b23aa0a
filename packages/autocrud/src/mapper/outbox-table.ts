// The outbox's two tables, as `createTables` makes them, the migration writer writes them and the
// start-up check asks for them: `kit_outbox` (one record per committed change, written in the
// write's transaction; the dispatcher marks it delivered or dead) and `kit_outbox_lease` (the one
// row that says which instance dispatches; docs/decisions.md, "The outbox dispatcher's leader").
// Times the dispatcher compares across instances are the database's clock in epoch milliseconds.
import { sql, type Compilable, type RawBuilder } from 'kysely';

/** A schema statement: compiled for a migration, or run with IF NOT EXISTS by createTables. */
interface Executable {
  execute(): Promise<unknown>;
}
import type { Db, SqlFlavour } from './engine.js';
import { SchemaMismatchError } from './errors.js';
import { findTable } from './tables.js';

/** The outbox's records. */
export const OUTBOX_TABLE = 'kit_outbox';
/** The dispatcher's lease. */
export const OUTBOX_LEASE_TABLE = 'kit_outbox_lease';

/** The database's clock in epoch milliseconds (an integer), for leases and retention. */
export function epochMs(flavour: SqlFlavour): RawBuilder<number> {
  return flavour === 'postgres' ? sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint` : sql<number>`(cast((julianday('now') - 2440587.5) * 86400000 as integer))`;
}

/** The statements that make the outbox's tables and index, with a name for each (`create table kit_outbox`). */
export function outboxBuilders(db: Db, flavour: SqlFlavour): { change: string; builder: Compilable & { ifNotExists(): Executable } }[] {
  const big = flavour === 'postgres' ? 'bigint' : 'integer';
  const records = db.schema
    .createTable(OUTBOX_TABLE)
    .addColumn('seq', sql.raw(big), (c) => (flavour === 'postgres' ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey().autoIncrement()))
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
    .addColumn('created_at', sql.raw(big), (c) => c.notNull().defaultTo(epochMs(flavour)))
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_at', sql.raw(big), (c) => c.notNull().defaultTo(0))
    .addColumn('done', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('last_error', 'text')
    .addColumn('finished_at', sql.raw(big));
  const pending = db.schema.createIndex(`${OUTBOX_TABLE}_state_seq_idx`).on(OUTBOX_TABLE).columns(['state', 'seq']);
  const lease = db.schema
    .createTable(OUTBOX_LEASE_TABLE)
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('term', 'integer', (c) => c.notNull())
    .addColumn('expires_at', sql.raw(big), (c) => c.notNull());
  return [
    { change: `create table ${OUTBOX_TABLE}`, builder: records },
    { change: `create index ${OUTBOX_TABLE}_state_seq_idx`, builder: pending },
    { change: `create table ${OUTBOX_LEASE_TABLE}`, builder: lease },
  ];
}

/** The outbox statements a migration needs: those whose table is missing (`tables` from introspection). */
export function outboxMigration(db: Db, flavour: SqlFlavour, tables: Parameters<typeof findTable>[0]): { statements: string[]; changes: string[] } {
  const statements: string[] = [];
  const changes: string[] = [];
  const hasRecords = findTable(tables, OUTBOX_TABLE, flavour) !== undefined;
  const hasLease = findTable(tables, OUTBOX_LEASE_TABLE, flavour) !== undefined;
  for (const { change, builder } of outboxBuilders(db, flavour)) {
    if (change.endsWith(OUTBOX_LEASE_TABLE) ? hasLease : hasRecords) continue;
    statements.push(builder.compile().sql);
    changes.push(change);
  }
  return { statements, changes };
}

/**
 * Checks (and with `createTables` first creates) the outbox's tables. Throws `SchemaMismatchError`
 * naming a missing one.
 */
export async function prepareOutbox(db: Db, flavour: SqlFlavour, createTables: boolean): Promise<void> {
  let tables = await db.introspection.getTables();
  if (createTables && (!findTable(tables, OUTBOX_TABLE, flavour) || !findTable(tables, OUTBOX_LEASE_TABLE, flavour))) {
    for (const { builder } of outboxBuilders(db, flavour)) await builder.ifNotExists().execute();
    tables = await db.introspection.getTables();
  }
  for (const table of [OUTBOX_TABLE, OUTBOX_LEASE_TABLE]) {
    if (!findTable(tables, table, flavour)) {
      throw new SchemaMismatchError(
        `Table '${table}' (the outbox) does not exist. Write the migration that adds it: writeMigration({ url, entities, dir, outbox: true }) from @kit/autocrud writes it for review, and migrate: 'apply' applies it at start-up (docs/autocrud.md, Outbox); or pass createTables: true to addKitAutoCrud in development.`,
      );
    }
  }
}
