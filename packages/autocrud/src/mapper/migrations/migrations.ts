// Migration files and how they are applied: SQL files per dialect in one directory
// (`20261124T101530_add_books.postgres.sql`), run in name order by Kysely's Migrator, which keeps
// the applied ones in `kit_autocrud_migration` and runs a whole batch in one transaction (DDL is
// transactional on PostgreSQL and SQLite alike), under a lock that makes concurrent starters wait:
// a PostgreSQL advisory lock on a connection of the migration's own, SQLite's write lock
// (BEGIN IMMEDIATE). See docs/decisions.md ("Schema migrations").
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Migrator, sql, type Migration, type MigrationProvider } from 'kysely';
import { KitError } from '@kit/core';
import type { Db, Engine } from '../sql/engine.js';
import type { SqlDialect } from '../sql/dialect.js';
import { DatabaseBusyError } from '../errors.js';

/** Kit's migration bookkeeping tables (not Kysely's defaults, so a host's own Kysely migrations stay apart). */
const MIGRATION_TABLE = 'kit_autocrud_migration';
const MIGRATION_LOCK_TABLE = 'kit_autocrud_migration_lock';

/** A file of `dialect` in a migrations directory: `<name>.<dialect>.sql`. */
const FILE = /^([A-Za-z0-9][A-Za-z0-9_.-]*?)\.(postgres|sqlite)\.sql$/;

/**
 * The statements of a SQL file: split at each `;` outside quotes, dollar quotes and comments (and,
 * on SQLite, inside a trigger's BEGIN … END), so that engines which take one statement per call
 * (PGlite, node:sqlite through Kysely) run them one by one.
 */
export function splitStatements(text: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let i = 0;
  const push = (end: number) => {
    const statement = text.slice(start, end).trim();
    if (statement.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, '').trim() !== '')
      statements.push(statement);
  };
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '-' && text[i + 1] === '-') {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end + 1;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 2;
    } else if (c === "'" || c === '"' || c === '`') {
      // A doubled quote inside is an escaped one: the scan just reopens.
      const end = text.indexOf(c, i + 1);
      i = end === -1 ? text.length : end + 1;
    } else if (c === '$') {
      const tag = /^\$[A-Za-z_]?[A-Za-z0-9_]*\$/.exec(text.slice(i))?.[0];
      if (tag) {
        const end = text.indexOf(tag, i + tag.length);
        i = end === -1 ? text.length : end + tag.length;
      } else i++;
    } else if (c === ';') {
      const sofar = text.slice(start, i).replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, '');
      if (/^\s*create\s+(temp\w*\s+)?trigger\b/i.test(sofar) && !/\bend\s*$/i.test(sofar)) {
        i++;
        continue;
      }
      push(i);
      start = ++i;
    } else i++;
  }
  push(text.length);
  return statements;
}

/** The migrations of `dialect` in `dir`, by name (the file name without `.<dialect>.sql`). */
async function readMigrations(
  dir: string,
  dialect: SqlDialect,
): Promise<Record<string, Migration>> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    throw new KitError(
      'KIT_ERR_AUTOCRUD_MIGRATION',
      `The migrations directory ${dir} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}): create it, or correct migrationsDir.`,
      { cause: err },
    );
  }
  const migrations: Record<string, Migration> = {};
  for (const file of names.sort()) {
    const match = FILE.exec(file);
    if (!match || match[2] !== dialect.migrationTag) continue;
    const text = await readFile(path.join(dir, file), 'utf8');
    const statements = splitStatements(text);
    migrations[match[1] as string] = {
      async up(db) {
        for (const [index, statement] of statements.entries()) {
          try {
            await sql.raw(statement).execute(db);
          } catch (err) {
            throw new MigrationStatementError(file, index + 1, statements.length, err);
          }
        }
      },
    };
  }
  return migrations;
}

/** A statement of a migration file that failed: which file, which statement, and the database's own error. */
class MigrationStatementError extends Error {
  constructor(
    readonly file: string,
    readonly statement: number,
    readonly of: number,
    override readonly cause: unknown,
  ) {
    const code = (cause as { code?: unknown } | null)?.code;
    super(
      `statement ${statement} of ${of} in ${file} failed: ${cause instanceof Error ? cause.message : String(cause)}${typeof code === 'string' ? ` (${code})` : ''}`,
    );
  }
}

/** Kysely's Migrator over `db` for the migrations of `dialect` in `dir`, keeping its books in Kit's tables. */
function migrator(db: Db, dir: string, dialect: SqlDialect): Migrator {
  const provider: MigrationProvider = { getMigrations: () => readMigrations(dir, dialect) };
  return new Migrator({
    db,
    provider,
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
  });
}

/** The migrations in `dir` the database has not run yet, by name. */
export async function pendingMigrations(
  db: Db,
  dir: string,
  dialect: SqlDialect,
): Promise<string[]> {
  const migrations = await migrator(db, dir, dialect).getMigrations();
  return migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
}

/** What `applyMigrations` did: the migrations it ran, in order (empty when another instance had run them). */
interface AppliedMigrations {
  readonly applied: readonly string[];
}

/**
 * Runs the migrations of `dir` the database has not run, in one transaction, under the migration
 * lock of the session `db` came from. Throws `KIT_ERR_AUTOCRUD_MIGRATION` naming the migration and
 * statement that failed (nothing of the batch is applied then), or a lock that was not free in time.
 */
async function applyMigrations(
  db: Db,
  dir: string,
  dialect: SqlDialect,
  lockTimeoutMs: number,
): Promise<AppliedMigrations> {
  const { error, results } = await migrator(db, dir, dialect).migrateToLatest();
  if (error === undefined) return { applied: (results ?? []).map((r) => r.migrationName) };
  if (error instanceof KitError) throw error;
  if (error instanceof DatabaseBusyError) {
    throw new KitError(
      'KIT_ERR_AUTOCRUD_MIGRATION',
      `Another process has held the database's write lock for ${lockTimeoutMs} ms (migrationLockTimeoutMs), migrating or writing; this one did not start. Raise migrationLockTimeoutMs for long migrations.`,
      { cause: error },
    );
  }
  const failed = results?.find((r) => r.status === 'Error');
  if (failed) {
    const why =
      error instanceof MigrationStatementError
        ? error.message
        : error instanceof Error
          ? error.message
          : String(error);
    const before = results?.filter((r) => r.status === 'Success').map((r) => r.migrationName) ?? [];
    throw new KitError(
      'KIT_ERR_AUTOCRUD_MIGRATION',
      `Migration ${failed.migrationName} failed: ${why}. It was rolled back${before.length > 0 ? `, with the migrations run before it in this start (${before.join(', ')})` : ''}: the database is as it was. Fix the migration (or the database) and start again.`,
      { cause: error instanceof MigrationStatementError ? error.cause : error },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  if (/corrupted migrations/.test(message)) {
    throw new KitError(
      'KIT_ERR_AUTOCRUD_MIGRATION',
      `The migrations in ${dir} do not match the ones this database has run (${message.replace(/^corrupted migrations: /, '')}). A migration that has run is never renamed or removed, and a new one sorts after every one that has run: name it with a later timestamp.`,
      { cause: error },
    );
  }
  throw error;
}

/**
 * Applies the migrations of `dir` on `engine` at start-up: on a session of the engine's own for
 * migrations where it has one (waiting up to `lockTimeoutMs` for another instance's), else on its
 * Kysely instance.
 */
export async function migrateEngine(
  engine: Engine,
  dir: string,
  lockTimeoutMs: number,
): Promise<AppliedMigrations> {
  const session = engine.migrationSession?.(lockTimeoutMs);
  try {
    return await applyMigrations(session?.db ?? engine.db, dir, engine.dialect, lockTimeoutMs);
  } finally {
    await session?.close();
  }
}
