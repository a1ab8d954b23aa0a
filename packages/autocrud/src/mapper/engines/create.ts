// The one place that picks an engine by the connection string's kind: everything past it asks the
// engine (and its dialect) what to do, never which one it is.
import type { PGlite } from '@electric-sql/pglite';
import type { Engine } from '../sql/engine.js';
import type { ConnectionTarget } from './shared/connection-string.js';
import { pgliteEngine, type PGliteSettings } from './pglite/engine.js';
import { postgresEngine, type PostgresSettings } from './postgres/engine.js';
import { sqliteEngine, type SqliteSettings } from './sqlite/engine.js';

/**
 * What every engine may be told: each takes the settings it uses.
 *
 * @example
 * ```ts
 * const settings: EngineSettings = { poolSize: 10, connectTimeoutMs: 5000, acquireTimeoutMs: 10_000, statementTimeoutMs: 30_000, onIdleError: () => undefined };
 * ```
 */
type EngineSettings = PostgresSettings & PGliteSettings & SqliteSettings;

/**
 * The engine for `target`: a PostgreSQL pool, an embedded PGlite (on `instance` when the host made
 * one), or a `node:sqlite` database. Nothing is opened until the engine's `open()`.
 *
 * @example
 * ```ts
 * const engine = createEngine(parseConnectionString('pglite:'), undefined, settings);
 * await engine.open();
 * ```
 */
export function createEngine(
  target: ConnectionTarget,
  instance: PGlite | undefined,
  settings: EngineSettings,
): Engine {
  switch (target.kind) {
    case 'postgres':
      return postgresEngine(target, settings);
    case 'pglite':
      return pgliteEngine(target, instance, settings);
    case 'sqlite':
      return sqliteEngine(target, settings);
  }
}
