// The generated routes validate with their own ajv instances, not with the host's: Fastify's
// default ajv removes properties a schema does not allow (`removeAdditional`) where AutoCrud must
// refuse them, and coerces arrays where a repeated query parameter must be an error.
import { Ajv, type AnySchema, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

// ajv-formats is CommonJS: its default export is the function under NodeNext.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function ajv(coerce: boolean): Ajv {
  return addFormats(
    new Ajv({
      coerceTypes: coerce,
      useDefaults: coerce,
      removeAdditional: false,
      allErrors: false,
      strictNumbers: true,
      // Entity schemas may carry OpenAPI keywords (example, nullable...); they are not errors.
      strict: false,
    }),
  );
}

/**
 * ajv coerces `1e309` and `Infinity` in a query string to Infinity and lets it pass (its number
 * check runs before coercion). Query strings and path parameters are flat, so one pass over the
 * coerced values catches it.
 */
function finite(validate: ValidateFunction): ValidateFunction {
  const check = ((data: unknown) => {
    if (!validate(data)) {
      check.errors = validate.errors;
      return false;
    }
    for (const [key, value] of Object.entries((data ?? {}) as Record<string, unknown>)) {
      if (typeof value === 'number' && !Number.isFinite(value)) {
        const instancePath = `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
        check.errors = [{ keyword: 'finite', instancePath, schemaPath: '', params: {}, message: 'must be a finite number' }];
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
 * parameters: strings coerced to the declared type, defaults applied, an array (a repeated
 * parameter) refused.
 */
export function createValidation(): CrudValidation {
  const body = ajv(false);
  const params = ajv(true);
  return {
    // An ajv validate function is what Fastify's own compiler returns: false plus `.errors`.
    compiler: ({ schema, httpPart }) => (httpPart === 'body' ? body.compile(schema) : finite(params.compile(schema))),
    addSchema(schema) {
      for (const instance of [body, params]) if (!instance.getSchema(schema.$id)) instance.addSchema(schema);
    },
  };
}
