// The repository's arguments in Kit's form: a write's values (an explicit null kept apart from a
// field left out), a key, a list's filters and keyset position. The routes hand over values they
// have already checked; a host calling the repository directly gets a KitError naming what is
// wrong instead of a database error or a silently different value.
import { KitError } from '@kit/core';
import type { Entity, EntityField } from '../../entity.js';
import { valueType, ValueFault } from '../../values/kinds.js';
import { fieldValue } from '../../values/fields.js';
import { encodeValue, type SqlDialect } from './dialect.js';
import { MAX_ALTERNATIVES, type Filter, type ListOptions } from './query.js';

function invalid(where: string, detail: string): KitError {
  return new KitError('KIT_ERR_INVALID_ARGUMENT', `${where} ${detail}.`);
}

/** `value` in Kit's form for `field`, or a KitError naming `where`. */
function canonical(field: EntityField, value: unknown, where: string): unknown {
  const found = fieldValue(field, value);
  if (found instanceof ValueFault) throw invalid(where, found.detail);
  return found;
}

/**
 * The columns a write sets and their bound values. A field `input` leaves out (or sets to
 * `undefined`) is left to the column's default on create, and is reset to the schema's `default`,
 * else NULL, on replace; an explicit `null` is NULL, and refused for a field that is not nullable.
 */
export function writeValues(
  entity: Entity,
  dialect: SqlDialect,
  input: Readonly<Record<string, unknown>>,
  replace: boolean,
): Record<string, unknown> {
  checkInput(entity, input);
  const values: Record<string, unknown> = {};
  for (const name of entity.writable) {
    const field = entity.field(name) as EntityField;
    let value = Object.prototype.hasOwnProperty.call(input, name) ? input[name] : undefined;
    if (value === undefined) {
      if (!replace) continue;
      value = field.schema.default ?? null;
    } else if (value === null && !field.nullable) {
      throw invalid(`${entity.name}.${name}`, 'cannot be null: the field is not nullable');
    }
    values[field.column] =
      value === null
        ? null
        : encodeValue(dialect, field, canonical(field, value, `${entity.name}.${name}`));
  }
  return values;
}

/**
 * Refuses what the HTTP body schema refuses: an input that is not an object, a field the entity
 * does not have, and one it has that is not writable (the primary key, the version, the
 * soft-delete field, Kit's timestamps). Never dropped silently.
 */
function checkInput(
  entity: Entity,
  input: unknown,
): asserts input is Readonly<Record<string, unknown>> {
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw invalid(
      `${entity.name} input`,
      `must be an object of ${entity.name}'s writable fields (${entity.writable.join(', ')})`,
    );
  for (const name of Object.keys(input)) {
    if (entity.writable.includes(name)) continue;
    if (entity.field(name))
      throw invalid(
        `${entity.name}.${name}`,
        `is read-only: the writable fields are ${entity.writable.join(', ')}`,
      );
    throw invalid(
      `${entity.name}.${name}`,
      `is not a field of ${entity.name}; its writable fields are ${entity.writable.join(', ')}`,
    );
  }
}

/**
 * The columns a JSON Merge Patch (RFC 7396) sets: exactly the fields `patch` names, `null`
 * clearing a nullable one. A key that is not a writable field (unknown, read-only, `__proto__`)
 * is refused rather than dropped, so that a caller never believes a change was made that was not.
 * A field's value replaces the stored one whole (a JSON field is not merged member by member).
 */
export function patchValues(
  entity: Entity,
  dialect: SqlDialect,
  patch: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch))
    throw invalid(`patch(${entity.name})`, 'takes an object of the fields to change');
  const values: Record<string, unknown> = {};
  for (const name of Object.keys(patch)) {
    const field = entity.writable.includes(name) ? entity.field(name) : undefined;
    if (!field)
      throw invalid(
        `${entity.name}.${name}`,
        entity.field(name) ? 'is read-only' : `is not a field of ${entity.name}`,
      );
    const value = patch[name];
    if (value === undefined) continue;
    if (value === null && !field.nullable)
      throw invalid(`${entity.name}.${name}`, 'cannot be null: the field is not nullable');
    values[field.column] =
      value === null
        ? null
        : encodeValue(dialect, field, canonical(field, value, `${entity.name}.${name}`));
  }
  return values;
}

/** The primary key in Kit's form, or `undefined` when no row can have it (a lookup finds nothing). */
export function keyValue(pk: EntityField, key: unknown): unknown {
  const found = valueType(pk.kind).fromJson(key);
  return found instanceof ValueFault ? undefined : found;
}

function filterValue(entity: Entity, filter: Filter, where: string): Filter {
  if (filter === null || typeof filter !== 'object')
    throw invalid(where, 'must be an object { field, op, value }');
  const field = entity.field(filter.field);
  if (!field)
    throw invalid(
      where,
      `names ${JSON.stringify(filter.field)}, which is not a field of ${entity.name}`,
    );
  if (!valueType(field.kind).operators.includes(filter.op))
    throw invalid(
      where,
      `uses ${JSON.stringify(filter.op)}, which the ${field.kind} field ${field.name} does not take`,
    );
  if (filter.op === 'null') {
    if (typeof filter.value !== 'boolean')
      throw invalid(where, 'must have the value true (IS NULL) or false (IS NOT NULL)');
    return filter;
  }
  if (filter.op === 'in' || filter.op === 'nin') {
    if (!Array.isArray(filter.value) || filter.value.length === 0)
      throw invalid(where, 'must have a non-empty array of values');
    return { ...filter, value: filter.value.map((v: unknown) => canonical(field, v, where)) };
  }
  if (filter.op === 'like' || filter.op === 'ilike') {
    const found = valueType(field.kind).fromJson(filter.value);
    if (found instanceof ValueFault) throw invalid(where, found.detail);
    return { ...filter, value: found };
  }
  return { ...filter, value: canonical(field, filter.value, where) };
}

/** Conditions in Kit's form (see {@link listArguments}), named `where[i]` in a KitError. */
export function checkFilters(entity: Entity, filters: readonly Filter[], where: string): Filter[] {
  if (!Array.isArray(filters)) throw invalid(where, 'must be an array of filters');
  return filters.map((f, i) => filterValue(entity, f, `${where}[${i}]`));
}

/**
 * The list's filters and keyset position in Kit's form; a KitError for an unknown field, an
 * operator the field does not take, a value of the wrong kind, or a position of the wrong length.
 */
export function listArguments(
  entity: Entity,
  options: ListOptions,
  order: ListOptions['sort'],
): { filters: Filter[]; or: Filter[][]; after: unknown[] | undefined } {
  if (!Array.isArray(options.filters) || !Array.isArray(options.sort))
    throw invalid('list(options)', 'must have filters and sort arrays');
  for (const key of options.sort) {
    const field = entity.field(key.field);
    if (!field)
      throw invalid(
        'list({ sort })',
        `names ${JSON.stringify(key.field)}, which is not a field of ${entity.name}`,
      );
    if (field.kind === 'json')
      throw invalid('list({ sort })', `names the JSON field ${field.name}, which has no order`);
  }
  const filters = options.filters.map((f, i) => filterValue(entity, f, `list({ filters[${i}] })`));
  const alternatives = options.or ?? [];
  if (!Array.isArray(alternatives) || alternatives.length > MAX_ALTERNATIVES)
    throw invalid('list({ or })', `must be an array of at most ${MAX_ALTERNATIVES} alternatives`);
  const or = alternatives.map((alternative, a) => {
    if (!Array.isArray(alternative) || alternative.length === 0)
      throw invalid(
        `list({ or[${a}] })`,
        'must be a non-empty array of filters (all of which must hold)',
      );
    return alternative.map((f: Filter, i) => filterValue(entity, f, `list({ or[${a}][${i}] })`));
  });
  if (options.after === undefined) return { filters, or, after: undefined };
  if (options.after.length !== order.length) {
    throw invalid(
      'list({ after })',
      `has ${options.after.length} values where the order has ${order.length} (the sort keys, then the primary key)`,
    );
  }
  const after = options.after.map((v, i) =>
    v === null
      ? null
      : canonical(
          entity.field((order[i] as { field: string }).field) as EntityField,
          v,
          `list({ after[${i}] })`,
        ),
  );
  return { filters, or, after };
}
