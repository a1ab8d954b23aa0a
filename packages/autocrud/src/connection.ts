// Where the database is: a connection string (`postgres://…`, `pglite:…`, `sqlite:…`) or a PGlite
// instance the host made, turned into the engine the plugin's options configure.
import type { FastifyBaseLogger } from 'fastify';
import type { PGlite } from '@electric-sql/pglite';
import {
  parseConnectionString,
  pgliteInstanceTarget,
  type ConnectionTarget,
} from './mapper/engines/shared/connection-string.js';
import type { Engine } from './mapper/sql/engine.js';
import { createEngine as createEngineFor } from './mapper/engines/create.js';
import type { ResolvedAutoCrudOptions } from './options.js';

/**
 * A PGlite instance the host made, passed to `addKitAutoCrud` instead of a connection string.
 * Typed by shape, not by PGlite's class: PGlite's own declarations need `@types/emscripten`,
 * which it does not depend on, so naming its class here would break `skipLibCheck: false`
 * builds of every host; and two copies of PGlite may be installed.
 *
 * @example
 * ```ts
 * import { PGlite } from '@electric-sql/pglite';
 * const db = new PGlite('./data');
 * addKitAutoCrud(app, db);           // the host closes db itself
 * ```
 */
export interface PGliteInstance {
  query(...args: never[]): Promise<unknown>;
  readonly waitReady: Promise<void>;
  close(): Promise<void>;
}

/**
 * A PGlite instance the host made (duck-typed: two copies of PGlite may be installed).
 *
 * @example
 * ```ts
 * if (isPGlite(url)) log.info('the host closes its PGlite itself');
 * ```
 */
export function isPGlite(value: unknown): value is PGliteInstance {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as PGliteInstance).query === 'function' &&
    'waitReady' in value
  );
}

/**
 * The connection target of a connection string or a host's PGlite (a bad string throws
 * `KIT_ERR_INVALID_OPTION`).
 *
 * @example
 * ```ts
 * targetOf('postgres://app:secret@db/shop').redacted; // 'postgres://app:***@db/shop'
 * ```
 */
export function targetOf(url: string | URL | PGliteInstance): ConnectionTarget {
  if (isPGlite(url)) return pgliteInstanceTarget();
  return parseConnectionString(url instanceof URL ? url.href : url);
}

/**
 * The engine `url` picks, configured by the plugin's options; its idle faults and PGlite's start
 * are logged on `log`.
 *
 * @example
 * ```ts
 * const engine = createEngine('pglite:', resolveOptions({}), app.log);
 * ```
 */
export function createEngine(
  url: string | URL | PGliteInstance,
  options: ResolvedAutoCrudOptions,
  log: FastifyBaseLogger,
): Engine {
  return createEngineFor(targetOf(url), isPGlite(url) ? (url as unknown as PGlite) : undefined, {
    poolSize: options.poolSize,
    connectTimeoutMs: options.connectTimeoutMs,
    acquireTimeoutMs: options.acquireTimeoutMs,
    statementTimeoutMs: options.statementTimeoutMs,
    onIdleError: (reason) =>
      log.debug(
        { reason },
        'AutoCrud: a PostgreSQL connection failed outside a statement and was dropped',
      ),
    onStarted: (facts) => log.info(facts, 'AutoCrud: PGlite started in its worker thread'),
  });
}
