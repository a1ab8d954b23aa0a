// PGlite is PostgreSQL compiled to WebAssembly: it speaks PostgreSQL's SQL, with ICU, writable
// CTEs and the same catalogs, so its dialect is PostgreSQL's.
import type { SqlDialect } from '../../sql/dialect.js';
import { postgresDialect } from '../postgres/dialect.js';

/**
 * PGlite's dialect: PostgreSQL's.
 *
 * @example
 * ```ts
 * const engine: Engine = { kind: 'pglite', dialect: pgliteDialect, db, ... };
 * ```
 */
export const pgliteDialect: SqlDialect = postgresDialect;
