import { KitError } from '@kit/core';
import type { PageLimits } from './routes/schemas.js';

/**
 * Options of `addKitAutoCrud`.
 *
 * @example
 * ```ts
 * addKitAutoCrud(app, process.env.DATABASE_URL ?? 'pglite:', {
 *   createTables: process.env.NODE_ENV === 'development',
 *   defaultPageSize: 25,
 *   maxPageSize: 200,
 *   requireAuthorization: true,
 *   poolSize: 20,
 *   healthCheck: { timeoutMs: 500 },
 * } satisfies KitAutoCrudOptions);
 * ```
 */
export interface KitAutoCrudOptions {
  /** Create missing entity tables at start-up (default false: a missing table or column fails start-up). For development and samples. */
  createTables?: boolean;
  /** Rows per page when the request names none (default 20). */
  defaultPageSize?: number;
  /** The largest page; a larger `pageSize` is clamped to it (default 100). */
  maxPageSize?: number;
  /** The highest `page` accepted; above it is 400 (default 1,000,000). */
  maxPageNumber?: number;
  /** Every generated route requires a bearer token (`app.kitAuthenticate`, from `opt.configureJwt`). Default false, with a start-up warning per class. */
  requireAuthorization?: boolean;
  /** PostgreSQL connections in the pool (default 10; `postgres://` only). */
  poolSize?: number;
  /** How long start-up waits for a PostgreSQL server, and the limit of each connection attempt (default 5000 ms). */
  connectTimeoutMs?: number;
  /** The `database` health check: name (default `database`), tags (default `['ready']`), timeout (default 800 ms). */
  healthCheck?: { name?: string; tags?: readonly string[]; timeoutMs?: number };
}

/** The options with defaults applied and checked. */
export interface ResolvedAutoCrudOptions {
  readonly createTables: boolean;
  readonly limits: PageLimits;
  readonly requireAuthorization: boolean;
  readonly poolSize: number;
  readonly connectTimeoutMs: number;
  readonly healthCheck: { readonly name: string; readonly tags: readonly string[]; readonly timeoutMs: number };
}

function invalidOption(option: string, value: unknown, expected: string): KitError {
  const shown = typeof value === 'string' ? JSON.stringify(value) : typeof value === 'object' ? (JSON.stringify(value) ?? String(value)).slice(0, 120) : String(value);
  return new KitError('KIT_ERR_INVALID_OPTION', `Invalid Kit option ${option} = ${shown}: expected ${expected}.`);
}

function positiveInteger(option: string, value: unknown, fallback: number): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) throw invalidOption(`addKitAutoCrud options.${option}`, v, 'a positive integer');
  return v;
}

function flag(option: string, value: unknown): boolean {
  if (value !== undefined && typeof value !== 'boolean') throw invalidOption(`addKitAutoCrud options.${option}`, value, 'true or false');
  return value === true;
}

/** Applies defaults; throws `KIT_ERR_INVALID_OPTION` naming the option and value. */
export function resolveOptions(options: KitAutoCrudOptions): ResolvedAutoCrudOptions {
  if (typeof options !== 'object' || options === null) throw invalidOption('addKitAutoCrud options', options, 'an object');
  const defaultPageSize = positiveInteger('defaultPageSize', options.defaultPageSize, 20);
  const maxPageSize = positiveInteger('maxPageSize', options.maxPageSize, 100);
  if (defaultPageSize > maxPageSize) {
    throw invalidOption('addKitAutoCrud options.defaultPageSize', defaultPageSize, `at most maxPageSize (${maxPageSize})`);
  }
  const health = options.healthCheck ?? {};
  if (typeof health !== 'object' || health === null) throw invalidOption('addKitAutoCrud options.healthCheck', health, '{ name?, tags?, timeoutMs? }');
  return {
    createTables: flag('createTables', options.createTables),
    limits: { defaultPageSize, maxPageSize, maxPageNumber: positiveInteger('maxPageNumber', options.maxPageNumber, 1_000_000) },
    requireAuthorization: flag('requireAuthorization', options.requireAuthorization),
    poolSize: positiveInteger('poolSize', options.poolSize, 10),
    connectTimeoutMs: positiveInteger('connectTimeoutMs', options.connectTimeoutMs, 5000),
    // name and tags are checked by the health-check builder, which names them in its error.
    healthCheck: { name: health.name ?? 'database', tags: health.tags ?? ['ready'], timeoutMs: positiveInteger('healthCheck.timeoutMs', health.timeoutMs, 800) },
  };
}
