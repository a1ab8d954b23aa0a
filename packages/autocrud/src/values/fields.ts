// One field's value rules beyond its kind: a string enum's allowed values, a decimal's declared
// precision and scale, a JSON field's own schema. The routes' ajv checks the same for bodies; the
// repository, which takes values from code, checks them here, so that both refuse the same.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import {
  valueType,
  ValueFault,
  DECIMAL_FORMAT,
  INT64_FORMAT,
  UUID_FORMAT,
  type ValueKind,
} from './kinds.js';

// ajv-formats is CommonJS: its default export is the function under NodeNext.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** What the rules read of a field (an `EntityField` has it all). */
interface FieldRules {
  readonly name: string;
  readonly kind: ValueKind;
  /** A string field's allowed values (its schema's `enum`, or a union of `const`s). */
  readonly enum?: readonly string[] | undefined;
  /** A decimal's `x-precision` (digits in all) and `x-scale` (digits after the point). */
  readonly precision?: number | undefined;
  readonly scale?: number | undefined;
  readonly schema: Readonly<Record<string, unknown>>;
}

let ajv: Ajv | undefined;
const validators = new WeakMap<object, ValidateFunction>();

function jsonValidator(field: FieldRules): ValidateFunction {
  let validate = validators.get(field.schema);
  if (!validate) {
    ajv ??= addFormats(new Ajv({ strict: false, allErrors: false }))
      .addFormat('uuid', UUID_FORMAT)
      .addFormat('decimal', DECIMAL_FORMAT)
      .addFormat('int64', INT64_FORMAT);
    validate = ajv.compile(field.schema);
    validators.set(field.schema, validate);
  }
  return validate;
}

/** "must be one of 'a', 'b'": the allowed values, for messages. */
export function allowedText(values: readonly string[]): string {
  return `must be one of ${values.map((v) => JSON.stringify(v)).join(', ')}`;
}

/** `value` (not null) in Kit's form for this field, or why it is refused. */
export function fieldValue(field: FieldRules, value: unknown): unknown {
  const found = valueType(field.kind).fromJson(value);
  return found instanceof ValueFault ? found : rules(field, found);
}

/** A query-string value in Kit's form for this field, or why it is refused. */
export function fieldText(field: FieldRules, text: string): unknown {
  const found = valueType(field.kind).fromText(text);
  return found instanceof ValueFault ? found : rules(field, found);
}

/**
 * Where in a JSON value ajv found a fault, and what: an undeclared key at its own place (ajv names
 * it by the object that holds it), as the routes' 400 says it.
 */
function jsonFault(error: ErrorObject): string {
  const key = (error.params as { additionalProperty?: unknown }).additionalProperty;
  if (error.keyword !== 'additionalProperties' || typeof key !== 'string')
    return `${error.instancePath || '/'}: ${error.message ?? error.keyword}`;
  return `${error.instancePath}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}: is a key its schema does not declare`;
}

function rules(field: FieldRules, value: unknown): unknown {
  if (field.enum !== undefined && !field.enum.includes(value as string))
    return new ValueFault(allowedText(field.enum));
  if (field.kind === 'decimal' && field.precision !== undefined) {
    const [whole = '', fraction = ''] = (value as string).replace(/^-/, '').split('.');
    const scale = field.scale ?? 0;
    if (fraction.length > scale || whole.replace(/^0+/, '').length > field.precision - scale) {
      return new ValueFault(
        `must have at most ${field.precision - scale} digits before the point and ${scale} after it (numeric(${field.precision}, ${scale})): it is stored exactly or refused, never rounded`,
      );
    }
  }
  if (field.kind === 'json') {
    const validate = jsonValidator(field);
    if (!validate(value)) {
      const [error] = validate.errors ?? [];
      return new ValueFault(`does not match its schema${error ? ` at ${jsonFault(error)}` : ''}`);
    }
  }
  return value;
}
