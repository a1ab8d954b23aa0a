import { KitError } from '@kit/core';
import type { PageLimits } from './routes/schemas.js';
import { resolveOutbox, type OutboxOptions, type ResolvedOutbox } from './outbox/options.js';

/**
 * How idempotent creates keep their keys (`idempotency: { ... }` of `addKitAutoCrud` or `@AutoCrud`).
 *
 * @example
 * ```ts
 * addKitAutoCrud(app, url, { idempotency: { ttlMs: 60 * 60 * 1000, reservationTtlMs: 10_000 } satisfies IdempotencyOptions });
 * ```
 */
export interface IdempotencyOptions {
  /** How long the answer of a create is replayed for its key (default 86,400,000: a day). */
  ttlMs?: number;
  /**
   * How long a key stays reserved while its create runs (default 30,000). A request holding it that
   * dies frees it after this; a create that takes longer than this may run twice. It must exceed
   * `acquireTimeoutMs + statementTimeoutMs` (start-up fails otherwise).
   */
  reservationTtlMs?: number;
}

/** Idempotent creates, resolved: off (`undefined`) or on with these TTLs. */
interface ResolvedIdempotency {
  readonly ttlMs: number;
  readonly reservationTtlMs: number;
}

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
  /**
   * `'apply'`: at start-up, before the schema check, run the migrations of `migrationsDir` that the
   * database has not run, under a lock (of N instances starting at once one migrates, the others
   * wait, then all serve). Default `'off'`: migrations are run some other way, or not at all.
   */
  migrate?: 'apply' | 'off';
  /** The directory of migration files (`<name>.postgres.sql`, `<name>.sqlite.sql`), as `writeMigration` writes them; needed with `migrate: 'apply'`. */
  migrationsDir?: string;
  /** How long an instance waits for another instance's migration before its start-up fails (default 120,000 ms). */
  migrationLockTimeoutMs?: number;
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
  /**
   * How long a query may wait for a connection: a free one of the pool (PostgreSQL), the single
   * session (PGlite) or the file's lock (SQLite). Past it the request answers 503 with
   * `Retry-After` and the database is not reported down: it is busy, not gone. Default 2000 ms.
   */
  acquireTimeoutMs?: number;
  /**
   * How long one statement may run before it is cancelled (the request answers 504, nothing of it
   * is written); on PostgreSQL it is the connections' `statement_timeout`, and a statement still
   * unanswered 2 s past it is taken for a hung server. Default 10,000 ms;
   * `idempotency.reservationTtlMs` must exceed `acquireTimeoutMs` + this.
   */
  statementTimeoutMs?: number;
  /** The `database` health check: name (default `database`), tags (default `['ready']`), timeout (default 800 ms). */
  healthCheck?: { name?: string; tags?: readonly string[]; timeoutMs?: number };
  /**
   * Exactly-once creates for every `@AutoCrud` class (a class's own `idempotency` wins): a `POST`
   * with `Idempotency-Key` runs at most once per key, through Kit's `idempotencyStore` (in memory,
   * or Redis with `@kit/store-redis`). `true`, or the key TTLs. Default off.
   */
  idempotency?: boolean | IdempotencyOptions;
  /**
   * `PUT` and `DELETE` need `If-Match` (428 without) on every class (a class's own
   * `requireIfMatch` wins); each such entity must declare a `version` field. Default false.
   */
  requireIfMatch?: boolean;
  /**
   * The key list cursors are signed with: at least 32 characters, the same on every instance that
   * serves the API (a cursor from an instance with another key is a 400). Default: random bytes of
   * this process, so cursors hold within one process only.
   */
  cursorSecret?: string;
  /**
   * The transactional outbox: each committed write is also a record written in its transaction,
   * delivered by one instance at a time to `kitAutoCrud.onChange` subscribers and `targets`
   * (docs/autocrud.md, "Outbox"). `true`, or its settings. Default off.
   */
  outbox?: boolean | OutboxOptions;
}

/** The options with defaults applied and checked. */
export interface ResolvedAutoCrudOptions {
  readonly createTables: boolean;
  /** Migrations applied at start-up (`migrate: 'apply'`), or undefined. */
  readonly migrations: { readonly dir: string; readonly lockTimeoutMs: number } | undefined;
  readonly limits: PageLimits;
  readonly requireAuthorization: boolean;
  readonly poolSize: number;
  readonly connectTimeoutMs: number;
  readonly acquireTimeoutMs: number;
  readonly statementTimeoutMs: number;
  readonly healthCheck: {
    readonly name: string;
    readonly tags: readonly string[];
    readonly timeoutMs: number;
  };
  readonly idempotency: ResolvedIdempotency | undefined;
  readonly requireIfMatch: boolean;
  readonly cursorSecret: string | undefined;
  readonly outbox: ResolvedOutbox | undefined;
}

function invalidOption(option: string, value: unknown, expected: string): KitError {
  const shown =
    typeof value === 'string'
      ? JSON.stringify(value)
      : typeof value === 'object'
        ? (JSON.stringify(value) ?? String(value)).slice(0, 120)
        : String(value);
  return new KitError(
    'KIT_ERR_INVALID_OPTION',
    `Invalid Kit option ${option} = ${shown}: expected ${expected}.`,
  );
}

function positiveInteger(
  option: string,
  value: unknown,
  fallback: number,
  prefix = 'addKitAutoCrud options.',
): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1)
    throw invalidOption(`${prefix}${option}`, v, 'a positive integer');
  return v;
}

function flag(option: string, value: unknown): boolean {
  if (value !== undefined && typeof value !== 'boolean')
    throw invalidOption(`addKitAutoCrud options.${option}`, value, 'true or false');
  return value === true;
}

const IDEMPOTENCY_DEFAULTS: ResolvedIdempotency = { ttlMs: 86_400_000, reservationTtlMs: 30_000 };

/**
 * `idempotency` of `addKitAutoCrud` (`where` names it in errors) or of a class, over `inherited`
 * (the global setting, for a class). `undefined` inherits; `false` is off.
 */
export function resolveIdempotency(
  where: string,
  value: unknown,
  inherited: ResolvedIdempotency | undefined,
): ResolvedIdempotency | undefined {
  if (value === undefined) return inherited;
  if (value === false) return undefined;
  if (value === true) return inherited ?? IDEMPOTENCY_DEFAULTS;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalidOption(where, value, 'true, false or { ttlMs?, reservationTtlMs? }');
  const given = value as IdempotencyOptions;
  const base = inherited ?? IDEMPOTENCY_DEFAULTS;
  return {
    ttlMs: positiveInteger(`${where}.ttlMs`, given.ttlMs, base.ttlMs, ''),
    reservationTtlMs: positiveInteger(
      `${where}.reservationTtlMs`,
      given.reservationTtlMs,
      base.reservationTtlMs,
      '',
    ),
  };
}

/**
 * A key's reservation must outlast the create it guards: a create may wait acquireTimeoutMs for a
 * connection and run statementTimeoutMs; a reservation that lapses first lets a retry create again.
 */
export function checkReservation(
  where: string,
  idempotency: ResolvedIdempotency | undefined,
  limits: { acquireTimeoutMs: number; statementTimeoutMs: number },
): void {
  if (idempotency === undefined) return;
  const longest = limits.acquireTimeoutMs + limits.statementTimeoutMs;
  if (idempotency.reservationTtlMs <= longest) {
    throw invalidOption(
      `${where}.reservationTtlMs`,
      idempotency.reservationTtlMs,
      `more than acquireTimeoutMs + statementTimeoutMs (${limits.acquireTimeoutMs} + ${limits.statementTimeoutMs} ms): a create still running when its key's reservation lapses could run twice`,
    );
  }
}

/** `requireIfMatch` (`where` names it in errors). */
export function requireIfMatchOption(where: string, value: unknown): boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean')
    throw invalidOption(where, value, 'true or false');
  return value;
}

function cursorSecret(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length < 32) {
    // Never echo a secret: only its length is shown.
    const shown =
      typeof value === 'string' ? `a string of ${value.length} characters` : typeof value;
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      `Invalid Kit option addKitAutoCrud options.cursorSecret = (${shown}): expected a string of at least 32 characters, the same on every instance.`,
    );
  }
  return value;
}

/** `migrate`, `migrationsDir`, `migrationLockTimeoutMs`. */
function migrations(
  options: KitAutoCrudOptions,
  createTables: boolean,
): ResolvedAutoCrudOptions['migrations'] {
  const { migrate, migrationsDir } = options;
  if (migrate !== undefined && migrate !== 'apply' && migrate !== 'off')
    throw invalidOption('addKitAutoCrud options.migrate', migrate, "'apply' or 'off'");
  const lockTimeoutMs = positiveInteger(
    'migrationLockTimeoutMs',
    options.migrationLockTimeoutMs,
    120_000,
  );
  if (migrate !== 'apply') return undefined;
  if (typeof migrationsDir !== 'string' || migrationsDir === '') {
    throw invalidOption(
      'addKitAutoCrud options.migrationsDir',
      migrationsDir,
      "the directory of migration files (migrate: 'apply' runs them)",
    );
  }
  if (createTables) {
    throw invalidOption(
      'addKitAutoCrud options.createTables',
      true,
      "false with migrate: 'apply' (tables createTables makes are outside the migrations, and the next migration that creates them would fail)",
    );
  }
  return { dir: migrationsDir, lockTimeoutMs };
}

/** Applies defaults; throws `KIT_ERR_INVALID_OPTION` naming the option and value. */
export function resolveOptions(options: KitAutoCrudOptions): ResolvedAutoCrudOptions {
  if (typeof options !== 'object' || options === null)
    throw invalidOption('addKitAutoCrud options', options, 'an object');
  const defaultPageSize = positiveInteger('defaultPageSize', options.defaultPageSize, 20);
  const maxPageSize = positiveInteger('maxPageSize', options.maxPageSize, 100);
  if (defaultPageSize > maxPageSize) {
    throw invalidOption(
      'addKitAutoCrud options.defaultPageSize',
      defaultPageSize,
      `at most maxPageSize (${maxPageSize})`,
    );
  }
  const health = options.healthCheck ?? {};
  if (typeof health !== 'object' || health === null)
    throw invalidOption(
      'addKitAutoCrud options.healthCheck',
      health,
      '{ name?, tags?, timeoutMs? }',
    );
  const limits = {
    acquireTimeoutMs: positiveInteger('acquireTimeoutMs', options.acquireTimeoutMs, 2000),
    statementTimeoutMs: positiveInteger('statementTimeoutMs', options.statementTimeoutMs, 10_000),
  };
  const idempotency = resolveIdempotency(
    'addKitAutoCrud options.idempotency',
    options.idempotency,
    undefined,
  );
  checkReservation('addKitAutoCrud options.idempotency', idempotency, limits);
  const createTables = flag('createTables', options.createTables);
  return {
    createTables,
    migrations: migrations(options, createTables),
    limits: {
      defaultPageSize,
      maxPageSize,
      maxPageNumber: positiveInteger('maxPageNumber', options.maxPageNumber, 1_000_000),
    },
    requireAuthorization: flag('requireAuthorization', options.requireAuthorization),
    poolSize: positiveInteger('poolSize', options.poolSize, 10),
    connectTimeoutMs: positiveInteger('connectTimeoutMs', options.connectTimeoutMs, 5000),
    ...limits,
    // name and tags are checked by the health-check builder, which names them in its error.
    healthCheck: {
      name: health.name ?? 'database',
      tags: health.tags ?? ['ready'],
      timeoutMs: positiveInteger('healthCheck.timeoutMs', health.timeoutMs, 800),
    },
    idempotency,
    requireIfMatch:
      requireIfMatchOption('addKitAutoCrud options.requireIfMatch', options.requireIfMatch) ??
      false,
    cursorSecret: cursorSecret(options.cursorSecret),
    outbox: resolveOutbox(options.outbox),
  };
}
