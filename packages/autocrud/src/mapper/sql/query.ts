// A list request in the mapper's terms (no HTTP here): conditions on fields, sort keys, a window.
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { Entity, EntityField } from '../../entity.js';
import { valueType, FILTER_OPERATORS, type FilterOperator } from '../../values/kinds.js';
import type { DynamicDatabase } from './engine.js';
import { encodeValue, type SqlDialect } from './dialect.js';
import { Slot } from './statements.js';

export { FILTER_OPERATORS, type FilterOperator };

/**
 * A condition on one field. `value` is a scalar, a list for `in`/`nin`, a boolean for `null`.
 *
 * @example
 * ```ts
 * const cheap: Filter = { field: 'price', op: 'lt', value: 10 };
 * ```
 */
export interface Filter<F extends string = string> {
  readonly field: F;
  readonly op: FilterOperator;
  readonly value: unknown;
}

/**
 * A sort key: a field, descending or not.
 *
 * @example
 * ```ts
 * const newestFirst: SortKey = { field: 'createdAt', descending: true };
 * ```
 */
export interface SortKey<F extends string = string> {
  readonly field: F;
  readonly descending: boolean;
}

/**
 * What one repository call may touch. `where`: conditions (all must hold) every statement of the
 * call adds to its own; on a create, each `eq` condition sets its field (and any other operator is
 * refused: an INSERT has no row to test). `readOnly`: fields the call may not write (an input
 * naming one is refused; a replace leaves them as they are).
 *
 * @example
 * ```ts
 * // Only the caller's own orders, and never their status.
 * const scope: Scope = { where: [{ field: 'customerId', op: 'eq', value: 'alice' }], readOnly: ['status'] };
 * const mine = await orders.list({ filters: [], sort: [], offset: 0, limit: 20, scope });
 * await orders.patch(7, { note: 'leave at the door' }, { scope });   // undefined unless order 7 is alice's
 * ```
 */
export interface Scope<F extends string = string> {
  readonly where: readonly Filter<F>[];
  readonly readOnly?: readonly F[];
  /**
   * The rows of referenced entities a write may name, by entity: the caller's conditions on that
   * entity's rows (`null`: none of them). A reference to a row outside them is refused as a
   * reference to a missing row, so a write cannot tell another owner's row from no row.
   */
  readonly references?: ReadonlyMap<Entity, readonly Filter[] | null>;
}

/**
 * A page of a list: conditions (all must hold), sort keys (the primary key is appended as the
 * last key so that pages are stable, see `EntityRepository.order`), and a window: `offset` rows skipped,
 * or, for keyset paging, the rows `after` a position.
 *
 * @example
 * ```ts
 * const first = await products.list({ filters: [], sort: [{ field: 'price', descending: true }], offset: 0, limit: 20, count: false });
 * const last = first.rows.at(-1)!;
 * const second = await products.list({ filters: [], sort: [{ field: 'price', descending: true }], offset: 0, limit: 20, count: false, after: [last.price, last.id] });
 * ```
 */
export interface ListOptions<F extends string = string> {
  readonly filters: readonly Filter<F>[];
  /**
   * An OR group: the rows must also match at least one of these alternatives, each a list of
   * conditions that must all hold (`(a AND b) OR (c)`). At most {@link MAX_ALTERNATIVES}; an
   * alternative holds no OR group of its own.
   */
  readonly or?: ReadonlyArray<readonly Filter<F>[]>;
  readonly sort: readonly SortKey<F>[];
  readonly offset: number;
  readonly limit: number;
  /**
   * Keyset paging: the values of the last row of the previous page, one per key of
   * `repository.order(sort)` (the sort keys, then the primary key). The page holds the rows that
   * come after that position, whatever was inserted or deleted before it since.
   */
  readonly after?: readonly unknown[];
  /** Count the rows the filters match (`total`); default true. Counting a large table costs more than a page. */
  readonly count?: boolean;
  /** Gives up (and cancels the statements, where the engine can) when it aborts; the call rejects with its reason. */
  readonly signal?: AbortSignal;
  /** The caller's scope (see {@link Scope}): its conditions join the filters of the page, the count and the keyset. */
  readonly scope?: Scope<F>;
}

/** At most this many alternatives in a list's OR group. */
export const MAX_ALTERNATIVES = 10;

/** The order a list uses: the sort keys, then the primary key (ascending) unless it is one of them. */
export function orderOf(entity: Entity, sort: readonly SortKey[]): readonly SortKey[] {
  return sort.some((s) => s.field === entity.primaryKey)
    ? sort
    : [...sort, { field: entity.primaryKey, descending: false }];
}

/** Which operators apply to a field, by its kind (`like` and `ilike` only to free text). */
export function operatorsFor(field: EntityField): readonly FilterOperator[] {
  return valueType(field.kind).operators;
}

const COMPARISON = { eq: '=', ne: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** The expression builder of a query on one of the entity tables. */
export type Eb = ExpressionBuilder<DynamicDatabase, string>;

/**
 * The WHERE condition of one filter; values are bound parameters, identifiers the entity's columns
 * (qualified by `qualifier`, a table name or alias, where the statement reads more than one row source).
 */
export function condition(
  eb: Eb,
  dialect: SqlDialect,
  field: EntityField,
  filter: Filter,
  qualifier?: string,
): Expression<SqlBool> {
  const name = qualifier === undefined ? field.column : `${qualifier}.${field.column}`;
  const column = sql.ref(name);
  switch (filter.op) {
    case 'like':
    case 'ilike': {
      const insensitive = filter.op === 'ilike';
      return dialect.contains(
        name,
        filter.value instanceof Slot
          ? filter.value
          : dialect.containsPattern(String(filter.value), insensitive),
        insensitive,
      );
    }
    case 'null':
      return filter.value === true ? eb(column, 'is', null) : eb(column, 'is not', null);
    case 'in':
    case 'nin': {
      const values = (filter.value as readonly unknown[]).map((v) =>
        encodeValue(dialect, field, v),
      );
      return eb(column, filter.op === 'in' ? 'in' : 'not in', values);
    }
    default:
      return eb(column, COMPARISON[filter.op], encodeValue(dialect, field, filter.value));
  }
}

/** The OR group's condition: any alternative, each with all its conditions. */
export function anyOf(
  eb: Eb,
  dialect: SqlDialect,
  entity: Entity,
  alternatives: ReadonlyArray<readonly Filter[]>,
): Expression<SqlBool> | undefined {
  if (alternatives.length === 0) return undefined;
  return eb.or(
    alternatives.map((alternative) =>
      eb.and(
        alternative.map((f) => condition(eb, dialect, entity.field(f.field) as EntityField, f)),
      ),
    ),
  );
}

/** "Not soft-deleted": `false`, or NULL when the column allows it. */
export function notDeleted(
  eb: Eb,
  dialect: SqlDialect,
  entity: Entity,
): Expression<SqlBool> | undefined {
  const field = entity.softDelete === undefined ? undefined : entity.field(entity.softDelete);
  if (!field) return undefined;
  const column = sql.ref(field.column);
  const isFalse = eb(column, '=', encodeValue(dialect, field, false));
  return field.nullable ? eb.or([isFalse, eb(column, 'is', null)]) : isFalse;
}

/** A column that can hold NULL: a nullable field, or an optional one (absent from answers when NULL). */
function mayBeNull(field: EntityField): boolean {
  return field.nullable || !field.required;
}

/** `column` equal to `value` in the list order's sense: NULL equals NULL. */
function same(eb: Eb, column: ReturnType<typeof sql.ref>, value: unknown): Expression<SqlBool> {
  return value === null ? eb(column, 'is', null) : eb(column, '=', value);
}

/**
 * Rows strictly after `value` on one key. NULLs sort last ascending and first descending (as the
 * list orders them), so after a NULL ascending there is nothing, and after a NULL descending
 * every non-NULL value. `undefined`: no row.
 */
function beyond(
  eb: Eb,
  column: ReturnType<typeof sql.ref>,
  nullable: boolean,
  descending: boolean,
  value: unknown,
): Expression<SqlBool> | undefined {
  if (value === null) return descending ? eb(column, 'is not', null) : undefined;
  const strict = eb(column, descending ? '<' : '>', value);
  return !descending && nullable ? eb.or([strict, eb(column, 'is', null)]) : strict;
}

/**
 * The keyset condition: rows after the position `values` in `order` (see {@link orderOf}), i.e.
 * `k1 > v1 OR (k1 = v1 AND k2 > v2) OR ...` with each key's direction and NULL placement. The
 * first key's non-strict bound is added as its own conjunct, so that an index on it bounds the
 * scan instead of filtering from the start. Values are bound parameters.
 */
export function keyset(
  eb: Eb,
  dialect: SqlDialect,
  entity: Entity,
  order: readonly SortKey[],
  values: readonly unknown[],
): Expression<SqlBool> {
  const disjuncts: Expression<SqlBool>[] = [];
  const prefix: Expression<SqlBool>[] = [];
  let bound: Expression<SqlBool> | undefined;
  order.forEach((key, i) => {
    const field = entity.field(key.field) as EntityField;
    const column = sql.ref(field.column);
    const nullable = field.name !== entity.primaryKey && mayBeNull(field);
    const value = values[i] === null ? null : encodeValue(dialect, field, values[i]);
    const step = beyond(eb, column, nullable, key.descending, value);
    if (step) disjuncts.push(prefix.length === 0 ? step : eb.and([...prefix, step]));
    if (i === 0 && value !== null) {
      const notBefore = eb(column, key.descending ? '<=' : '>=', value);
      bound = !key.descending && nullable ? eb.or([notBefore, eb(column, 'is', null)]) : notBefore;
    } else if (i === 0 && !key.descending) {
      bound = eb(column, 'is', null);
    }
    prefix.push(same(eb, column, value));
  });
  const after = disjuncts.length === 0 ? sql<SqlBool>`1 = 0` : eb.or(disjuncts);
  return bound ? eb.and([bound, after]) : after;
}

/** A list's filters and keyset position with slots in place of their values, and what fills the slots. */
interface SlottedList {
  /** Names what the SQL depends on (fields, operators, list lengths, sort, where NULLs are): equal shapes, equal SQL. */
  readonly shape: string;
  readonly filters: readonly Filter[];
  /** The OR group's alternatives, slotted as `filters` are. */
  readonly or: ReadonlyArray<readonly Filter[]>;
  readonly after: readonly unknown[] | undefined;
  /** Every slot's value, as bound (see {@link condition} and {@link keyset}). */
  readonly values: Record<string, unknown>;
}

/**
 * The list's conditions for a statement compiled once per shape (see statements.ts). A NULL in
 * `after` and the `null` operator's value change the SQL, so they are part of the shape; every
 * other value fills a slot.
 */
export function slotList(
  dialect: SqlDialect,
  entity: Entity,
  filters: readonly Filter[],
  order: readonly SortKey[],
  after: readonly unknown[] | undefined,
  or: ReadonlyArray<readonly Filter[]> = [],
): SlottedList {
  const values: Record<string, unknown> = {};
  const shape: string[] = [];
  const slot = (f: Filter, id: string): Filter => {
    if (f.op === 'null') {
      shape.push(`${f.field}\u0000null\u0000${String(f.value)}`);
      return f;
    }
    if (f.op === 'in' || f.op === 'nin') {
      const list = f.value as readonly unknown[];
      shape.push(`${f.field}\u0000${f.op}\u0000${list.length}`);
      const field = entity.field(f.field) as EntityField;
      return {
        ...f,
        value: list.map(
          (v, j) => (
            (values[`${id}.${j}`] = encodeValue(dialect, field, v)),
            new Slot(`${id}.${j}`)
          ),
        ),
      };
    }
    shape.push(`${f.field}\u0000${f.op}`);
    values[id] =
      f.op === 'like' || f.op === 'ilike'
        ? dialect.containsPattern(String(f.value), f.op === 'ilike')
        : encodeValue(dialect, entity.field(f.field) as EntityField, f.value);
    return { ...f, value: new Slot(id) };
  };
  const slotted = filters.map((f, i) => slot(f, `f${i}`));
  const alternatives = or.map((alternative, a) => {
    shape.push(`\u0003${a}`);
    return alternative.map((f, i) => slot(f, `o${a}.${i}`));
  });
  shape.push(order.map((k) => (k.descending ? '-' : '') + k.field).join(','));
  const position = after?.map((v, i) =>
    v === null
      ? null
      : ((values[`a${i}`] = encodeValue(
          dialect,
          entity.field((order[i] as SortKey).field) as EntityField,
          v,
        )),
        new Slot(`a${i}`)),
  );
  shape.push(position === undefined ? '' : position.map((v) => (v === null ? 'n' : 'v')).join(''));
  return {
    shape: shape.join('\u0001'),
    filters: slotted,
    or: alternatives,
    after: position,
    values,
  };
}
