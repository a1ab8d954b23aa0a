// What every dialect's codecs share (engines/<name>/columns.ts hold each engine's): the shape of a
// codec and of a column type as the start-up check sees it, and the decoders of a driver's value
// to Kit's form. A value Kit cannot answer exactly is never answered: decoding it is a ValueFault
// that names what the column holds.
import { sql, type RawBuilder } from 'kysely';
import type { EntityField } from '../../entity.js';
import { valueType, ValueFault, type ValueKind } from '../../values/kinds.js';
import { canonicalJson } from '../../values/kinds.js';
/**
 * A column's type as the start-up check sees it. `family` groups the types Kit tells apart;
 * `precision`/`scale` are a PostgreSQL `numeric`'s (undefined when unconstrained); `declared` is
 * the type as the database writes it, for messages.
 *
 * @example
 * ```ts
 * const type: ColumnType = { declared: 'numeric(10,2)', family: 'numeric', precision: 10, scale: 2 };
 * ```
 */
export interface ColumnType {
  readonly declared: string;
  readonly family:
    | 'integer'
    | 'float'
    | 'numeric'
    | 'boolean'
    | 'text'
    | 'enum'
    | 'uuid'
    | 'timestamptz'
    | 'timestamp'
    | 'date'
    | 'jsonb'
    | 'json'
    | 'any'
    | 'other';
  readonly precision?: number | undefined;
  readonly scale?: number | undefined;
}

/**
 * How one field's values are read, decoded and bound on one dialect.
 *
 * @example
 * ```ts
 * const codec: ColumnCodec = dialect.codec(field);
 * const value = codec.decode(row.price);
 * ```
 */
export interface ColumnCodec {
  /** What the SELECT list reads for the field (the column, or an expression over it). */
  read(column: string): RawBuilder<unknown>;
  /** A driver's value (not NULL) in Kit's form, or a {@link ValueFault} when it has none. */
  decode(raw: unknown): unknown;
  /** A value in Kit's form as the driver binds it. */
  encode(value: unknown): unknown;
}

const SAFE_RANGE = `outside -${Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}, the integers a JSON number holds exactly`;

/**
 * A driver's integer (a number, a bigint or its text) as a JavaScript number, or a ValueFault past 2^53 - 1.
 *
 * @example
 * ```ts
 * decodeInteger(42n); // 42
 * ```
 */
export function decodeInteger(raw: unknown): unknown {
  const n =
    typeof raw === 'number'
      ? raw
      : typeof raw === 'bigint' || (typeof raw === 'string' && /^-?\d+$/.test(raw))
        ? Number(raw)
        : Number.NaN;
  if (Number.isSafeInteger(n)) return n;
  return new ValueFault(
    Number.isInteger(n) ? `holds an integer ${SAFE_RANGE}` : 'holds a value that is not an integer',
  );
}

/**
 * A driver's number (a double, or an integer's text) as a finite JavaScript number, or a ValueFault.
 *
 * @example
 * ```ts
 * decodeNumber('1.5'); // 1.5
 * ```
 */
export function decodeNumber(raw: unknown): unknown {
  const n =
    typeof raw === 'number'
      ? raw
      : typeof raw === 'bigint' || typeof raw === 'string'
        ? Number(raw)
        : Number.NaN;
  if (!Number.isFinite(n))
    return new ValueFault('holds a value that is not a finite number (NaN or infinity)');
  // An int8 beyond 2^53 - 1 would be rounded; a numeric(p <= 15, s) is exact (the check refuses wider ones).
  if (
    (typeof raw === 'bigint' || (typeof raw === 'string' && /^-?\d+$/.test(raw))) &&
    !Number.isSafeInteger(n)
  )
    return new ValueFault(`holds an integer ${SAFE_RANGE}`);
  return n;
}

/**
 * A driver's boolean (a boolean, or SQLite's 0/1) as a boolean, or a ValueFault.
 *
 * @example
 * ```ts
 * decodeBoolean(1); // true
 * ```
 */
export function decodeBoolean(raw: unknown): unknown {
  if (typeof raw === 'boolean') return raw;
  return typeof raw === 'number' || typeof raw === 'bigint'
    ? Number(raw) !== 0
    : new ValueFault('holds a value that is not a boolean');
}

/**
 * A string already in Kit's form for `kind`, as stored in a text column.
 *
 * @example
 * ```ts
 * const decodeUuid = decodeStored('uuid', 'a lower-case UUID');
 * ```
 */
export function decodeStored(kind: ValueKind, form: string) {
  const type = valueType(kind);
  return (raw: unknown): unknown =>
    type.isCanonical(raw)
      ? raw
      : new ValueFault(
          `holds ${typeof raw === 'string' ? 'text' : 'a value'} that is not ${form}, the form Kit writes and compares`,
        );
}

/**
 * Text as it is, or a ValueFault for anything else.
 *
 * @example
 * ```ts
 * decodeText('abc'); // 'abc'
 * ```
 */
export const decodeText = (raw: unknown): unknown =>
  typeof raw === 'string' ? raw : new ValueFault('holds a value that is not text');
/**
 * A decimal's text as it is, or a ValueFault for NaN, infinity or anything else.
 *
 * @example
 * ```ts
 * decodeDecimal('19.90'); // '19.90'
 * ```
 */
export const decodeDecimal = (raw: unknown): unknown =>
  typeof raw === 'string' && /^-?\d+(?:\.\d+)?$/.test(raw)
    ? raw
    : new ValueFault('holds a value that is not a finite decimal (NaN or infinity)');

/**
 * A 64-bit integer's decimal text as it is, or a ValueFault.
 *
 * @example
 * ```ts
 * decodeInt64('9007199254740993'); // '9007199254740993'
 * ```
 */
export const decodeInt64 = decodeStored('int64', 'a 64-bit integer');
/**
 * JSON text as the engine writes it, parsed; Kit's key order (values/kinds.ts) whatever the engine kept.
 *
 * @example
 * ```ts
 * decodeJson('{"b":1,"a":2}'); // { a: 2, b: 1 } in Kit's key order
 * ```
 */
export function decodeJson(raw: unknown): unknown {
  if (typeof raw !== 'string') return new ValueFault('holds a value that is not JSON text');
  try {
    const value: unknown = JSON.parse(raw);
    return value !== null && typeof value === 'object'
      ? canonicalJson(value)
      : new ValueFault('holds JSON that is not an object or array');
  } catch {
    return new ValueFault('holds text that is not JSON');
  }
}
/**
 * A JSON value bound as its text.
 *
 * @example
 * ```ts
 * encodeJson({ a: 1 }); // '{"a":1}'
 * ```
 */
export const encodeJson = (value: unknown): unknown => JSON.stringify(value);

/**
 * A column read as it is.
 *
 * @example
 * ```ts
 * const read = column('price');
 * ```
 */
export const column = (name: string): RawBuilder<unknown> => sql`${sql.ref(name)}`;
/**
 * A value bound as it is.
 *
 * @example
 * ```ts
 * same(42); // 42
 * ```
 */
export const same = (value: unknown) => value;

/**
 * The field's type as messages name it: `integer`, `string (format date-time)`.
 *
 * @example
 * ```ts
 * kindLabel(field); // 'string (format date-time)'
 * ```
 */
export function kindLabel(field: EntityField): string {
  if (field.kind === 'json') return `${field.type} (JSON)`;
  return field.kind === field.type ? field.type : `string (format ${field.kind})`;
}

/**
 * The significant digits every double holds exactly: a wider numeric is refused for a number field.
 *
 * @example
 * ```ts
 * if (precision <= DOUBLE_DIGITS) return undefined;
 * ```
 */
export const DOUBLE_DIGITS = 15;
/**
 * What to declare for an exact decimal, in the start-up check's messages.
 *
 * @example
 * ```ts
 * return `it holds fractions: ${DECIMAL_ADVICE}`;
 * ```
 */
export const DECIMAL_ADVICE =
  "declare the field { type: 'string', format: 'decimal' } (answered as its exact decimal text)";
