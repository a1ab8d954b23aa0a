// A call's scope: the conditions an authorization rule puts on every statement of one repository
// call (the rows a caller may see and change), and the fields it may not write. Applied inside
// each generated statement (WHERE of a read, an UPDATE or a DELETE, the values of an INSERT),
// never by filtering rows after reading them. Knows nothing of tokens or HTTP: the routes turn a
// caller's claims into a Scope.
import { KitError } from '@kit/core';
import type { Expression, SqlBool } from 'kysely';
import type { Entity, EntityField } from '../../entity.js';
import { checkFilters } from './arguments.js';
import { encodeValue, type SqlDialect } from './dialect.js';
import { condition, slotList, type Eb, type Filter, type Scope } from './query.js';
import { Slot } from './statements.js';

export type { Scope };

/** The scope's conditions in Kit's form (a KitError for one that does not fit the entity); empty without a scope. */
export function scopeFilters(entity: Entity, scope: Scope | undefined): readonly Filter[] {
  return scope === undefined || scope.where.length === 0
    ? []
    : checkFilters(entity, scope.where, 'scope.where');
}

/** The WHERE conditions of checked scope filters (see {@link scopeFilters}), on columns qualified by `qualifier` when given. */
export function scopeConditions(
  eb: Eb,
  dialect: SqlDialect,
  entity: Entity,
  filters: readonly Filter[],
  qualifier?: string,
): Expression<SqlBool>[] {
  return filters.map((f) =>
    condition(eb, dialect, entity.field(f.field) as EntityField, f, qualifier),
  );
}

/** Checked scope filters with slots named `<prefix>…` in place of their values, for a statement compiled once per shape. */
export interface SlottedScope {
  /** Equal shapes, equal SQL (the fields, operators and list lengths). */
  readonly shape: string;
  readonly filters: readonly Filter[];
  readonly values: Record<string, unknown>;
}

const NO_SCOPE: SlottedScope = { shape: '', filters: [], values: {} };

/** The scope's checked filters slotted under `prefix` (see {@link SlottedScope}); an empty one without filters. */
export function slotScope(
  dialect: SqlDialect,
  entity: Entity,
  filters: readonly Filter[],
  prefix: string,
): SlottedScope {
  if (filters.length === 0) return NO_SCOPE;
  const slotted = slotList(dialect, entity, filters, [], undefined);
  const rename = (v: unknown): unknown =>
    v instanceof Slot ? new Slot(`${prefix}${v.name}`) : Array.isArray(v) ? v.map(rename) : v;
  const values: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(slotted.values)) values[`${prefix}${name}`] = value;
  return {
    shape: slotted.shape,
    filters: slotted.filters.map((f) => ({ ...f, value: rename(f.value) })),
    values,
  };
}

/**
 * The columns a scope fixes on a write: each `eq` condition's field to its value. A create must
 * land inside the caller's scope, and an update must not move the row out of it (as PostgreSQL's
 * `WITH CHECK` does for a row-level security policy). Other operators have no value to set: on a
 * create they are refused (`KIT_ERR_INVALID_ARGUMENT`), on an update they only restrict the row.
 */
export function scopeValues(
  entity: Entity,
  dialect: SqlDialect,
  filters: readonly Filter[],
  creating: boolean,
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const f of filters) {
    const field = entity.field(f.field) as EntityField;
    if (f.op === 'eq')
      values[field.column] = f.value === null ? null : encodeValue(dialect, field, f.value);
    else if (creating)
      throw new KitError(
        'KIT_ERR_INVALID_ARGUMENT',
        `scope.where: a create takes only eq conditions (they set the field), not ${f.field} ${f.op}.`,
      );
  }
  return values;
}

/** Refuses an input that names a field the scope makes read-only. */
export function checkReadOnly(
  entity: Entity,
  scope: Scope | undefined,
  input: Readonly<Record<string, unknown>>,
): void {
  const readOnly = scope?.readOnly;
  if (!readOnly || readOnly.length === 0 || typeof input !== 'object' || input === null) return;
  for (const name of readOnly) {
    if (Object.prototype.hasOwnProperty.call(input, name) && input[name] !== undefined)
      throw new KitError(
        'KIT_ERR_INVALID_ARGUMENT',
        `${entity.name}.${name} is read-only in this scope.`,
      );
  }
}

/** The columns of `values` a scope's read-only fields must not touch, removed (a replace keeps them as they are). */
export function withoutReadOnly(
  entity: Entity,
  scope: Scope | undefined,
  values: Record<string, unknown>,
): Record<string, unknown> {
  for (const name of scope?.readOnly ?? []) {
    const field = entity.field(name);
    if (field) delete values[field.column];
  }
  return values;
}
