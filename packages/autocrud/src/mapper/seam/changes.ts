// What a write tells the hooks that record it (hooks.ts): the changed rows, who caused them, the
// transaction they are written on, and a sink's SQL form. A change is committed with its write or
// not at all. When every in-transaction hook of a table has an SQL form (`ChangeSink.sql`), a
// single write on a dialect with writable CTEs is one statement that records its change itself
// (writes/inline-changes.ts). Knows nothing of HTTP: the route layer passes a `ChangeContext` in
// the call's options. See docs/decisions.md ("Change history", "One statement for a recorded
// single write").
import type { Expression } from 'kysely';
import type { ChangeContext, ChangeOperation, ChangeSql } from '../sql/change-sql.js';
import type { Db } from '../sql/engine.js';
import type { SqlDialect } from '../sql/dialect.js';
import type { Executor } from '../sql/statements.js';

// The change's forms a dialect builds (its SQL over a write's rows) live on the ground floor with the dialects.
export type { ChangeContext, ChangeOperation, ChangeSql } from '../sql/change-sql.js';

/**
 * One changed row, as the mapper knows it inside the write's transaction. Rows are in Kit's form
 * (field names, JSON values), as the repository answers them.
 *
 * @example
 * ```ts
 * const change: ChangeRecord = { entity: 'Product', key: 7, operation: 'patch', versionBefore: 3, versionAfter: 4, before: { id: 7, price: 40 }, after: { id: 7, price: 35 } };
 * ```
 */
export interface ChangeRecord {
  /** The entity's name. */
  readonly entity: string;
  /** The row's primary key, in Kit's form. */
  readonly key: unknown;
  readonly operation: ChangeOperation;
  /** The row's version before the write (entities with a version field; absent for a create). */
  readonly versionBefore?: number;
  /** The row's version after the write (absent for a delete). */
  readonly versionAfter?: number;
  /** The full row before the write: update, patch, delete, softDelete (and an upsert's merge). */
  readonly before?: Readonly<Record<string, unknown>>;
  /** The full row after the write: create, update, patch, softDelete. */
  readonly after?: Readonly<Record<string, unknown>>;
}

/**
 * The write's transaction as a sink sees it: statements run with `execute` (or `db`, a Kysely on
 * the same transaction) are committed with the write or rolled back with it.
 *
 * @example
 * ```ts
 * const sink: ChangeSink = async (tx, changes) => { await tx.execute(insertInto(tx.db, changes), ''); };
 * ```
 */
export interface ChangeTransaction {
  readonly execute: Executor;
  readonly dialect: SqlDialect;
  readonly db: Db;
}

/**
 * A sink's SQL form: the rows it writes for one change, as an `INSERT INTO table (columns)
 * SELECT <expressions over the change>` (see {@link ChangeSql}). A single write of a table whose
 * sinks all have one runs as one autocommitted statement on PostgreSQL and PGlite; any sink
 * without one keeps the write in a transaction that calls the sinks.
 *
 * @example
 * ```ts
 * const form: ChangeSinkSql = { table: 'audit_log', columns: (c) => ({ what: c.text(c.operation), row_key: c.keyText }) };
 * ```
 */
export interface ChangeSinkSql {
  /** The table the sink writes. */
  readonly table: string;
  /** Each column it sets, by name, as an expression over the change. */
  columns(change: ChangeSql): Readonly<Record<string, Expression<unknown>>>;
}

/**
 * Called inside the write's transaction, after the rows are written and before COMMIT, once per
 * statement batch (per table of a nested create), with the changes in the order they were made. A
 * throw rolls the write back, and the write rejects with it. A sink may carry its SQL form
 * (`sql`), which must record exactly what the function records.
 *
 * @example
 * ```ts
 * crud.repository(Product).addChangeSink(async (tx, changes, context) => {
 *   for (const c of changes) await tx.execute(sql`insert into audit_log (what) values (${c.operation})`.compile(tx.db), '');
 * });
 * ```
 */
export interface ChangeSink {
  (tx: ChangeTransaction, changes: readonly ChangeRecord[], context: ChangeContext): Promise<void>;
  /** The same records as one INSERT the mapper composes into a single write's statement (PostgreSQL). */
  readonly sql?: ChangeSinkSql;
}

/** The version a row holds, when the entity has a version field. */
export function versionOf(
  row: Readonly<Record<string, unknown>> | undefined,
  field: string | undefined,
): number | undefined {
  if (!row || field === undefined) return undefined;
  const v = row[field];
  return typeof v === 'number' ? v : undefined;
}
