import { KitError } from '@kit/core';
import { autoCrudErrors } from '../errors.js';
import { Kysely, SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import type { DynamicDatabase, Engine } from './engine.js';
import type { ConnectionTarget } from './connection-string.js';
import type { ErrorClass } from './errors.js';

// The parts of node:sqlite used here (Node 20's type definitions have none).
interface StatementSync {
  all(...parameters: unknown[]): unknown[];
  run(...parameters: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  iterate(...parameters: unknown[]): IterableIterator<unknown>;
  columns?(): unknown[];
}
interface DatabaseSync {
  prepare(sql: string): StatementSync;
  exec(sql: string): void;
  close(): void;
}
type SqliteModule = { DatabaseSync: new (file: string) => DatabaseSync };

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

// Statements a query returns rows from, for SQLite builds whose StatementSync has no columns().
const READER = /^\s*(select|with|pragma|values|explain)\b|\breturning\b/i;
const STATEMENT_CACHE = 200;

/**
 * node:sqlite behind the interface Kysely's own SQLite dialect expects, with prepared statements
 * cached by SQL text (the builder produces the same text for the same query shape).
 */
function adapt(database: DatabaseSync): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    prepare(sql) {
      const cached = cache.get(sql);
      if (cached) return cached;
      const stmt = database.prepare(sql);
      const reader = typeof stmt.columns === 'function' ? stmt.columns().length > 0 : READER.test(sql);
      const statement: SqliteStatement = {
        reader,
        all: (parameters) => stmt.all(...parameters),
        run: (parameters) => stmt.run(...parameters),
        iterate: (parameters) => stmt.iterate(...parameters),
      };
      if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value as string);
      cache.set(sql, statement);
      return statement;
    },
    close() {
      cache.clear();
      database.close();
    },
  };
}

// SQLite result codes (https://sqlite.org/rescode.html): primary code in the low byte.
function classifySqlite(err: unknown): ErrorClass {
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown } | null;
  if (e?.code === 'ERR_INVALID_STATE' || (typeof e?.message === 'string' && /database is not open/i.test(e.message))) return 'unavailable';
  if (e?.code !== 'ERR_SQLITE_ERROR' || typeof e.errcode !== 'number') return 'other';
  const extended = e.errcode;
  if (extended === 2067 || extended === 1555) return 'unique';
  if (extended === 787) return 'foreignKey';
  if (extended === 1299 || extended === 275 || extended === 20 /* MISMATCH */ || extended === 25 /* RANGE */) return 'invalid';
  const primary = extended & 0xff;
  if (primary === 5 || primary === 6 || primary === 10 || primary === 13 || primary === 14) return 'unavailable';
  return 'other';
}

/**
 * SQLite through Node's built-in `node:sqlite`. Throws `KIT_ERR_AUTOCRUD_SQLITE_UNSUPPORTED` at
 * once on a runtime without it, naming the Node version needed.
 */
export function sqliteEngine(target: Extract<ConnectionTarget, { kind: 'sqlite' }>): Engine {
  const sqlite = loadSqlite();
  if (!sqlite) {
    throw autoCrudErrors.error('KIT_ERR_AUTOCRUD_SQLITE_UNSUPPORTED', { url: target.redacted, node: process.version });
  }
  let database: DatabaseSync | undefined;
  let closed = false;
  const db = new Kysely<DynamicDatabase>({
    dialect: new SqliteDialect({
      database: async () => {
        if (!database) throw new KitError('KIT_ERR_AUTOCRUD_ENGINE', 'SQLite was used before it was opened.');
        return adapt(database);
      },
    }),
  });

  return {
    kind: 'sqlite',
    flavour: 'sqlite',
    db,
    async open() {
      if (database) return;
      try {
        database = new sqlite.DatabaseSync(target.file);
        // Foreign keys are off by default in SQLite; on, a violation is a 409 as on PostgreSQL.
        // A writer from another process makes this one wait up to 5 s instead of failing at once.
        database.exec('PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;');
        if (target.file !== ':memory:') database.exec('PRAGMA journal_mode = WAL;');
      } catch (err) {
        throw new KitError('KIT_ERR_AUTOCRUD_ENGINE', `SQLite could not open ${target.redacted}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
    },
    classify: classifySqlite,
    reason: () => (closed ? 'closed' : 'database busy or unreadable'),
    async close() {
      if (closed) return;
      closed = true;
      if (database) await db.destroy();
    },
  };
}
