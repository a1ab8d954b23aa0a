// The JSON Schemas of the generated routes: one component per entity (the row) and one for its
// request body, the list's query string (one parameter per field and operator, so generated
// clients get them typed), path parameters and problem answers.
import type { Entity, EntityField } from '../entity.js';
import { operatorsFor, type FilterOperator } from '../mapper/query.js';

/** Paging limits of the list route. */
export interface PageLimits {
  readonly defaultPageSize: number;
  readonly maxPageSize: number;
  readonly maxPageNumber: number;
}

/** At most this many values in an `in`/`nin` list. */
export const MAX_LIST_VALUES = 100;
/** At most this many characters in one filter value. */
export const MAX_VALUE_LENGTH = 200;

type Schema = Record<string, unknown>;

/** The entity's component schema (`Product`): the row as answers carry it. */
export function rowSchema(entity: Entity): Schema {
  return { ...entity.schema, $id: entity.name, title: entity.name };
}

/** The name of the request-body component (`ProductInput`). */
export function inputName(entity: Entity): string {
  return `${entity.name}Input`;
}

/** The request-body component: the writable fields, nothing else. */
export function inputSchema(entity: Entity): Schema {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const name of entity.writable) {
    const field = entity.field(name) as EntityField;
    properties[name] = field.schema;
    // A field with a default may be left out: the column's default fills it.
    if (field.required && !('default' in field.schema)) required.push(name);
  }
  return {
    $id: inputName(entity),
    title: inputName(entity),
    description: `The fields of ${entity.name} a client writes.`,
    type: 'object',
    additionalProperties: false,
    ...(required.length > 0 ? { required } : {}),
    properties,
  };
}

/** A reference to a component schema added to the group with `addSchema`. */
export function ref(id: string): Schema {
  return { $ref: `${id}#` };
}

const SAFE = Number.MAX_SAFE_INTEGER;

/** The schema of one value of a field in a query or path: its type only, not its constraints (a filter may ask for any value). */
export function valueSchema(field: EntityField): Schema {
  switch (field.type) {
    case 'integer':
      return { type: 'integer', minimum: -SAFE, maximum: SAFE };
    case 'number':
      return { type: 'number' };
    case 'boolean':
      return { type: 'boolean' };
    case 'string':
      return { type: 'string', maxLength: MAX_VALUE_LENGTH, ...(field.format ? { format: field.format } : {}) };
  }
}

const NUMBER = String.raw`-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?`;

/** A regular expression for a comma-separated list of 1 to 100 values of the field's type. */
function listPattern(field: EntityField): string {
  const one =
    field.type === 'integer'
      ? String.raw`-?\d{1,16}`
      : field.type === 'number'
        ? NUMBER
        : field.format === 'uuid'
          ? '[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}'
          : `[^,]{0,${MAX_VALUE_LENGTH}}`;
  return `^${one}(?:,${one}){0,${MAX_LIST_VALUES - 1}}$`;
}

/** `filter[price][lt]` (or `filter[price]` for `eq`). */
export function filterKey(field: string, op: FilterOperator | undefined): string {
  return op === undefined ? `filter[${field}]` : `filter[${field}][${op}]`;
}

const OPERATOR_TEXT: Readonly<Record<FilterOperator, string>> = {
  eq: 'equal to',
  ne: 'not equal to',
  gt: 'greater than',
  gte: 'greater than or equal to',
  lt: 'less than',
  lte: 'less than or equal to',
  like: 'containing (case-sensitive; % and _ match themselves)',
  in: `one of (comma-separated, at most ${MAX_LIST_VALUES})`,
  nin: `none of (comma-separated, at most ${MAX_LIST_VALUES})`,
  null: 'NULL when true, not NULL when false:',
};

/** What each accepted filter parameter means. */
export interface FilterParameter {
  readonly field: EntityField;
  readonly op: FilterOperator;
}

/**
 * The list route's query-string schema and the filter parameters it accepts, by name. Unknown
 * parameters are refused (`additionalProperties: false`).
 */
export function listQuery(entity: Entity, limits: PageLimits): { schema: Schema; filters: ReadonlyMap<string, FilterParameter> } {
  const fieldNames = entity.fields.map((f) => f.name);
  const properties: Record<string, Schema> = {
    page: { type: 'integer', minimum: 1, maximum: limits.maxPageNumber, default: 1, description: `The page, from 1 (at most ${limits.maxPageNumber}).` },
    pageSize: {
      type: 'integer',
      minimum: 1,
      default: limits.defaultPageSize,
      description: `Rows per page (default ${limits.defaultPageSize}); above ${limits.maxPageSize} it is ${limits.maxPageSize}.`,
    },
    sort: {
      type: 'string',
      maxLength: fieldNames.join(',-').length + 1,
      pattern: `^-?(?:${fieldNames.join('|')})(?:,-?(?:${fieldNames.join('|')}))*$`,
      description: `Sort keys, comma-separated, each a field optionally prefixed with - for descending: ${fieldNames.join(', ')}.`,
    },
  };
  const filters = new Map<string, FilterParameter>();
  for (const field of entity.fields) {
    for (const op of operatorsFor(field)) {
      const list = op === 'in' || op === 'nin';
      const value = list
        ? { type: 'string', maxLength: MAX_LIST_VALUES * (MAX_VALUE_LENGTH + 1), pattern: listPattern(field) }
        : op === 'null'
          ? { type: 'boolean' }
          : valueSchema(field);
      const description = `Rows whose ${field.name} is ${OPERATOR_TEXT[op]}${op === 'null' ? '' : ' this value'}.`;
      for (const key of op === 'eq' ? [filterKey(field.name, undefined), filterKey(field.name, op)] : [filterKey(field.name, op)]) {
        properties[key] = { ...value, description };
        filters.set(key, { field, op });
      }
    }
  }
  return { schema: { type: 'object', additionalProperties: false, properties }, filters };
}

/** The path parameter schema of the routes on one row. */
export function keyParams(entity: Entity): Schema {
  const pk = entity.field(entity.primaryKey) as EntityField;
  return {
    type: 'object',
    required: [pk.name],
    additionalProperties: false,
    properties: { [pk.name]: { ...valueSchema(pk), description: `The ${entity.name}'s ${pk.name}.` } },
  };
}

/** The list answer. */
export function pageSchema(entity: Entity): Schema {
  return {
    type: 'object',
    required: ['items', 'total', 'page', 'pageSize', 'totalPages'],
    properties: {
      items: { type: 'array', items: ref(entity.name) },
      total: { type: 'integer', description: 'Rows matching the filters, on all pages.' },
      page: { type: 'integer' },
      pageSize: { type: 'integer', description: 'The page size in effect (the requested one, capped).' },
      totalPages: { type: 'integer' },
    },
  };
}

const PROBLEM: Schema = {
  type: 'object',
  required: ['type', 'title', 'status'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    correlationId: { type: 'string', description: 'The request\'s correlation id, when the audit trail is on.' },
    errors: {
      type: 'array',
      description: 'For 400: the parameters at fault.',
      items: {
        type: 'object',
        required: ['in', 'name', 'pointer', 'detail'],
        properties: {
          in: { type: 'string', enum: ['querystring', 'params', 'body'] },
          name: { type: 'string', description: 'The query or path parameter, or the body field.' },
          pointer: { type: 'string', description: 'A JSON pointer into that part of the request.' },
          detail: { type: 'string' },
        },
      },
    },
  },
};

const PROBLEM_TEXT: Readonly<Record<number, string>> = {
  400: 'A parameter or the body is not valid; `errors` names it.',
  404: 'No such row (or it was deleted).',
  409: 'The write conflicts with a unique or foreign-key constraint.',
  503: 'The database is unavailable; retry after `Retry-After` seconds.',
};

/** A problem-details answer for the document. */
export function problemResponse(status: 400 | 404 | 409 | 503): Schema {
  return {
    description: PROBLEM_TEXT[status],
    ...(status === 503 ? { headers: { 'Retry-After': { type: 'integer', description: 'Seconds to wait before retrying.' } } } : {}),
    content: { 'application/problem+json': { schema: PROBLEM } },
  };
}
