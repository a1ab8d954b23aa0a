// A change as the dialects see it: the operation, who caused it, and a changed row as SQL
// expressions (`ChangeSql`), which a dialect that writes a single write and its changes as one
// statement builds over that statement's rows (`InlineChangeSql`). On the ground floor so that
// the engines' dialects build it without knowing the seam above them (seam/changes.ts re-exports
// these for the sinks).
import type { Expression, RawBuilder } from 'kysely';
import type { Entity } from '../../entity.js';

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
 * Who and what caused a write: set by the route layer from the request, absent for plain
 * repository calls. `committed`, when given, is called after COMMIT with the number of changes
 * the write recorded (the request's audit entry counts them).
 *
 * @example
 * ```ts
 * await products.patch(7, { price: 35 }, { changeContext: { correlationId: getRequestCorrelationId(reply), subject: 'user-42' } });
 * ```
 */
export interface ChangeContext {
  /** The request's correlation id (its audit entry's; in a route of your own, `getRequestCorrelationId(reply)`). */
  readonly correlationId?: string;
  /** The authenticated subject (a JWT's `sub`). */
  readonly subject?: string;
  /** The W3C trace id of the request's span, when tracing is on. */
  readonly traceId?: string;
  /** Called once the write committed, with the number of changed rows it recorded. */
  readonly committed?: (changes: number) => void;
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
  object(
    which: 'before' | 'after',
    names: readonly string[],
    only?: { readonly names: readonly string[]; readonly order?: 'fields' | 'before-first' },
  ): Expression<string | null>;
  /** A text constant. */
  text(value: string): Expression<string>;
  /** A value bound at each write from its context (a parameter of the statement). */
  bind(name: string, value: (context: ChangeContext) => unknown): Expression<unknown>;
}

/**
 * How a dialect with writable CTEs writes a single write's changes inside its statement
 * (writes/inline-changes.ts): the change as expressions over the CTE's rows before (`kit_old`,
 * columns `kit_o_<i>`) and after (`kit_new`, `kit_n_<i>`), and the casts and functions a sink's
 * SQL form needs, so that a sink spells no engine's SQL of its own.
 *
 * @example
 * ```ts
 * const c = dialect.changeSql?.over(entity, 'patch', (name) => sql`${new Slot(name)}`);
 * ```
 */
export interface InlineChangeSql {
  /** The change of `entity` by `operation`, each value a context binds read through `bind`. */
  over(
    entity: Entity,
    operation: ChangeOperation,
    bind: (name: string, value: (context: ChangeContext) => unknown) => Expression<unknown>,
  ): ChangeSql;
  /** A JSON text (or NULL) as a JSON column's value. */
  json(text: Expression<string | null>): RawBuilder<unknown>;
  /** A text list ({@link ChangeSql.changed}) as a JSON array column's value. */
  jsonArray(list: Expression<string[]>): RawBuilder<unknown>;
  /** A bound value as text (or NULL). */
  text(value: Expression<unknown>): RawBuilder<string | null>;
  /** A new random UUID as text, made by the database (a record's own key). */
  uuid(): RawBuilder<string>;
  /** A text list ({@link ChangeSql.changed}) as its JSON text (`["a","b"]`). */
  listText(list: Expression<string[]>): RawBuilder<string>;
  /** Whether a text list ({@link ChangeSql.changed}) holds any name. */
  nonEmpty(list: Expression<string[]>): RawBuilder<boolean>;
}
