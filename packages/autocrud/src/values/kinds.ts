// What a field's values are, whatever the engine and whatever the transport: its kind (from the
// JSON Schema type and format), which filter operators it takes, the one form Kit answers and
// binds (a timestamp in UTC with microseconds, a UUID in lower case), and how a value is read
// from JSON or from a query string. Neither SQL (src/mapper/columns.ts maps each kind to columns)
// nor HTTP (src/routes/ turns a fault into a 400). A new kind is one entry in KINDS and one in
// the column table.
import { canonicalDate, canonicalDateTime, CANONICAL_DATE_TIME, DATE_TIME_RANGE } from './time.js';

/** The filter operators, as the list route's `filter[field][op]` names them. */
export const FILTER_OPERATORS = [
  'eq',
  'ne',
  'gt',
  'gte',
  'lt',
  'lte',
  'like',
  'ilike',
  'in',
  'nin',
  'null',
] as const;
/**
 * One filter operator.
 *
 * @example
 * ```ts
 * const op: FilterOperator = 'like';
 * ```
 */
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/**
 * The kinds of value a field holds: `integer` (a JavaScript-safe integer), `number` (a double),
 * `boolean`, `string` (free text), and the string formats Kit keeps exact: `uuid`, `date-time`
 * (RFC 3339, answered in UTC with microseconds), `date` (`YYYY-MM-DD`), `decimal` (exact decimal
 * text, for PostgreSQL `numeric`), `int64` (a 64-bit integer as decimal text, for `bigint`), and `json`
 * (an object or array, for `jsonb`).
 *
 * @example
 * ```ts
 * const kind: ValueKind = 'date-time';
 * ```
 */
export type ValueKind =
  | 'integer'
  | 'number'
  | 'boolean'
  | 'string'
  | 'uuid'
  | 'date-time'
  | 'date'
  | 'decimal'
  | 'int64'
  | 'json';

/** Why a value is refused, in words that follow the parameter's name ("must be ..."). */
export class ValueFault {
  constructor(readonly detail: string) {}
}

/** How one kind of value is read, checked and written. */
interface ValueType {
  readonly kind: ValueKind;
  /** The filter operators that apply. */
  readonly operators: readonly FilterOperator[];
  /** A JSON value (a body field) in Kit's form, or why it is not one of this kind. */
  fromJson(value: unknown): unknown;
  /** A query-string or path value in Kit's form, or a {@link ValueFault}. */
  fromText(text: string): unknown;
  /** True for a value already in Kit's form (a cursor's values, checked before they are bound). */
  isCanonical(value: unknown): boolean;
  /** One item of an `in`/`nin` list, as a regular expression source (no anchors, no commas). */
  readonly listItem: string;
  /** The JSON Schema of one value in a query string or path (type and format only). */
  textSchema(format: string | undefined): Record<string, unknown>;
}

/** At most this many characters in one filter value. */
export const MAX_VALUE_LENGTH = 200;
const SAFE = Number.MAX_SAFE_INTEGER;
const ALL: readonly FilterOperator[] = FILTER_OPERATORS;
const ORDERED = FILTER_OPERATORS.filter((op) => op !== 'like' && op !== 'ilike');
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const DECIMAL_INTEGER = /^-?\d+$/;
const NUMBER = String.raw`-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?`;
const NUMBER_TEXT = new RegExp(`^${NUMBER}$`);
const UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
const LOWER_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DECIMAL = /^-?\d+(?:\.\d+)?$/;

/**
 * Text no engine stores faithfully: PostgreSQL refuses NUL, and a lone surrogate would be stored
 * as U+FFFD. Refused up front, the same on every engine.
 */
function textFault(value: string): string | undefined {
  if (value.includes('\u0000')) return 'must not contain NUL characters';
  if (LONE_SURROGATE.test(value)) return 'must be well-formed Unicode (no lone surrogates)';
  return undefined;
}

const INTEGER_RANGE = `a safe integer (-${SAFE} to ${SAFE})`;

function integer(value: unknown): unknown {
  if (Number.isSafeInteger(value)) return value;
  // JSON.parse rounds an integer beyond 2^53 - 1 to a double of magnitude 2^53 or more, never to a
  // safe integer: so every out-of-range literal is caught here, after parsing.
  return new ValueFault(
    typeof value === 'number' && Number.isInteger(value)
      ? `must be ${INTEGER_RANGE}: a larger one is not exact as a JSON number, so it is refused rather than rounded`
      : `must be ${INTEGER_RANGE}`,
  );
}

function finite(value: unknown): unknown {
  return typeof value === 'number' && Number.isFinite(value)
    ? value
    : new ValueFault('must be a finite number');
}

function text(value: unknown): unknown {
  if (typeof value !== 'string') return new ValueFault('must be a string');
  const fault = textFault(value);
  return fault ? new ValueFault(fault) : value;
}

function stringFormat(check: (value: string) => string | undefined, expected: string) {
  return (value: unknown): unknown => {
    const found = typeof value === 'string' ? check(value) : undefined;
    return found ?? new ValueFault(`must be ${expected}`);
  };
}

const uuid = stringFormat(
  (v) => (UUID.test(v) ? v.toLowerCase() : undefined),
  'a UUID (8-4-4-4-12 hexadecimal digits)',
);
const dateTime = stringFormat(canonicalDateTime, DATE_TIME_RANGE);
const date = stringFormat(canonicalDate, 'a date YYYY-MM-DD between 0001-01-01 and 9999-12-31');
const INT64_MAX = 9_223_372_036_854_775_807n;
const INT64_RANGE =
  'a 64-bit integer as a string of decimal digits (-9223372036854775808 to 9223372036854775807)';
/** A 64-bit integer's one form: no leading zeros, no `-0`. */
function int64(value: unknown): unknown {
  if (typeof value !== 'string' || !DECIMAL_INTEGER.test(value) || value.length > 40)
    return new ValueFault(`must be ${INT64_RANGE}`);
  const n = BigInt(value);
  return n > INT64_MAX || n < -INT64_MAX - 1n
    ? new ValueFault(`must be ${INT64_RANGE}`)
    : n.toString();
}

const decimal = stringFormat(
  (v) => (DECIMAL.test(v) && v.length <= 1000 ? v : undefined),
  'a decimal number as a string (digits, an optional - and fraction: "-12.50")',
);

/** A JSON value (object or array) with no number, string or key no engine stores exactly; the first fault found. */
function jsonFault(value: unknown, path: string, depth: number): string | undefined {
  if (depth > 64) return `is nested more than 64 levels deep at ${path || '/'}`;
  if (typeof value === 'number')
    return Number.isFinite(value)
      ? undefined
      : `holds a number that is not finite at ${path || '/'}`;
  if (typeof value === 'string') {
    const fault = textFault(value);
    return fault
      ? `holds a string at ${path || '/'} that ${fault.replace(/^must/, 'does not follow the rule: must')}`
      : undefined;
  }
  if (value === null || typeof value === 'boolean') return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const fault = jsonFault(value[i], `${path}/${i}`, depth + 1);
      if (fault) return fault;
    }
    return undefined;
  }
  if (
    typeof value !== 'object' ||
    (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null)
  )
    return `holds a value that is not JSON at ${path || '/'}`;
  for (const [key, inner] of Object.entries(value)) {
    const keyFault = textFault(key);
    if (keyFault)
      return `holds a key at ${path || '/'} that ${keyFault.replace(/^must/, 'does not follow the rule: must')}`;
    const fault = jsonFault(inner, `${path}/${key}`, depth + 1);
    if (fault) return fault;
  }
  return undefined;
}

/** The UTF-8 length of a key, then its bytes: the order PostgreSQL's jsonb keeps an object's keys in. */
function jsonbKeyOrder(a: string, b: string): number {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length - y.length || Buffer.compare(x, y);
}

/**
 * A JSON value in Kit's form: object keys in jsonb's order (shorter first, then by their UTF-8
 * bytes), so that every engine answers the same text for the same value (jsonb reorders keys,
 * SQLite's text keeps what it is given).
 */
export function canonicalJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonicalJson);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort(jsonbKeyOrder))
    out[key] = canonicalJson((value as Record<string, unknown>)[key]);
  return out;
}

function json(value: unknown): unknown {
  if (value === null || typeof value !== 'object')
    return new ValueFault('must be a JSON object or array');
  const fault = jsonFault(value, '', 0);
  return fault ? new ValueFault(fault) : canonicalJson(value);
}

const KINDS: Readonly<Record<ValueKind, ValueType>> = {
  integer: {
    kind: 'integer',
    operators: ORDERED,
    fromJson: integer,
    fromText: (t) =>
      DECIMAL_INTEGER.test(t)
        ? integer(Number(t))
        : new ValueFault('must be a decimal integer (digits, an optional -)'),
    isCanonical: Number.isSafeInteger,
    listItem: String.raw`-?\d{1,16}`,
    textSchema: () => ({ type: 'integer', minimum: -SAFE, maximum: SAFE }),
  },
  number: {
    kind: 'number',
    operators: ORDERED,
    fromJson: finite,
    fromText: (t) =>
      NUMBER_TEXT.test(t) ? finite(Number(t)) : new ValueFault('must be a decimal number'),
    isCanonical: (v) => typeof v === 'number' && Number.isFinite(v),
    listItem: NUMBER,
    textSchema: () => ({ type: 'number' }),
  },
  boolean: {
    kind: 'boolean',
    operators: ['eq', 'ne', 'null'],
    fromJson: (v) => (typeof v === 'boolean' ? v : new ValueFault('must be true or false')),
    fromText: (t) =>
      t === 'true' ? true : t === 'false' ? false : new ValueFault('must be true or false'),
    isCanonical: (v) => typeof v === 'boolean',
    listItem: 'true|false',
    textSchema: () => ({ type: 'boolean' }),
  },
  string: {
    kind: 'string',
    operators: ALL,
    fromJson: text,
    fromText: text,
    isCanonical: (v) => typeof v === 'string',
    listItem: `[^,]{0,${MAX_VALUE_LENGTH}}`,
    textSchema: (format) => ({
      type: 'string',
      maxLength: MAX_VALUE_LENGTH,
      ...(format ? { format } : {}),
    }),
  },
  uuid: {
    kind: 'uuid',
    operators: ['eq', 'ne', 'in', 'nin', 'null'],
    fromJson: uuid,
    fromText: uuid,
    isCanonical: (v) => typeof v === 'string' && LOWER_UUID.test(v),
    listItem: '[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}',
    textSchema: () => ({ type: 'string', format: 'uuid' }),
  },
  'date-time': {
    kind: 'date-time',
    operators: ORDERED,
    fromJson: dateTime,
    fromText: dateTime,
    isCanonical: (v) =>
      typeof v === 'string' && CANONICAL_DATE_TIME.test(v) && canonicalDateTime(v) === v,
    listItem: '[^,]{1,64}',
    textSchema: () => ({ type: 'string', format: 'date-time', maxLength: 64 }),
  },
  date: {
    kind: 'date',
    operators: ORDERED,
    fromJson: date,
    fromText: date,
    isCanonical: (v) => typeof v === 'string' && canonicalDate(v) === v,
    listItem: String.raw`\d{4}-\d{2}-\d{2}`,
    textSchema: () => ({ type: 'string', format: 'date' }),
  },
  decimal: {
    kind: 'decimal',
    operators: ORDERED,
    fromJson: decimal,
    fromText: decimal,
    isCanonical: (v) => typeof v === 'string' && DECIMAL.test(v),
    listItem: String.raw`-?\d+(?:\.\d+)?`,
    textSchema: () => ({ type: 'string', format: 'decimal', maxLength: MAX_VALUE_LENGTH }),
  },
  int64: {
    kind: 'int64',
    operators: ORDERED,
    fromJson: int64,
    fromText: int64,
    isCanonical: (v) => typeof v === 'string' && int64(v) === v,
    listItem: String.raw`-?\d{1,19}`,
    textSchema: () => ({ type: 'string', format: 'int64', maxLength: 20 }),
  },
  json: {
    kind: 'json',
    // Not ordered or compared: a JSON value has no order any engine agrees on.
    operators: ['null'],
    fromJson: json,
    fromText: () => new ValueFault('cannot be compared: a JSON field is filtered only by null'),
    isCanonical: () => false,
    listItem: '(?!)',
    textSchema: () => ({ type: 'string' }),
  },
};

/** The kind of a field whose JSON Schema type is `type` with `format`. */
export function kindOf(
  type: 'integer' | 'number' | 'boolean' | 'string' | 'object' | 'array',
  format: string | undefined,
): ValueKind {
  if (type === 'object' || type === 'array') return 'json';
  if (type !== 'string') return type;
  return format === 'uuid' ||
    format === 'date-time' ||
    format === 'date' ||
    format === 'decimal' ||
    format === 'int64'
    ? format
    : 'string';
}

/** How values of `kind` are read and checked. */
export function valueType(kind: ValueKind): ValueType {
  return KINDS[kind];
}

/** The regular expression `format: 'int64'` validates a string with (its range is checked after: {@link valueType}). */
export const INT64_FORMAT = DECIMAL_INTEGER;
/** The regular expression `format: 'decimal'` validates with (ajv has no such format of its own). */
export const DECIMAL_FORMAT = DECIMAL;
/** The regular expression `format: 'uuid'` validates with: the hyphenated form only, any case (not `urn:uuid:`, which PostgreSQL's uuid type does not read). */
export const UUID_FORMAT = UUID;
