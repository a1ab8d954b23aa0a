// A list request in the mapper's terms (no HTTP here): conditions on fields, sort keys, a window.
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { Entity, EntityField } from '../entity.js';
import type { DynamicDatabase, SqlFlavour } from './engine.js';
import { contains, encodeValue } from './flavour.js';

/** The filter operators, as the list route's `filter[field][op]` names them. */
export const FILTER_OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'like', 'in', 'nin', 'null'] as const;
/** One filter operator. */
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/** A condition on one field. `value` is a scalar, a list for `in`/`nin`, a boolean for `null`. */
export interface Filter {
  readonly field: string;
  readonly op: FilterOperator;
  readonly value: unknown;
}

/** A sort key: a field, descending or not. */
export interface SortKey {
  readonly field: string;
  readonly descending: boolean;
}

/**
 * A page of a list: conditions (all must hold), sort keys (the primary key is appended as the
 * last key so that pages are stable), and a window.
 */
export interface ListOptions {
  readonly filters: readonly Filter[];
  readonly sort: readonly SortKey[];
  readonly offset: number;
  readonly limit: number;
}

/** Which operators apply to a field, by its type (and `like` only to free text). */
export function operatorsFor(field: EntityField): readonly FilterOperator[] {
  if (field.type === 'boolean') return ['eq', 'ne', 'null'];
  if (field.type === 'string' && field.format === 'uuid') return ['eq', 'ne', 'in', 'nin', 'null'];
  if (field.type === 'string') return FILTER_OPERATORS;
  return FILTER_OPERATORS.filter((op) => op !== 'like');
}

const COMPARISON = { eq: '=', ne: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** The expression builder of a query on one of the entity tables. */
export type Eb = ExpressionBuilder<DynamicDatabase, string>;

/** The WHERE condition of one filter; values are bound parameters, identifiers the entity's columns. */
export function condition(eb: Eb, flavour: SqlFlavour, field: EntityField, filter: Filter): Expression<SqlBool> {
  const column = sql.ref(field.column);
  switch (filter.op) {
    case 'like':
      return contains(flavour, field.column, String(filter.value));
    case 'null':
      return filter.value === true ? eb(column, 'is', null) : eb(column, 'is not', null);
    case 'in':
    case 'nin': {
      const values = (filter.value as readonly unknown[]).map((v) => encodeValue(flavour, v));
      return eb(column, filter.op === 'in' ? 'in' : 'not in', values);
    }
    default:
      return eb(column, COMPARISON[filter.op], encodeValue(flavour, filter.value));
  }
}

/** "Not soft-deleted": `false`, or NULL when the column allows it. */
export function notDeleted(eb: Eb, flavour: SqlFlavour, entity: Entity): Expression<SqlBool> | undefined {
  const field = entity.softDelete === undefined ? undefined : entity.field(entity.softDelete);
  if (!field) return undefined;
  const column = sql.ref(field.column);
  const isFalse = eb(column, '=', encodeValue(flavour, false));
  return field.nullable ? eb.or([isFalse, eb(column, 'is', null)]) : isFalse;
}
