// The connection a SQLite migration runs on: a connection of its own to the file, whose BEGIN
// IMMEDIATE (the batch's transaction) waits for the file's write lock on timers for at most
// lockTimeoutMs; the migrations already run are read inside it.
import { Kysely, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler } from 'kysely';
import type { DynamicDatabase, MigrationSession } from '../../sql/engine.js';
import { NodeSqliteDriver, type DatabaseSync } from './driver.js';

/**
 * SQLite runs DDL in transactions: Kysely's adapter says it does not, and would run a batch outside one.
 *
 * @example
 * ```ts
 * const db = new Kysely<DynamicDatabase>({ dialect: { createAdapter: () => new TransactionalSqliteAdapter(), ...rest } });
 * ```
 */
export class TransactionalSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/**
 * A SQLite session of its own on `file` for migrations, waiting up to `lockTimeoutMs` for the write lock.
 *
 * @example
 * ```ts
 * const session = sqliteMigrationSession(() => new DatabaseSync(file), 10_000);
 * try { await migrate(session.db); } finally { await session.close(); }
 * ```
 */
export function sqliteMigrationSession(
  open: () => DatabaseSync,
  lockTimeoutMs: number,
): MigrationSession {
  let connection: DatabaseSync | undefined;
  const database = () => {
    connection ??= open();
    connection.exec('PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 0;');
    return connection;
  };
  const db = new Kysely<DynamicDatabase>({
    dialect: {
      createAdapter: () => new TransactionalSqliteAdapter(),
      createDriver: () => new NodeSqliteDriver(database, lockTimeoutMs),
      createQueryCompiler: () => new SqliteQueryCompiler(),
      createIntrospector: (k) => new SqliteIntrospector(k),
    },
  });
  return {
    db,
    async close() {
      await db.destroy();
      connection?.close();
    },
  };
}
