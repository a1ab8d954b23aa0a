// Fastify's validation errors (ajv's, for the query, the path, the headers and the body) as the one
// parameter at fault, named as the client wrote it (`filter[price][gt]`, `[3].price`,
// `lines[3].quantity`, `Idempotency-Key`) and explained in words that say what the parameter takes.
// The routes' error handler (problems.ts) answers it as a 400.
import type { FastifyError } from 'fastify';
import type { Entity } from '../entity.js';
import { MAX_ALTERNATIVES, operatorsFor, FILTER_OPERATORS } from '../mapper/sql/query.js';
import { allowedText } from '../values/fields.js';
import { MAX_VALUE_LENGTH, sortableFields, type FilterParameter } from './schemas.js';
import { MAX_LIST_VALUES } from './limits.js';
import { parameterText } from '../answers.js';

/** Where a parameter at fault is, named as Kit's own validation problems name it. */
export type ParameterLocation = 'querystring' | 'params' | 'headers' | 'body';

/** One parameter at fault, as the 400 answer's `errors` lists it (with a JSON pointer added, as in Kit's own problems). */
export interface InvalidParameter {
  readonly in: ParameterLocation;
  readonly name: string;
  readonly detail: string;
  /** Where inside the parameter's value the fault is, as a JSON Pointer (`/dims/x` of a JSON field); absent for the value as a whole. */
  readonly path?: string;
}

/** A JSON Pointer's first segment, as written (`/filter[a]~1b/c` -> `filter[a]~1b`). */
function rawHead(pointer: string): string {
  return pointer.split('/')[1] ?? '';
}

/** A JSON Pointer's first segment, unescaped (`/filter[a]~1b` -> `filter[a]/b`). */
function pointerHead(pointer: string): string {
  return rawHead(pointer).replace(/~1/g, '/').replace(/~0/g, '~');
}

/** A key as one segment of a JSON Pointer (RFC 6901: `~` as `~0`, `/` as `~1`). */
function pointerSegment(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** One of ajv's errors, as far as the descriptions read it. */
export interface AjvError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

const ARTICLE: Readonly<Record<string, string>> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'an array',
  null: 'null',
};

function typeText(params: Record<string, unknown>): string {
  const types = String(params.type).split(',');
  return parameterText('mustBe', { types: types.map((t) => ARTICLE[t] ?? t).join(' or ') });
}

/** Why a query parameter the schema does not list is refused, as precisely as its name allows. */
function unknownQueryParameter(
  entity: Entity,
  name: string,
  hidden: ReadonlySet<string> | undefined,
): string {
  const alternative = /^filter\[or\](?:\[([^\]]*)\](.*))?$/.exec(name);
  if (alternative) {
    const [, index = '', rest = ''] = alternative;
    if (!/^\d+$/.test(index) || Number(index) >= MAX_ALTERNATIVES)
      return parameterText('notAnAlternative', {
        last: MAX_ALTERNATIVES - 1,
        count: MAX_ALTERNATIVES,
      });
    if (rest.startsWith('[or]')) return parameterText('nestedOr');
    return unknownQueryParameter(entity, `filter${rest}`, hidden);
  }
  const match = /^filter\[([^\]]*)\](?:\[([^\]]*)\])?$/.exec(name);
  if (!match) {
    if (name.startsWith('filter')) return parameterText('malformedFilter');
    return parameterText('notAccepted');
  }
  const [, fieldName = '', op] = match;
  const field = entity.fields.find((f) => f.name === fieldName && !hidden?.has(f.name));
  if (!field)
    return parameterText('noSuchField', {
      entity: entity.name,
      fields: shownFields(entity, hidden),
    });
  if (op !== undefined && !(FILTER_OPERATORS as readonly string[]).includes(op))
    return parameterText('unknownOperator', { operators: FILTER_OPERATORS.join(', ') });
  return parameterText('operatorNotFor', {
    kind: field.kind,
    field: field.name,
    operators: operatorsFor(field).join(', '),
  });
}

/**
 * Why a `sort` is refused: it names a JSON field the caller sees (which has no order), or else
 * something that is not a sortable field; either way the answer lists the fields it may sort by,
 * never a JSON field nor one the caller's rule hides.
 *
 * @example
 * ```ts
 * sortDetail(gadget, 'attrs', undefined);   // 'names attrs, a JSON field, which has no order; sortable fields of Gadget: id, serial, …'
 * ```
 */
export function sortDetail(
  entity: Entity,
  sort: unknown,
  hidden: ReadonlySet<string> | undefined,
): string {
  const fields = sortableFields(entity)
    .filter((f) => !hidden?.has(f.name))
    .map((f) => f.name)
    .join(', ');
  const keys =
    typeof sort === 'string'
      ? sort.split(',').map((key) => (key.startsWith('-') ? key.slice(1) : key))
      : [];
  const json = keys
    .map((key) => entity.fields.find((f) => f.name === key))
    .find((f) => f !== undefined && f.kind === 'json' && !hidden?.has(f.name));
  return json
    ? parameterText('jsonSort', { name: json.name, entity: entity.name, fields })
    : parameterText('sortFields', { entity: entity.name, fields });
}

/** The fields a caller may see, as the 400s list them (`hidden`: the fields its authorization rule hides). */
function shownFields(entity: Entity, hidden: ReadonlySet<string> | undefined): string {
  return entity.fields
    .filter((f) => !hidden?.has(f.name))
    .map((f) => f.name)
    .join(', ');
}

function describeQueryError(
  entity: Entity,
  filters: ReadonlyMap<string, FilterParameter>,
  e: AjvError,
  hidden: ReadonlySet<string> | undefined,
  query: Readonly<Record<string, unknown>> | undefined,
): InvalidParameter {
  if (e.keyword === 'additionalProperties') {
    const name = String(e.params.additionalProperty);
    return { in: 'querystring', name, detail: unknownQueryParameter(entity, name, hidden) };
  }
  const name = pointerHead(e.instancePath);
  const filter = filters.get(name);
  // A filter on a hidden field is refused as one on a field that does not exist, whatever its value.
  if (filter && hidden?.has(filter.field.name))
    return {
      in: 'querystring',
      name,
      detail: parameterText('noSuchField', {
        entity: entity.name,
        fields: shownFields(entity, hidden),
      }),
    };
  let detail: string;
  if (e.keyword === 'pattern' && filter) {
    const kind = filter.field.kind;
    detail = parameterText('valueList', {
      max: MAX_LIST_VALUES,
      kind: kind === 'uuid' ? 'UUID' : kind,
      length: kind === 'string' ? parameterText('valueLength', { max: MAX_VALUE_LENGTH }) : '',
    });
  } else if (e.keyword === 'pattern' && name === 'sort') {
    detail = sortDetail(entity, query?.sort, hidden);
  } else if (
    (e.keyword === 'pattern' || e.keyword === 'maxLength' || e.keyword === 'minLength') &&
    name === 'fields'
  ) {
    detail = parameterText('fieldList', {
      entity: entity.name,
      fields: shownFields(entity, hidden),
    });
  } else if (e.keyword === 'type') {
    detail = typeText(e.params);
  } else if (e.keyword === 'enum' && Array.isArray(e.params.allowedValues)) {
    detail = allowedText(e.params.allowedValues as string[]);
  } else if (e.keyword === 'maxLength' && filter) {
    detail = parameterText('atMostCharacters', { limit: String(e.params.limit) });
  } else {
    detail = e.message ?? parameterText('invalid');
  }
  return { in: 'querystring', name, detail };
}

/**
 * Marks an ajv error of one row of an array body, so that the answer names the row (`[3].price`).
 *
 * @example
 * ```ts
 * const marked = { ...error, params: { ...error.params, [BATCH_ROW]: 3 } };
 * ```
 */
export const BATCH_ROW = 'kitBatchRow';

/**
 * Marks an ajv error of one relation's rows of a nested create (`{ name, entity }`), so that the answer names it (`lines[3].quantity`).
 *
 * @example
 * ```ts
 * const marked = { ...error, params: { ...error.params, [BATCH_ROW]: 3, [BATCH_RELATION]: { name: 'lines', entity: line } } };
 * ```
 */
export const BATCH_RELATION = 'kitBatchRelation';

/**
 * A row's field as the client wrote it: `[3].price`, or `[3]` for the row itself; `lines[3].quantity` in a relation.
 *
 * @example
 * ```ts
 * rowPath(3, 'quantity', 'lines');   // 'lines[3].quantity'
 * ```
 */
export function rowPath(index: number, name: string, relation?: string): string {
  const row = `${relation ?? ''}[${index}]`;
  return name === '' ? row : `${row}.${name}`;
}

function describeBodyError(entity: Entity, e: AjvError): InvalidParameter {
  const row = e.params[BATCH_ROW];
  if (typeof row === 'number') {
    const relation = e.params[BATCH_RELATION] as { name: string; entity: Entity } | undefined;
    const fault = describeBodyError(relation?.entity ?? entity, {
      ...e,
      params: { ...e.params, [BATCH_ROW]: undefined, [BATCH_RELATION]: undefined },
    });
    return { ...fault, name: rowPath(row, fault.name, relation?.name) };
  }
  // ajv names an undeclared or a missing key by the object that holds it: the body's own keys are
  // its fields; any other object is a JSON field's value, or lies inside one.
  const key =
    e.keyword === 'additionalProperties'
      ? String(e.params.additionalProperty)
      : e.keyword === 'required'
        ? String(e.params.missingProperty)
        : undefined;
  if (key !== undefined && e.instancePath === '') {
    if (e.keyword === 'required')
      return { in: 'body', name: key, detail: parameterText('required') };
    const known = entity.fields.some((f) => f.name === key);
    return {
      in: 'body',
      name: key,
      detail: known
        ? parameterText('readOnlyField')
        : parameterText('notAField', { entity: entity.name }),
    };
  }
  // The field, and where inside its JSON value the fault is.
  const name = pointerHead(e.instancePath);
  const path =
    e.instancePath.slice(rawHead(e.instancePath).length + 1) +
    (key === undefined ? '' : `/${pointerSegment(key)}`);
  const detail =
    e.keyword === 'additionalProperties'
      ? parameterText('undeclaredKey')
      : e.keyword === 'required'
        ? parameterText('required')
        : e.keyword === 'type'
          ? typeText(e.params)
          : e.keyword === 'enum' && Array.isArray(e.params.allowedValues)
            ? allowedText(e.params.allowedValues as string[])
            : (e.message ?? parameterText('invalid'));
  return path
    ? { in: 'body', name, detail: parameterText('insideJson', { path, detail }), path }
    : { in: 'body', name, detail };
}

/** A header as documented (`Idempotency-Key`), from ajv's lower-case name. */
function headerName(e: AjvError): string {
  const name =
    e.keyword === 'required' ? String(e.params.missingProperty) : pointerHead(e.instancePath);
  return name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
}

/**
 * The parameter at fault in Fastify's validation error, named and explained as the client wrote
 * it; `query` is the request's query string, as parsed.
 *
 * @example
 * ```ts
 * const fault = describeValidation(entity, filters, error, undefined, request.query);   // { in: 'querystring', name: 'pageSize', detail: 'must be an integer' }
 * ```
 */
export function describeValidation(
  entity: Entity,
  filters: ReadonlyMap<string, FilterParameter>,
  error: FastifyError,
  hidden: ReadonlySet<string> | undefined,
  query?: Readonly<Record<string, unknown>>,
): InvalidParameter {
  const first = (error.validation?.[0] ?? {
    keyword: '',
    instancePath: '',
    params: {},
  }) as unknown as AjvError;
  switch (error.validationContext) {
    case 'querystring':
      return describeQueryError(entity, filters, first, hidden, query);
    case 'params':
      return {
        in: 'params',
        name: pointerHead(first.instancePath),
        detail:
          first.keyword === 'type'
            ? typeText(first.params)
            : (first.message ?? parameterText('invalid')),
      };
    case 'headers':
      return {
        in: 'headers',
        name: headerName(first),
        detail:
          first.keyword === 'pattern'
            ? parameterText('headerValue')
            : (first.message ?? parameterText('invalid')),
      };
    default:
      return describeBodyError(entity, first);
  }
}
