// The JSON Schemas of the generated routes: one component per entity (the row) and one for its
// request body, the list's query string (one parameter per field and operator, so generated
// clients get them typed) and path parameters. The headers and problem answers are
// answer-schemas.ts's.
import type { Entity, EntityField } from '../entity.js';
import { MAX_ALTERNATIVES, operatorsFor, type FilterOperator } from '../mapper/sql/query.js';
import { MAX_VALUE_LENGTH, valueType } from '../values/kinds.js';
import { MAX_CURSOR_LENGTH } from './cursor.js';
import { fieldsParameter } from './fields.js';
import { MAX_LIST_VALUES } from './limits.js';
import { openapiText } from './openapi-text.js';

export { MAX_VALUE_LENGTH };

/** Paging limits of the list route. */
export interface PageLimits {
  readonly defaultPageSize: number;
  readonly maxPageSize: number;
  readonly maxPageNumber: number;
}

type Schema = Record<string, unknown>;

/**
 * The entity's component schema (`Product`): the row as answers carry it, plus `included`: the
 * optional properties of its relations (see includes.ts).
 */
export function rowSchema(
  entity: Entity,
  included: Readonly<Record<string, unknown>> = {},
): Schema {
  const schema = { ...entity.schema, $id: entity.name, title: entity.name };
  if (Object.keys(included).length === 0) return schema;
  return { ...schema, properties: { ...entity.schema.properties, ...included } };
}

/** The name of the request-body component (`ProductInput`). */
export function inputName(entity: Entity): string {
  return `${entity.name}Input`;
}

/**
 * A field's schema as a request body carries it: without `default`, which the description states
 * instead. openapi-typescript (at its default settings) types a property with a `default` as
 * always present, so a client leaving a defaulted field out of a create would not compile.
 */
function bodyProperty(field: EntityField): Schema {
  if (!('default' in field.schema)) return field.schema;
  const { default: value, ...rest } = field.schema;
  const said = typeof rest.description === 'string' ? `${rest.description} ` : '';
  return { ...rest, description: openapiText.schemas.defaulted(said, value) };
}

/** The request-body component: the writable fields, nothing else. */
export function inputSchema(entity: Entity): Schema {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const name of entity.writable) {
    const field = entity.field(name) as EntityField;
    properties[name] = bodyProperty(field);
    // A field with a default may be left out: the column's default fills it.
    if (field.required && !('default' in field.schema)) required.push(name);
  }
  return {
    $id: inputName(entity),
    title: inputName(entity),
    description: openapiText.schemas.input(entity),
    type: 'object',
    additionalProperties: false,
    ...(required.length > 0 ? { required } : {}),
    properties,
  };
}

/** The name of the PATCH body component (`ProductPatch`). */
export function patchName(entity: Entity): string {
  return `${entity.name}Patch`;
}

/**
 * The PATCH body component, a JSON Merge Patch (RFC 7396): any of the writable fields, none
 * required; `null` only where the field is nullable (it clears it).
 */
export function patchSchema(entity: Entity): Schema {
  const properties: Record<string, unknown> = {};
  for (const name of entity.writable)
    properties[name] = bodyProperty(entity.field(name) as EntityField);
  return {
    $id: patchName(entity),
    title: patchName(entity),
    description: openapiText.schemas.patch(entity),
    type: 'object',
    additionalProperties: false,
    properties,
  };
}

/** The name of one row of a bulk PATCH (`ProductBatchPatch`). */
export function batchPatchName(entity: Entity): string {
  return `${entity.name}BatchPatch`;
}

/**
 * One row of a bulk PATCH: the row's primary key, the JSON Merge Patch of its fields, and (for a
 * versioned entity) the version it was read at, which the write checks as If-Match would.
 */
export function batchPatchSchema(entity: Entity): Schema {
  const pk = entity.field(entity.primaryKey) as EntityField;
  const version =
    entity.version === undefined ? undefined : (entity.field(entity.version) as EntityField);
  const properties: Record<string, unknown> = { [pk.name]: pk.schema };
  for (const name of entity.writable)
    properties[name] = bodyProperty(entity.field(name) as EntityField);
  if (version)
    properties[version.name] = {
      type: 'integer',
      minimum: 0,
      description: openapiText.schemas.batchVersion,
    };
  return {
    $id: batchPatchName(entity),
    title: batchPatchName(entity),
    description: openapiText.schemas.batchPatch(entity, pk.name, version?.name),
    type: 'object',
    additionalProperties: false,
    required: [pk.name],
    properties,
  };
}

/** A reference to a component schema added to the group with `addSchema`. */
export function ref(id: string): Schema {
  return { $ref: `${id}#` };
}

/** The schema of one value of a field in a query or path: its type and format only, not its constraints (a filter may ask for any value). */
export function valueSchema(field: EntityField): Schema {
  const schema = valueType(field.kind).textSchema(field.format);
  return field.enum ? { ...schema, enum: field.enum } : schema;
}

/** A regular expression for a comma-separated list of 1 to 100 values of the field's kind. */
function listPattern(field: EntityField): string {
  const one = valueType(field.kind).listItem;
  return `^(?:${one})(?:,(?:${one})){0,${MAX_LIST_VALUES - 1}}$`;
}

/** `filter[price][lt]` (or `filter[price]` for `eq`); in alternative `a` of the OR group, `filter[or][a][price][lt]`. */
export function filterKey(
  field: string,
  op: FilterOperator | undefined,
  alternative?: number,
): string {
  const head = alternative === undefined ? 'filter' : `filter[or][${alternative}]`;
  return op === undefined ? `${head}[${field}]` : `${head}[${field}][${op}]`;
}

/**
 * The fields a list sorts by: every field but the JSON ones (a JSON value has no order any engine
 * agrees on).
 *
 * @example
 * ```ts
 * const keys = sortableFields(entity).map((f) => f.name);   // ['id', 'name', 'price']
 * ```
 */
export function sortableFields(entity: Entity): readonly EntityField[] {
  return entity.fields.filter((f) => f.kind !== 'json');
}

/** What each accepted filter parameter means. */
export interface FilterParameter {
  readonly field: EntityField;
  readonly op: FilterOperator;
  /** The OR group's alternative the condition belongs to (`filter[or][2][...]`); absent for a plain filter. */
  readonly alternative?: number;
}

/**
 * The list route's query-string schema and the filter parameters it accepts, by name. Unknown
 * parameters are refused (`additionalProperties: false`).
 */
export function listQuery(
  entity: Entity,
  limits: PageLimits,
): { schema: Schema; filters: ReadonlyMap<string, FilterParameter> } {
  const sortable = sortableFields(entity).map((f) => f.name);
  const properties: Record<string, Schema> = {
    // No `default`: a page the query leaves out must stay apart from `page=1`, which `after` refuses.
    page: {
      type: 'integer',
      minimum: 1,
      maximum: limits.maxPageNumber,
      description: openapiText.parameters.page(limits.maxPageNumber),
    },
    pageSize: {
      type: 'integer',
      minimum: 1,
      default: limits.defaultPageSize,
      description: openapiText.parameters.pageSize(limits.defaultPageSize, limits.maxPageSize),
    },
    after: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_CURSOR_LENGTH,
      description: openapiText.parameters.after,
    },
    count: {
      type: 'boolean',
      default: true,
      description: openapiText.parameters.count,
    },
    sort: {
      type: 'string',
      maxLength: sortable.join(',-').length + 1,
      pattern: `^-?(?:${sortable.join('|')})(?:,-?(?:${sortable.join('|')}))*$`,
      description: openapiText.parameters.sort(sortable),
    },
    fields: fieldsParameter(entity),
  };
  const filters = new Map<string, FilterParameter>();
  // After the plain filters in the document, alternative by alternative.
  const orProperties: Record<string, Schema> = {};
  for (const field of entity.fields) {
    for (const op of operatorsFor(field)) {
      const list = op === 'in' || op === 'nin';
      const value = list
        ? {
            type: 'string',
            maxLength: MAX_LIST_VALUES * (MAX_VALUE_LENGTH + 1),
            pattern: listPattern(field),
          }
        : op === 'null'
          ? { type: 'boolean' }
          : op === 'like' || op === 'ilike'
            ? valueType(field.kind).textSchema(field.format)
            : valueSchema(field);
      const description = openapiText.parameters.filter(field.name, op);
      for (const key of op === 'eq'
        ? [filterKey(field.name, undefined), filterKey(field.name, op)]
        : [filterKey(field.name, op)]) {
        properties[key] = { ...value, description };
        filters.set(key, { field, op });
      }
      // The OR group: the same parameters under filter[or][0..9]; rows match one alternative's conditions, all of them.
      for (let alternative = 0; alternative < MAX_ALTERNATIVES; alternative++) {
        const text = openapiText.parameters.alternative(alternative, field.name, op);
        for (const key of op === 'eq'
          ? [filterKey(field.name, undefined, alternative), filterKey(field.name, op, alternative)]
          : [filterKey(field.name, op, alternative)]) {
          orProperties[key] = { ...value, description: text };
          filters.set(key, { field, op, alternative });
        }
      }
    }
  }
  const ordered = Object.keys(orProperties).sort((a, b) => alternativeOf(a) - alternativeOf(b));
  for (const key of ordered) properties[key] = orProperties[key] as Schema;
  return { schema: { type: 'object', additionalProperties: false, properties }, filters };
}

function alternativeOf(key: string): number {
  return Number(/^filter\[or\]\[(\d+)\]/.exec(key)?.[1] ?? 0);
}

/** The path parameter schema of the routes on one row. */
export function keyParams(entity: Entity): Schema {
  const pk = entity.field(entity.primaryKey) as EntityField;
  return {
    type: 'object',
    required: [pk.name],
    additionalProperties: false,
    properties: {
      [pk.name]: { ...valueSchema(pk), description: openapiText.parameters.key(entity, pk.name) },
    },
  };
}

/** The list answer. */
export function pageSchema(entity: Entity): Schema {
  return {
    type: 'object',
    required: ['items', 'pageSize', 'next'],
    properties: {
      items: { type: 'array', items: ref(entity.name) },
      total: { type: 'integer', description: openapiText.schemas.total },
      page: { type: 'integer', description: openapiText.schemas.page },
      pageSize: { type: 'integer', description: openapiText.schemas.pageSize },
      totalPages: { type: 'integer', description: openapiText.schemas.totalPages },
      next: { type: ['string', 'null'], description: openapiText.schemas.next },
    },
  };
}
