// The connection a PostgreSQL migration runs on, and the lock that makes concurrent starters wait
// for the one that migrates: a connection of its own (no statement_timeout: a migration may
// rewrite a large table; the pool's connections keep theirs) holding a session advisory lock,
// waited for at most lockTimeoutMs (lock_timeout), released by the server if the process dies.
import { KitError } from '@kit/core';
import { Kysely, PostgresAdapter, PostgresDialect, sql, type DialectAdapter } from 'kysely';
import pg from 'pg';
import type { DynamicDatabase, MigrationSession } from '../../sql/engine.js';
import { SCHEMA_LOCK_KEY } from './dialect.js';

/** Kysely's PostgreSQL adapter with Kit's lock: bounded by `lockTimeoutMs`, its failure a KitError. */
class LockingPostgresAdapter extends PostgresAdapter {
  constructor(private readonly lockTimeoutMs: number) {
    super();
  }

  override async acquireMigrationLock(db: Kysely<unknown>): Promise<void> {
    await sql`select set_config('lock_timeout', ${`${this.lockTimeoutMs}ms`}, false)`.execute(db);
    try {
      await sql`select pg_advisory_lock(${sql.raw(SCHEMA_LOCK_KEY)})`.execute(db);
    } catch (err) {
      if ((err as { code?: unknown }).code !== '55P03') throw err;
      throw new KitError(
        'KIT_ERR_AUTOCRUD_MIGRATION',
        `Another instance has held the migration lock for ${this.lockTimeoutMs} ms (migrationLockTimeoutMs) and is still migrating; this one did not start. Raise migrationLockTimeoutMs for long migrations, or see pg_locks (locktype 'advisory', objid ${BigInt(SCHEMA_LOCK_KEY) & 0xffffffffn}) for who holds it.`,
        { cause: err },
      );
    } finally {
      await sql`reset lock_timeout`.execute(db).catch(() => undefined);
    }
  }

  override async releaseMigrationLock(db: Kysely<unknown>): Promise<void> {
    await sql`select pg_advisory_unlock(${sql.raw(SCHEMA_LOCK_KEY)})`.execute(db);
  }
}

/**
 * A PostgreSQL session of its own for migrations (`application_name` `kit-autocrud-migrate`).
 *
 * @example
 * ```ts
 * const session = postgresMigrationSession(url, 5000, 60_000);
 * try { await migrate(session.db); } finally { await session.close(); }
 * ```
 */
export function postgresMigrationSession(
  url: string,
  connectTimeoutMs: number,
  lockTimeoutMs: number,
): MigrationSession {
  const pool = new pg.Pool({
    connectionString: url,
    max: 1,
    connectionTimeoutMillis: connectTimeoutMs,
    application_name: 'kit-autocrud-migrate',
  });
  // A connection that breaks while idle must not end the process: the next statement fails instead.
  pool.on('error', () => undefined);
  class Dialect extends PostgresDialect {
    override createAdapter(): DialectAdapter {
      return new LockingPostgresAdapter(lockTimeoutMs);
    }
  }
  const db = new Kysely<DynamicDatabase>({ dialect: new Dialect({ pool }) });
  return { db, close: () => db.destroy() };
}
