// The generated routes validate with their own ajv instances, not with the host's: Fastify's
// default ajv removes properties a schema does not allow (`removeAdditional`) where AutoCrud must
// refuse them, and coerces arrays where a repeated query parameter must be an error.
import { Ajv, type AnySchema, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { DECIMAL_FORMAT, INT64_FORMAT, UUID_FORMAT } from '../values/kinds.js';
import { parameterText } from '../answers.js';

// ajv-formats is CommonJS: its default export is the function under NodeNext.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function ajv(coerce: boolean): Ajv {
  return (
    addFormats(
      new Ajv({
        coerceTypes: coerce,
        useDefaults: coerce,
        removeAdditional: false,
        allErrors: false,
        strictNumbers: true,
        // Entity schemas may carry OpenAPI keywords (example, nullable...); they are not errors.
        strict: false,
      }),
    )
      // ajv-formats' uuid also takes `urn:uuid:...`, which no engine stores as a uuid.
      .addFormat('uuid', UUID_FORMAT)
      .addFormat('decimal', DECIMAL_FORMAT)
      // ajv-formats' int64 applies to numbers only; Kit's is a string of digits (its range is checked after).
      .addFormat('int64', INT64_FORMAT)
  );
}

// What a query-string or path value must look like to be coerced to a number: ajv coerces with
// Number(), which also reads `0x10`, `1e1`, ` 1`, `+1` and `1.0` as integers.
const TEXT_GRAMMAR: Readonly<Record<string, { pattern: RegExp; message: string }>> = {
  integer: { pattern: /^-?\d+$/, message: parameterText('decimalInteger') },
  number: {
    pattern: /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/,
    message: parameterText('decimalNumber'),
  },
};

/** The numeric properties of a flat object schema, with the text grammar each must match before coercion. */
function numericProperties(schema: AnySchema): Map<string, { pattern: RegExp; message: string }> {
  const properties =
    (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const numeric = new Map<string, { pattern: RegExp; message: string }>();
  for (const [name, property] of Object.entries(properties)) {
    const grammar = typeof property.type === 'string' ? TEXT_GRAMMAR[property.type] : undefined;
    if (grammar) numeric.set(name, grammar);
  }
  return numeric;
}

/** A list parameter (`include`): the parameter repeated, or its values comma-separated; its allowed values and bound. */
interface ListParameter {
  readonly allowed: ReadonlySet<string>;
  readonly maxItems: number;
}

/** The list parameters of a flat object schema: arrays of enumerated strings. */
function listProperties(schema: AnySchema): Map<string, ListParameter> {
  const properties =
    (
      schema as {
        properties?: Record<
          string,
          { type?: unknown; maxItems?: unknown; items?: { enum?: unknown } }
        >;
      }
    ).properties ?? {};
  const lists = new Map<string, ListParameter>();
  for (const [name, property] of Object.entries(properties)) {
    if (property.type !== 'array' || !Array.isArray(property.items?.enum)) continue;
    lists.set(name, {
      allowed: new Set(property.items.enum as string[]),
      maxItems: typeof property.maxItems === 'number' ? property.maxItems : 100,
    });
  }
  return lists;
}

/**
 * A list parameter's values, from `a,b` or the parameter repeated (`a&a=b`, as generated clients
 * send arrays), each checked against the allowed values by name; or the error naming the first
 * one at fault. Bounded before it is split: a huge value is refused whole.
 */
function readList(
  key: string,
  raw: unknown,
  list: ListParameter,
): { values: string[] } | { errors: ValidateFunction['errors'] } {
  const parts = Array.isArray(raw) ? raw : [raw];
  const values: string[] = [];
  if (parts.length > list.maxItems)
    return {
      errors: errorAt(
        key,
        'maxItems',
        parameterText('atMostOf', { max: list.maxItems, allowed: [...list.allowed].join(', ') }),
      ),
    };
  for (const part of parts) {
    if (typeof part !== 'string' || part.length > 64 * list.maxItems)
      return {
        errors: errorAt(
          key,
          'maxItems',
          parameterText('atMostOf', { max: list.maxItems, allowed: [...list.allowed].join(', ') }),
        ),
      };
    for (const value of part.split(',')) {
      if (!list.allowed.has(value))
        return {
          errors: errorAt(
            key,
            'enum',
            parameterText('notOneOf', {
              value: JSON.stringify(value.slice(0, 64)),
              allowed: [...list.allowed].join(', '),
            }),
          ),
        };
      if (!values.includes(value)) values.push(value);
    }
    if (values.length > list.maxItems)
      return {
        errors: errorAt(
          key,
          'maxItems',
          parameterText('atMostOf', { max: list.maxItems, allowed: [...list.allowed].join(', ') }),
        ),
      };
  }
  return { values };
}

function errorAt(key: string, keyword: string, message: string): ValidateFunction['errors'] {
  const instancePath = `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  return [{ keyword, instancePath, schemaPath: '', params: {}, message }];
}

// A parameter of one alternative of the list's OR group: `filter[or][3][price][lt]` is alternative 3's
// `filter[price][lt]`. Validated apart (below), so that ajv compiles one alternative's properties,
// not ten copies of them.
const ALTERNATIVE = /^filter\[or\]\[(\d)\](\[.*)$/;

/**
 * The OR group's parameters taken out of a list's query-string schema: the schema without them,
 * and one alternative's schema with its keys as plain filters. The document keeps every
 * parameter (it is made from the route's schema); ajv validates a query against the smaller
 * schemas: with every alternative's properties compiled in, a list's validation is many times
 * slower, measured on a five-field entity.
 */
function splitAlternatives(
  schema: AnySchema,
): { base: AnySchema; alternative: AnySchema } | undefined {
  const properties = (schema as { properties?: Record<string, unknown> }).properties;
  if (!properties || !Object.keys(properties).some((key) => ALTERNATIVE.test(key)))
    return undefined;
  const base: Record<string, unknown> = {};
  const alternative: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(properties)) {
    const match = ALTERNATIVE.exec(key);
    if (!match) base[key] = property;
    else if (match[1] === '0') alternative[`filter${match[2] as string}`] = property;
  }
  return {
    base: { ...(schema as object), properties: base },
    alternative: { type: 'object', additionalProperties: false, properties: alternative },
  };
}

/** An error of one alternative's validation, naming the parameter as sent (`filter[or][n]...`). */
function inAlternative(error: ErrorObject, n: string): ErrorObject {
  const rename = (name: string) => `filter[or][${n}]${name.slice('filter'.length)}`;
  const params = { ...error.params };
  if (typeof params.additionalProperty === 'string')
    params.additionalProperty = rename(params.additionalProperty);
  return {
    ...error,
    instancePath: error.instancePath.replace(/^\/filter/, `/filter[or][${n}]`),
    params,
  };
}

/**
 * Query strings and path parameters are flat. Before ajv coerces them, an integer must be written
 * as a decimal integer and a number as a decimal number (ajv would take `0x10` as 16). After it,
 * `1e309` and `Infinity` (coerced to Infinity, which ajv's number check, run before coercion,
 * lets pass) are refused. The OR group's parameters are validated alternative by alternative
 * against one alternative's schema (`compileAlternative`), and coerced in place like the others.
 */
function flat(
  validate: ValidateFunction,
  schema: AnySchema,
  validateAlternative?: ValidateFunction,
): ValidateFunction {
  const numeric = numericProperties(schema);
  const lists = listProperties(schema);
  const check = ((data: unknown) => {
    const values = (data ?? {}) as Record<string, unknown>;
    for (const [key, list] of lists) {
      if (values[key] === undefined) continue;
      const read = readList(key, values[key], list);
      if ('errors' in read) {
        check.errors = read.errors;
        return false;
      }
      values[key] = read.values;
    }
    // The parameters sent (a few) rather than every numeric one the schema lists (dozens on a list).
    if (numeric.size > 0) {
      for (const key in values) {
        const grammar = numeric.get(key);
        const value = values[key];
        if (grammar !== undefined && typeof value === 'string' && !grammar.pattern.test(value)) {
          check.errors = errorAt(key, 'decimal', grammar.message);
          return false;
        }
      }
    }
    // Each alternative's parameters as plain filters; a key that is not one stays, for the base schema to refuse by its name.
    let alternatives: Map<string, Record<string, unknown>> | undefined;
    if (validateAlternative) {
      for (const key of Object.keys(values)) {
        const match = ALTERNATIVE.exec(key);
        if (!match) continue;
        const n = match[1] as string;
        alternatives ??= new Map();
        let group = alternatives.get(n);
        if (!group) alternatives.set(n, (group = {}));
        group[`filter${match[2] as string}`] = values[key];
        delete values[key];
      }
    }
    if (!validate(data)) {
      check.errors = validate.errors;
      return false;
    }
    if (alternatives && validateAlternative) {
      for (const [n, group] of alternatives) {
        if (!validateAlternative(group)) {
          check.errors = (validateAlternative.errors ?? []).map((e) => inAlternative(e, n));
          return false;
        }
        // Coerced in place by ajv: back under the names sent.
        for (const [key, value] of Object.entries(group))
          values[`filter[or][${n}]${key.slice('filter'.length)}`] = value;
      }
    }
    for (const [key, value] of Object.entries(values)) {
      if (typeof value === 'number' && !Number.isFinite(value)) {
        check.errors = errorAt(key, 'finite', parameterText('finite'));
        return false;
      }
    }
    check.errors = null;
    return true;
  }) as ValidateFunction;
  return check;
}

/** A validator compiler for the routes of one AutoCrud setup, and the shared schemas it resolves. */
export interface CrudValidation {
  readonly compiler: FastifySchemaCompiler<AnySchema>;
  /** Makes a component schema (with `$id`) resolvable from route schemas; once per id. */
  addSchema(schema: { $id: string } & Record<string, unknown>): void;
}

/**
 * Bodies: no coercion, nothing removed, unknown fields refused. Query strings and path
 * parameters: decimal text coerced to the declared type, defaults applied, an array (a repeated
 * parameter) refused.
 */
export function createValidation(): CrudValidation {
  const body = ajv(false);
  const params = ajv(true);
  return {
    // An ajv validate function is what Fastify's own compiler returns: false plus `.errors`.
    compiler: ({ schema, httpPart }) => {
      if (httpPart === 'body') return body.compile(schema);
      const split = splitAlternatives(schema);
      return split
        ? flat(params.compile(split.base), schema, params.compile(split.alternative))
        : flat(params.compile(schema), schema);
    },
    addSchema(schema) {
      for (const instance of [body, params])
        if (!instance.getSchema(schema.$id)) instance.addSchema(schema);
    },
  };
}
