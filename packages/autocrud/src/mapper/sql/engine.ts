import type { CompiledQuery } from 'kysely';
import type { Db } from './db.js';
import type { ErrorClass } from '../errors.js';
import type { SqlDialect } from './dialect.js';

/**
 * The database engines AutoCrud speaks (a connection string picks one).
 *
 * @example
 * ```ts
 * const engine: EngineKind = addKitAutoCrud(app, 'pglite:').engine;   // 'pglite'
 * ```
 */
export type EngineKind = 'postgres' | 'pglite' | 'sqlite';

export type { Db, DynamicDatabase } from './db.js';

/** A session migrations run on (migration-session.ts); `close()` ends what it opened. */
export interface MigrationSession {
  readonly db: Db;
  close(): Promise<void>;
}

/**
 * One database engine: a Kysely instance plus what only the engine knows (how to wait until it
 * accepts queries, how to read its errors, how to close it). Everything else is shared.
 */
export interface Engine {
  readonly kind: EngineKind;
  readonly dialect: SqlDialect;
  readonly db: Db;
  /**
   * Whether several service instances commonly serve one database of this engine (a server
   * anyone may connect to), so that what one instance signs with a key of its own (a list
   * cursor) another refuses, and what one keeps in its memory (idempotency keys) another does
   * not know: the start-up warns when no shared key or store is given.
   */
  readonly servesInstances: boolean;
  /**
   * Resolves once the engine accepts queries. Rejects with `DatabaseUnavailableError` when a
   * server cannot be reached (worth retrying), or with a `KitError` when it can never work
   * (for example a PGlite directory that cannot be opened).
   */
  open(): Promise<void>;
  /** What a driver error means to the caller. */
  classify(err: unknown): ErrorClass;
  /**
   * The health check's `SELECT 1`, by the engine's own way to the database, so that a busy
   * database does not read as a dead one: PostgreSQL over a connection of its own (a saturated
   * pool does not fail the check), PGlite after a short wait for its one session, SQLite at once
   * beside whoever holds its connection. Honours `signal` itself. Rejects with
   * `DatabaseUnavailableError`, or `DatabaseBusyError` when the database is up but taken (the check
   * reports it degraded). Engines without it are probed through an ordinary query.
   */
  probe?(signal?: AbortSignal): Promise<void>;
  /** A short, address-free reason for an `unavailable` error (`connection refused`). */
  reason(err: unknown): string;
  /**
   * Runs a compiled statement, prepared once per connection under `name` (unless empty), and
   * returns its rows. When `signal` aborts, a statement still waiting for a connection gives up
   * and a running one is cancelled; it rejects with `signal.reason`. Only engines whose driver
   * prepares statements have it; the others run the statement through `db`.
   */
  execute?(
    query: CompiledQuery,
    name: string,
    signal?: AbortSignal,
  ): Promise<Array<Record<string, unknown>>>;
  /**
   * A session of its own for applying migrations, whose migration lock waits at most
   * `lockTimeoutMs` for another instance's (migration-session.ts). Engines without it (PGlite,
   * one process per directory; SQLite in memory) migrate on `db`.
   */
  migrationSession?(lockTimeoutMs: number): MigrationSession;
  /** Closes connections; idempotent. */
  close(): Promise<void>;
}

/** The SQLSTATE classes and codes PostgreSQL and PGlite report, mapped for the caller. */
export function classifySqlState(code: string): ErrorClass | undefined {
  if (code === '23505') return 'unique';
  // 23001: ON DELETE RESTRICT (23503 is NO ACTION's, and an insert's).
  if (code === '23503' || code === '23001') return 'foreignKey';
  if (code === '23502' || code === '23514' || code.startsWith('22')) return 'invalid';
  // query_canceled: statement_timeout, or a cancel request
  if (code === '57014') return 'timeout';
  // connection exceptions, shutdown/startup, resource exhaustion, login and catalog
  if (
    code.startsWith('08') ||
    code.startsWith('53') ||
    /^57P0[1-4]$/.test(code) ||
    code.startsWith('28') ||
    code === '3D000'
  )
    return 'unavailable';
  return undefined;
}

/** An address-free reason for a SQLSTATE that means "unavailable". */
export function sqlStateReason(code: string): string | undefined {
  if (code === '57P01' || code === '57P02') return 'server shutting down';
  if (code === '57P03') return 'server starting up';
  if (code === '53300') return 'too many connections';
  if (code.startsWith('28')) return 'authentication failed';
  if (code === '3D000') return 'database does not exist';
  if (code.startsWith('53')) return 'server out of resources';
  if (code.startsWith('08')) return 'connection error';
  return undefined;
}
