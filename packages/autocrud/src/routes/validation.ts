// The generated routes validate with their own ajv instances, not with the host's: Fastify's
// default ajv removes properties a schema does not allow (`removeAdditional`) where AutoCrud must
// refuse them, and coerces arrays where a repeated query parameter must be an error.
import { Ajv, type AnySchema, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { DECIMAL_FORMAT, INT64_FORMAT, UUID_FORMAT } from '../values/kinds.js';

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
  integer: { pattern: /^-?\d+$/, message: 'must be a decimal integer (digits and an optional -)' },
  number: { pattern: /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/, message: 'must be a decimal number' },
};

/** The numeric properties of a flat object schema, with the text grammar each must match before coercion. */
function numericProperties(schema: AnySchema): Map<string, { pattern: RegExp; message: string }> {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const numeric = new Map<string, { pattern: RegExp; message: string }>();
  for (const [name, property] of Object.entries(properties)) {
    const grammar = typeof property.type === 'string' ? TEXT_GRAMMAR[property.type] : undefined;
    if (grammar) numeric.set(name, grammar);
  }
  return numeric;
}

function errorAt(key: string, keyword: string, message: string): ValidateFunction['errors'] {
  const instancePath = `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  return [{ keyword, instancePath, schemaPath: '', params: {}, message }];
}

/**
 * Query strings and path parameters are flat. Before ajv coerces them, an integer must be written
 * as a decimal integer and a number as a decimal number (ajv would take `0x10` as 16). After it,
 * `1e309` and `Infinity` (coerced to Infinity, which ajv's number check, run before coercion,
 * lets pass) are refused.
 */
function flat(validate: ValidateFunction, schema: AnySchema): ValidateFunction {
  const numeric = numericProperties(schema);
  const check = ((data: unknown) => {
    const values = (data ?? {}) as Record<string, unknown>;
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
    if (!validate(data)) {
      check.errors = validate.errors;
      return false;
    }
    for (const [key, value] of Object.entries(values)) {
      if (typeof value === 'number' && !Number.isFinite(value)) {
        check.errors = errorAt(key, 'finite', 'must be a finite number');
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
    compiler: ({ schema, httpPart }) => (httpPart === 'body' ? body.compile(schema) : flat(params.compile(schema), schema)),
    addSchema(schema) {
      for (const instance of [body, params]) if (!instance.getSchema(schema.$id)) instance.addSchema(schema);
    },
  };
}
