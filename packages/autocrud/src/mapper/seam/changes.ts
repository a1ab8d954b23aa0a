// What a write tells the hooks that record it (hooks.ts): the changed rows, who caused them, the
// transaction they are written on, and a sink's SQL form. A change is committed with its write or
// not at all. When every in-transaction hook of a table has an SQL form (`ChangeSink.sql`), a
// single write on a dialect with writable CTEs is one statement that records its change itself
// (writes/inline-changes.ts). Knows nothing of HTTP: the route layer passes a `ChangeContext` in
// the call's options. See docs/decisions.md ("Change history", "One statement for a recorded
// single write").
import type { Expression } from 'kysely';
import type { Db } from '../sql/engine.js';
import type { SqlDialect } from '../sql/dialect.js';
import type { Executor } from '../sql/statements.js';

/**
 * The operation that changed a row.
 *
 * @example
 * ```ts
 * const op: ChangeOperation = 'softDelete';
 * ```
 */
export type ChangeOperation = 'create' | 'update' | 'patch' | 'delete' | 'softDelete';

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
 * Who and what caused a write: set by the route layer from the request, absent for plain
 * repository calls. `committed`, when given, is called after COMMIT with the number of changes
 * the write recorded (the request's audit entry counts them).
 *
 * @example
 * ```ts
 * await products.patch(7, { price: 35 }, { changeContext: { correlationId: req.id, subject: 'user-42' } });
 * ```
 */
export interface ChangeContext {
  /** The request's correlation id (its audit entry's). */
  readonly correlationId?: string;
  /** The authenticated subject (a JWT's `sub`). */
  readonly subject?: string;
  /** The W3C trace id of the request's span, when tracing is on. */
  readonly traceId?: string;
  /** Called once the write committed, with the number of changed rows it recorded. */
  readonly committed?: (changes: number) => void;
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
 * One changed row as SQL expressions, for a sink's SQL form ({@link ChangeSinkSql}): the mapper
 * composes the sink's INSERT into the write's own statement, so that a single write and its
 * change rows are one statement (PostgreSQL and PGlite). Every expression is over the row before
 * and after the write inside that statement, and gives what the JavaScript form of the same sink
 * computes from a {@link ChangeRecord}: values in Kit's form, as JSON text.
 *
 * @example
 * ```ts
 * const columns = (c: ChangeSql) => ({ entity: c.text(c.entity), row_key: c.keyText, what: c.text(c.operation) });
 * ```
 */
export interface ChangeSql {
  /** The entity's name. */
  readonly entity: string;
  readonly operation: ChangeOperation;
  /** The entity's fields, in order (the order of a row's keys in Kit's form). */
  readonly fields: readonly string[];
  /** The row's key as text (`String(key)`). */
  readonly keyText: Expression<string>;
  /** The row's key as JSON text (`JSON.stringify(key)`). */
  readonly keyJson: Expression<string>;
  /** The row's version before and after (NULL where the change has none). */
  readonly versionBefore: Expression<number | null>;
  readonly versionAfter: Expression<number | null>;
  /**
   * Among `names` (in their order), those the write changed: of an update, patch or soft delete
   * the fields whose value differs before and after (ordered as `changedOrder` says: `'fields'`
   * the entity's order; `'before-first'` those the row before holds first, then those only the
   * row after holds); of a create or delete every field the row holds. A `text[]`.
   */
  changed(names: readonly string[], order?: 'fields' | 'before-first'): Expression<string[]>;
  /**
   * The JSON text of an object of `which` row's values in Kit's form: the fields of `names` (in
   * that order) the row holds (an optional field's NULL is absent), those of `only` (a list made
   * by {@link ChangeSql.changed}) when given. NULL when the change has no such row.
   */
  object(which: 'before' | 'after', names: readonly string[], only?: { readonly names: readonly string[]; readonly order?: 'fields' | 'before-first' }): Expression<string | null>;
  /** A text constant. */
  text(value: string): Expression<string>;
  /** A value bound at each write from its context (a parameter of the statement). */
  bind(name: string, value: (context: ChangeContext) => unknown): Expression<unknown>;
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
export function versionOf(row: Readonly<Record<string, unknown>> | undefined, field: string | undefined): number | undefined {
  if (!row || field === undefined) return undefined;
  const v = row[field];
  return typeof v === 'number' ? v : undefined;
}
