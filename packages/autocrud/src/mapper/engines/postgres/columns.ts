// How each kind of value (src/values/kinds.ts) crosses into and out of PostgreSQL (and PGlite):
// which column types hold it exactly (the start-up check), how it is read (some through an
// expression that does not depend on the session's time zone or date style), how it is bound,
// and which column `createTables` makes for it.
import { sql, type Expression, type RawBuilder } from 'kysely';
import type { EntityField } from '../../../entity.js';
import { ValueFault, type ValueKind } from '../../../values/kinds.js';
import { canonicalDate, dateTimeFromIso } from '../../../values/time.js';
import {
  column,
  DECIMAL_ADVICE,
  decodeBoolean,
  decodeDecimal,
  decodeInt64,
  decodeInteger,
  decodeJson,
  decodeNumber,
  decodeStored,
  decodeText,
  DOUBLE_DIGITS,
  encodeJson,
  same,
  type ColumnCodec,
  type ColumnType,
} from '../../sql/columns.js';

// A column read as its text: PostgreSQL's own form of a value whose JavaScript form would round it.
const asText = (name: string): RawBuilder<unknown> => sql`${sql.ref(name)}::text`;

// PostgreSQL's JSON encoding writes timestamps and dates in ISO 8601 whatever the session's
// DateStyle and TimeZone, and with their microseconds; a Date (pg's and PGlite's default parse)
// keeps milliseconds and shifts a `date` by the process's time zone.
const POSTGRES: Readonly<Record<ValueKind, ColumnCodec>> = {
  integer: { read: column, decode: decodeInteger, encode: same },
  number: { read: column, decode: decodeNumber, encode: same },
  boolean: { read: column, decode: decodeBoolean, encode: same },
  string: { read: column, decode: decodeText, encode: same },
  uuid: { read: column, decode: decodeStored('uuid', 'a lower-case UUID'), encode: same },
  'date-time': {
    read: (name) => sql`to_json(${sql.ref(name)} at time zone 'UTC') #>> '{}'`,
    decode: (raw) =>
      (typeof raw === 'string' ? dateTimeFromIso(raw) : undefined) ??
      new ValueFault(
        'holds a timestamp outside years 1 to 9999 (or infinity), which RFC 3339 cannot write',
      ),
    encode: same,
  },
  date: {
    read: (name) => sql`to_json(${sql.ref(name)}) #>> '{}'`,
    decode: (raw) =>
      (typeof raw === 'string' ? canonicalDate(raw) : undefined) ??
      new ValueFault(
        'holds a date outside years 1 to 9999 (or infinity), which RFC 3339 cannot write',
      ),
    encode: same,
  },
  decimal: { read: asText, decode: decodeDecimal, encode: same },
  // Read as text: pg and PGlite would give a bigint as a JavaScript number (rounded) or a BigInt.
  int64: { read: asText, decode: decodeInt64, encode: same },
  // Read as text and parsed here: the same on pg and PGlite whatever their type parsers do.
  json: { read: asText, decode: decodeJson, encode: encodeJson },
};

/**
 * Kit's JSON text of a PostgreSQL value (not NULL) of each kind, in SQL: what `JSON.stringify`
 * writes of the value {@link POSTGRES}'s codec decodes, so that a change row written by SQL (a
 * sink's SQL form, changes.ts) holds what the JavaScript sink would. A number is written as
 * JavaScript writes a double (plain digits from 1e-6 to 1e21, else `1e+21`, `1.5e-7`), a
 * timestamp with its six fraction digits in UTC, int64 and decimal as their text, a JSON value
 * compact in jsonb's key order (Kit's, values/kinds.ts `canonicalJson`).
 */
const POSTGRES_JSON: Readonly<
  Record<ValueKind, (value: Expression<unknown>) => RawBuilder<string>>
> = {
  integer: (v) => sql<string>`(${v})::text`,
  number: (v) =>
    sql<string>`(case when (${v})::float8 <> 0 and (abs((${v})::float8) >= 1e21 or abs((${v})::float8) < 1e-6) then regexp_replace((${v})::float8::text, 'e([+-])0*', 'e\\1') else to_jsonb((${v})::float8)::text end)`,
  boolean: (v) => sql<string>`(${v})::text`,
  string: (v) => sql<string>`to_json((${v})::text)::text`,
  uuid: (v) => sql<string>`to_json((${v})::text)::text`,
  'date-time': (v) =>
    sql<string>`('"' || to_char((${v}) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || '"')`,
  date: (v) => sql<string>`('"' || to_char(${v}, 'YYYY-MM-DD') || '"')`,
  decimal: (v) => sql<string>`('"' || (${v})::text || '"')`,
  int64: (v) => sql<string>`('"' || (${v})::text || '"')`,
  // jsonb's text has a space after each `:` and `,` outside strings: each string token or other
  // character is kept, a space after one dropped (a string's own spaces are inside its token).
  json: (v) =>
    sql<string>`regexp_replace((${v})::text, '("(?:[^"\\\\]|\\\\.)*"|[^"]) ?', '\\1', 'g')`,
};

/**
 * PostgreSQL: the JSON text of `field`'s value `value` (a column or an expression, not NULL) in Kit's form (see POSTGRES_JSON).
 *
 * @example
 * ```ts
 * const text = jsonText(field, sql.ref('kit_new.price'));
 * ```
 */
export function jsonText(field: EntityField, value: Expression<unknown>): RawBuilder<string> {
  return POSTGRES_JSON[field.kind](value);
}

/**
 * PostgreSQL: whether two stored values of `field` differ as Kit's forms do (NULLs alike): a
 * decimal by its text (`1.50` and `1.5` are two answers), every other kind by value.
 *
 * @example
 * ```ts
 * const changed = differs(field, sql.ref('kit_old.price'), sql.ref('kit_new.price'));
 * ```
 */
export function differs(
  field: EntityField,
  a: Expression<unknown>,
  b: Expression<unknown>,
): RawBuilder<boolean> {
  return field.kind === 'decimal'
    ? sql<boolean>`((${a})::text is distinct from (${b})::text)`
    : sql<boolean>`((${a}) is distinct from (${b}))`;
}

const POSTGRES_DDL: Readonly<Record<ValueKind, string>> = {
  integer: 'bigint',
  number: 'double precision',
  boolean: 'boolean',
  string: 'text',
  uuid: 'uuid',
  'date-time': 'timestamptz',
  date: 'date',
  decimal: 'numeric',
  int64: 'bigint',
  json: 'jsonb',
};

/**
 * The column type `createTables` declares for a field on PostgreSQL.
 *
 * @example
 * ```ts
 * postgresColumnDdl(field); // 'numeric(10, 2)'
 * ```
 */
export function postgresColumnDdl(field: EntityField): string {
  if (field.kind === 'decimal' && field.precision !== undefined)
    return `numeric(${field.precision}, ${field.scale ?? 0})`;
  return POSTGRES_DDL[field.kind];
}

/**
 * How `field`'s values cross into and out of PostgreSQL.
 *
 * @example
 * ```ts
 * const read = postgresCodec(field).read('created_at');
 * ```
 */
export function postgresCodec(field: EntityField): ColumnCodec {
  return POSTGRES[field.kind];
}

/** What to declare for a PostgreSQL column of `family` (the field being of another kind). */
function postgresAdvice(family: ColumnType['family']): string | undefined {
  switch (family) {
    case 'timestamptz':
      return "declare the field { type: 'string', format: 'date-time' } (answered in UTC with its microseconds)";
    case 'timestamp':
      return "a timestamp without time zone holds no offset, so no instant can be answered for it: make the column timestamptz and declare the field { type: 'string', format: 'date-time' }";
    case 'date':
      return "declare the field { type: 'string', format: 'date' }";
    case 'numeric':
      return DECIMAL_ADVICE;
    case 'uuid':
      return "declare the field { type: 'string', format: 'uuid' }";
    case 'integer':
      return "declare the field { type: 'integer' }";
    case 'float':
      return "declare the field { type: 'number' }";
    case 'boolean':
      return "declare the field { type: 'boolean' }";
    case 'jsonb':
      return "declare the field with an object or array schema ({ type: 'object', ... })";
    case 'json':
      return 'a json column keeps its text as written (duplicate keys, spacing), which Kit does not answer as such: make the column jsonb';
    default:
      return undefined;
  }
}

/**
 * Whether a PostgreSQL column of type `column` holds `field`'s values exactly: `undefined` when
 * it does, else what to declare instead (or why nothing fits), for the start-up check's message.
 *
 * @example
 * ```ts
 * postgresRefusal(field, { declared: 'text', family: 'text' }); // undefined: text holds a string
 * ```
 */
export function postgresRefusal(
  field: EntityField,
  column: ColumnType,
): string | false | undefined {
  const f = column.family;
  switch (field.kind) {
    case 'integer':
      if (f === 'integer' || (f === 'numeric' && column.scale === 0)) return undefined;
      return f === 'numeric' || f === 'float'
        ? `it holds fractions: declare the field { type: 'number' }, or ${DECIMAL_ADVICE.slice('declare the field '.length)}`
        : (postgresAdvice(f) ?? false);
    case 'number':
      if (
        f === 'integer' ||
        f === 'float' ||
        (f === 'numeric' && column.precision !== undefined && column.precision <= DOUBLE_DIGITS)
      )
        return undefined;
      return f === 'numeric'
        ? `a numeric ${column.precision === undefined ? 'without a precision' : `of ${column.precision} digits`} holds values a double (${DOUBLE_DIGITS} digits) cannot answer exactly: ${DECIMAL_ADVICE}, or constrain the column to numeric(p, s) with p <= ${DOUBLE_DIGITS}`
        : (postgresAdvice(f) ?? false);
    case 'boolean':
      return f === 'boolean' ? undefined : (postgresAdvice(f) ?? false);
    case 'string':
      if (f === 'text' || f === 'enum') return undefined;
      return (
        postgresAdvice(f) ??
        'Kit answers text, varchar, char, citext and enum columns as plain strings; this type has a text form of its own: map the field to a text column (or a view that casts it)'
      );
    case 'uuid':
      return f === 'uuid' || f === 'text' ? undefined : (postgresAdvice(f) ?? false);
    case 'date-time':
      if (f === 'timestamptz') return undefined;
      return f === 'timestamp' || f === 'text'
        ? `a date-time field needs a timestamptz column on PostgreSQL (${f === 'text' ? 'text compares as text, not by time' : 'a timestamp without time zone holds no offset'}): ALTER the column to timestamptz, or drop format: 'date-time' to keep plain text`
        : (postgresAdvice(f) ?? false);
    case 'date':
      return f === 'date' ? undefined : (postgresAdvice(f) ?? false);
    case 'decimal':
      return f === 'numeric' ? undefined : (postgresAdvice(f) ?? false);
    case 'int64':
      if (
        f === 'integer' ||
        (f === 'numeric' &&
          column.scale === 0 &&
          column.precision !== undefined &&
          column.precision <= 18)
      )
        return undefined;
      return f === 'numeric' ? DECIMAL_ADVICE : (postgresAdvice(f) ?? false);
    case 'json':
      return f === 'jsonb' ? undefined : (postgresAdvice(f) ?? false);
  }
}

/**
 * A PostgreSQL column type by its base type's name and `pg_type.typtype`, with a `numeric`'s typmod.
 *
 * @example
 * ```ts
 * postgresColumnType('numeric(10,2)', 'numeric', 'b', 655366); // { family: 'numeric', precision: 10, scale: 2 }
 * ```
 */
export function postgresColumnType(
  declared: string,
  base: string,
  typtype: string,
  typmod: number,
): ColumnType {
  if (typtype === 'e') return { declared, family: 'enum' };
  switch (base) {
    case 'int2':
    case 'int4':
    case 'int8':
      return { declared, family: 'integer' };
    case 'float4':
    case 'float8':
      return { declared, family: 'float' };
    case 'numeric': {
      if (typmod < 0) return { declared, family: 'numeric' };
      const packed = typmod - 4;
      // The scale is an 11-bit signed field since PostgreSQL 15 (numeric(3, -2)).
      return {
        declared,
        family: 'numeric',
        precision: (packed >> 16) & 0xffff,
        scale: ((packed & 0x7ff) ^ 0x400) - 0x400,
      };
    }
    case 'bool':
      return { declared, family: 'boolean' };
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'name':
    case 'citext':
      return { declared, family: 'text' };
    case 'uuid':
    case 'timestamptz':
    case 'timestamp':
    case 'date':
    case 'jsonb':
    case 'json':
      return { declared, family: base };
    default:
      return { declared, family: 'other' };
  }
}
