// The Kysely instance every engine gives: untyped tables, as entities are declared at run time.
import type { Kysely } from 'kysely';

/**
 * Tables by name, rows as records: entities are declared at run time, so the builder is untyped.
 *
 * @example
 * ```ts
 * const db = new Kysely<DynamicDatabase>({ dialect });
 * ```
 */
export type DynamicDatabase = Record<string, Record<string, unknown>>;

/**
 * Kysely over one of the engines.
 *
 * @example
 * ```ts
 * const rows = await db.selectFrom('books').selectAll().execute();
 * ```
 */
export type Db = Kysely<DynamicDatabase>;
