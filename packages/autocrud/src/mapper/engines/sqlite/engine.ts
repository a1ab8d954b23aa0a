import { statSync } from 'node:fs';
import path from 'node:path';
import { KitError } from '@kit/core';
import { autoCrudErrors } from '../../../errors.js';
import { Kysely, SqliteIntrospector, SqliteQueryCompiler, type Dialect } from 'kysely';
import type { DynamicDatabase, Engine } from '../../sql/engine.js';
import type { ConnectionTarget } from '../shared/connection-string.js';
import { DatabaseBusyError, DatabaseUnavailableError, type ErrorClass } from '../../errors.js';
import { sqliteMigrationSession, TransactionalSqliteAdapter } from './migration-session.js';
import { isBusy, NodeSqliteDriver, untilFree, type DatabaseSync } from './driver.js';
import { LOWER_FUNCTION, lowerText, sqliteDialect } from './dialect.js';

type SqliteModule = { DatabaseSync: new (file: string) => DatabaseSync };

/** Settings of the SQLite engine. */
export interface SqliteSettings {
  /** How long a statement waits for the connection and the file's write lock together before `DatabaseBusyError`. */
  readonly acquireTimeoutMs: number;
  /** How long opening waits for the lock another process holds (switching to WAL needs it). */
  readonly connectTimeoutMs: number;
}

/** The runtime's `node:sqlite`, or undefined where it has none (Node < 22.13 without a flag). */
function loadSqlite(): SqliteModule | undefined {
  try {
    return process.getBuiltinModule('node:sqlite') as SqliteModule | undefined;
  } catch {
    return undefined;
  }
}

/** True when this runtime has `node:sqlite` (Node >= 22.13 or 23.4 without flags). */
export function sqliteAvailable(): boolean {
  return loadSqlite() !== undefined;
}

// SQLite result codes (https://sqlite.org/rescode.html): primary code in the low byte.
function classifySqlite(err: unknown): ErrorClass {
  if (err instanceof DatabaseBusyError || isBusy(err)) return 'busy';
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown } | null;
  if (
    e?.code === 'ERR_INVALID_STATE' ||
    (typeof e?.message === 'string' && /database is not open/i.test(e.message))
  )
    return 'unavailable';
  if (e?.code !== 'ERR_SQLITE_ERROR' || typeof e.errcode !== 'number') return 'other';
  const extended = e.errcode;
  if (extended === 2067 || extended === 1555) return 'unique';
  // 1811 (CONSTRAINT_TRIGGER) is how ON DELETE RESTRICT fails, with the foreign key's message.
  if (
    extended === 787 ||
    (extended === 1811 && typeof e.message === 'string' && /FOREIGN KEY/.test(e.message))
  )
    return 'foreignKey';
  if (
    extended === 1299 ||
    extended === 275 ||
    extended === 20 /* MISMATCH */ ||
    extended === 25 /* RANGE */
  )
    return 'invalid';
  const primary = extended & 0xff;
  // NOMEM, IOERR, CORRUPT, CANTOPEN
  if (primary === 7 || primary === 10 || primary === 11 || primary === 14) return 'unavailable';
  return 'other';
}

/** Why `file` cannot be a database file, checked before SQLite's own "unable to open database file". */
function unopenable(file: string): string | undefined {
  try {
    const stat = statSync(file, { throwIfNoEntry: false });
    if (stat?.isDirectory()) return `${file} is a directory, not a file`;
    if (stat) return undefined;
    const parent = statSync(path.dirname(file), { throwIfNoEntry: false });
    if (!parent)
      return `the directory ${path.dirname(file)} does not exist (SQLite creates the file, not its directory)`;
    if (!parent.isDirectory()) return `${path.dirname(file)} is a file, not a directory`;
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOTDIR'
      ? 'a part of the path is a file, not a directory'
      : (err as Error).message;
  }
}

/**
 * SQLite through Node's built-in `node:sqlite`, on the service's thread, never waiting on it for a
 * lock (driver.ts). Several processes may share a file: WAL lets readers run beside the
 * one writer, and a writer waits for another's lock on timers. Throws
 * `KIT_ERR_AUTOCRUD_SQLITE_UNSUPPORTED` at once on a runtime without node:sqlite, naming the Node
 * version needed.
 */
export function sqliteEngine(
  target: Extract<ConnectionTarget, { kind: 'sqlite' }>,
  settings: SqliteSettings,
): Engine {
  const sqlite = loadSqlite();
  if (!sqlite) {
    throw autoCrudErrors.error('KIT_ERR_AUTOCRUD_SQLITE_UNSUPPORTED', {
      url: target.redacted,
      node: process.version,
    });
  }
  let database: DatabaseSync | undefined;
  let closed = false;
  const opened = (): DatabaseSync => {
    if (!database)
      throw new KitError('KIT_ERR_AUTOCRUD_ENGINE', 'SQLite was used before it was opened.');
    return database;
  };
  const dialect: Dialect = {
    createAdapter: () => new TransactionalSqliteAdapter(),
    createDriver: () => new NodeSqliteDriver(opened, settings.acquireTimeoutMs),
    createQueryCompiler: () => new SqliteQueryCompiler(),
    createIntrospector: (db) => new SqliteIntrospector(db),
  };
  const db = new Kysely<DynamicDatabase>({ dialect });

  return {
    kind: 'sqlite',
    dialect: sqliteDialect,
    servesInstances: false,
    db,
    async open() {
      if (database) return;
      const problem = target.file === ':memory:' ? undefined : unopenable(target.file);
      if (problem)
        throw new KitError(
          'KIT_ERR_AUTOCRUD_ENGINE',
          `SQLite cannot open ${target.redacted}: ${problem}.`,
        );
      let connection: DatabaseSync | undefined;
      try {
        connection = new sqlite.DatabaseSync(target.file);
        // Foreign keys are off by default in SQLite; on, a violation is a 409 as on PostgreSQL.
        // busy_timeout 0: a lock held elsewhere is waited for on timers (driver.ts), never by sleeping on this thread.
        connection.exec('PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 0;');
        // ilike's Unicode-aware lower case (SQLite's own lower() and LIKE fold ASCII only); dialect.ts.
        connection.function(LOWER_FUNCTION, { deterministic: true }, lowerText);
        // WAL: readers beside the writer, also in other processes. Switching needs a moment without another writer.
        const wal = connection;
        if (target.file !== ':memory:')
          await untilFree(
            () => wal.exec('PRAGMA journal_mode = WAL;'),
            performance.now() + settings.connectTimeoutMs,
            settings.connectTimeoutMs,
          );
      } catch (err) {
        connection?.close();
        const reason =
          err instanceof DatabaseBusyError
            ? `another process held its lock for ${settings.connectTimeoutMs} ms (connectTimeoutMs)`
            : err instanceof Error
              ? err.message
              : String(err);
        throw new KitError(
          'KIT_ERR_AUTOCRUD_ENGINE',
          `SQLite could not open ${target.redacted}: ${reason}`,
          { cause: err },
        );
      }
      database = connection;
    },
    async probe() {
      // At once, beside whoever holds the connection: a read waits for no lock under WAL, so a
      // writer elsewhere (or one of ours waiting for it) does not make the check wait.
      try {
        opened().prepare('select 1').all();
      } catch (err) {
        throw err instanceof KitError
          ? err
          : new DatabaseUnavailableError(closed ? 'closed' : 'database unreadable', { cause: err });
      }
    },
    // Another connection to the file (the service's own waits for nothing longer than acquireTimeoutMs); in memory there is no other process.
    ...(target.file === ':memory:'
      ? {}
      : {
          migrationSession: (lockTimeoutMs: number) =>
            sqliteMigrationSession(() => new sqlite.DatabaseSync(target.file), lockTimeoutMs),
        }),
    classify: classifySqlite,
    reason: () => (closed ? 'closed' : 'database unreadable'),
    async close() {
      if (closed) return;
      closed = true;
      if (!database) return;
      await db.destroy();
      database.close();
    },
  };
}
