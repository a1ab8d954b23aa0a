// writeMigration: compares a database with the entities and writes the migration between them as
// a SQL file of the database's dialect, for a person to review and commit. See
// docs/autocrud.md ("Schema migrations") and docs/decisions.md ("Schema migrations").
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { KitError } from '@kit/core';
import type { Entity } from './entity.js';
import { parseConnectionString } from './mapper/engines/shared/connection-string.js';
import type { Engine } from './mapper/sql/engine.js';
import { planMigration } from './mapper/migrations/migration-plan.js';
import { pendingMigrations } from './mapper/migrations/migrations.js';
import { createEngine } from './mapper/engines/create.js';
import { withHistory } from './mapper/history/history.js';

/**
 * What {@link writeMigration} takes.
 *
 * @example
 * ```ts
 * const options: WriteMigrationOptions = { url: 'postgres://kit@localhost/shop', entities: [Book], dir: 'migrations', name: 'add_books' };
 * ```
 */
export interface WriteMigrationOptions {
  /** The database to compare with: one with every migration of `dir` applied (a development database). */
  url: string | URL;
  /** The entities the service declares (every one: a table no entity names is left alone). */
  entities: readonly Entity[];
  /** The migrations directory (`migrationsDir` of `addKitAutoCrud`); created when missing. */
  dir: string;
  /** Words after the timestamp in the file name (`add_books`); default: from the changes. */
  name?: string;
  /** The service turns the outbox on (`outbox` of `addKitAutoCrud`): the migration creates its tables when missing. */
  outbox?: boolean;
}

/**
 * The file {@link writeMigration} wrote.
 *
 * @example
 * ```ts
 * const written: WrittenMigration | undefined = await writeMigration({ url, entities, dir: 'migrations' });
 * if (written) console.log(written.file, written.changes);
 * ```
 */
export interface WrittenMigration {
  /** The file's path. */
  readonly file: string;
  /** The migration's name, as the database records it once applied (`20261124T101530_add_books`). */
  readonly name: string;
  /** What it does, one line per statement (`create table books`, `add column books.note`). */
  readonly changes: readonly string[];
  /** The file's content. */
  readonly sql: string;
}

function engineFor(url: string | URL): Engine {
  const target = parseConnectionString(url instanceof URL ? url.href : url);
  return createEngine(target, undefined, {
    poolSize: 1,
    connectTimeoutMs: 5000,
    acquireTimeoutMs: 10_000,
    statementTimeoutMs: 60_000,
    onIdleError: () => undefined,
  });
}

/** `YYYYMMDDTHHMMSS` in UTC: names sort in time order, whoever writes them where. */
function version(now: Date): string {
  return now.toISOString().replace(/[-:]/g, '').slice(0, 15);
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 60)
    .replace(/_+$/, '');
}

/**
 * Writes the migration that brings the database at `url` to `entities`: the tables it lacks and
 * the columns it lacks that are nullable or have a default, as the SQL `createTables` would run,
 * in a file `<timestamp>_<name>.<dialect>.sql` of `dir` (`postgres` for PostgreSQL and PGlite,
 * `sqlite` for SQLite) for a person to review and commit; `addKitAutoCrud(app, url, { migrate:
 * 'apply', migrationsDir })` applies it at start-up. Resolves `undefined` when the database
 * already fits. Never writes a destructive change: a dropped column, a type change, a NOT NULL
 * column without a default are refused, each named with what to do instead.
 *
 * @throws {KitError} `KIT_ERR_AUTOCRUD_MIGRATION` for a destructive change (nothing is written), or when `dir` holds migrations the database has not run (apply them first); `KIT_ERR_INVALID_OPTION` for a bad connection string.
 * @example
 * ```ts
 * // scripts/make-migration.ts: node --import tsx scripts/make-migration.ts add_published_at
 * import { writeMigration } from '@kit/autocrud';
 * import { Book, Product } from '../src/catalog/entities.js';
 *
 * const written = await writeMigration({ url: process.env.DATABASE_URL ?? 'pglite:./data', entities: [Book, Product], dir: 'migrations', name: process.argv[2] });
 * console.log(written ? `wrote ${written.file}: ${written.changes.join(', ')}` : 'the database already fits the entities');
 * ```
 */
export async function writeMigration(
  options: WriteMigrationOptions,
): Promise<WrittenMigration | undefined> {
  const { dir } = options;
  // An entity with history: true needs Kit's history table as well.
  const entities = withHistory(options.entities);
  const engine = engineFor(options.url);
  try {
    await engine.open();
    const existing = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    if (existing.length > 0) {
      const pending = await pendingMigrations(engine.db, dir, engine.dialect);
      if (pending.length > 0) {
        throw new KitError(
          'KIT_ERR_AUTOCRUD_MIGRATION',
          `${dir} holds migrations this database has not run (${pending.join(', ')}): a migration written now would repeat them. Apply them first (start the service on this database with migrate: 'apply'), then write the next one.`,
        );
      }
    }
    const plan = await planMigration(engine.db, engine.dialect, entities, {
      outbox: options.outbox === true,
    });
    if (plan.statements.length === 0) return undefined;
    const name = `${version(new Date())}_${slug(options.name ?? plan.changes.join(' ')) || 'migration'}`;
    const last = existing
      .filter((f) => f.endsWith('.sql'))
      .sort()
      .at(-1);
    if (last !== undefined && last >= name) {
      throw new KitError(
        'KIT_ERR_AUTOCRUD_MIGRATION',
        `${dir} holds ${last}, which sorts after ${name}: migrations run in name order, so a new one must sort last. Check the clock, or rename the later file if it has never run anywhere.`,
      );
    }

    const header = [
      `-- Kit AutoCrud migration ${name} (${engine.dialect.label}), written by writeMigration() from ${entities.map((e) => e.name).join(', ')}.`,
      "-- Review it, edit it if you need to (an index, a backfill), commit it. addKitAutoCrud(app, url, { migrate: 'apply', migrationsDir })",
      '-- applies it at start-up, in one transaction with the other migrations of that start. Once it has run anywhere, never change or',
      '-- rename it: write another.',
      ...plan.changes.map((c) => `--   ${c}`),
      ...(plan.untouched.length > 0
        ? [
            `-- Left alone (no field names them; Kit never drops a column): ${plan.untouched.join(', ')}`,
          ]
        : []),
    ];
    const sql = `${header.join('\n')}\n\n${plan.statements.map((s) => `${s};`).join('\n\n')}\n`;
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, `${name}.${engine.dialect.migrationTag}.sql`);
    await writeFile(file, sql, { flag: 'wx' });
    return { file, name, changes: plan.changes, sql };
  } finally {
    await engine.close();
  }
}
