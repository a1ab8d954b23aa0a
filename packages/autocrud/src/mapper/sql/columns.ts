// How each kind of value (src/values/kinds.ts) crosses into and out of each SQL flavour: which
// column types hold it exactly (the start-up check), how it is read (some through an expression
// that does not depend on the session's time zone or date style), how a driver's value is
// decoded to Kit's form, how it is bound, and which column `createTables` makes for it. A value
// Kit cannot answer exactly is never answered: decoding it is an error naming the field.
import { sql, type Expression, type RawBuilder } from 'kysely';
import type { EntityField } from '../../entity.js';
import { valueType, ValueFault, type ValueKind } from '../../values/kinds.js';
import { canonicalJson } from '../../values/kinds.js';
import { canonicalDate, dateTimeFromIso } from '../../values/time.js';
import type { SqlFlavour } from './engine.js';

/**
 * A column's type as the start-up check sees it. `family` groups the types Kit tells apart;
 * `precision`/`scale` are a PostgreSQL `numeric`'s (undefined when unconstrained); `declared` is
 * the type as the database writes it, for messages.
 */
export interface ColumnType {
  readonly declared: string;
  readonly family: 'integer' | 'float' | 'numeric' | 'boolean' | 'text' | 'enum' | 'uuid' | 'timestamptz' | 'timestamp' | 'date' | 'jsonb' | 'json' | 'any' | 'other';
  readonly precision?: number | undefined;
  readonly scale?: number | undefined;
}

/** How one field's values are read, decoded and bound on one flavour. */
export interface ColumnCodec {
  /** What the SELECT list reads for the field (the column, or an expression over it). */
  read(column: string): RawBuilder<unknown>;
  /** A driver's value (not NULL) in Kit's form, or a {@link ValueFault} when it has none. */
  decode(raw: unknown): unknown;
  /** A value in Kit's form as the driver binds it. */
  encode(value: unknown): unknown;
}

const SAFE_RANGE = `outside -${Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}, the integers a JSON number holds exactly`;

function decodeInteger(raw: unknown): unknown {
  const n = typeof raw === 'number' ? raw : typeof raw === 'bigint' || (typeof raw === 'string' && /^-?\d+$/.test(raw)) ? Number(raw) : Number.NaN;
  if (Number.isSafeInteger(n)) return n;
  return new ValueFault(Number.isInteger(n) ? `holds an integer ${SAFE_RANGE}` : 'holds a value that is not an integer');
}

function decodeNumber(raw: unknown): unknown {
  const n = typeof raw === 'number' ? raw : typeof raw === 'bigint' || typeof raw === 'string' ? Number(raw) : Number.NaN;
  if (!Number.isFinite(n)) return new ValueFault('holds a value that is not a finite number (NaN or infinity)');
  // An int8 beyond 2^53 - 1 would be rounded; a numeric(p <= 15, s) is exact (the check refuses wider ones).
  if ((typeof raw === 'bigint' || (typeof raw === 'string' && /^-?\d+$/.test(raw))) && !Number.isSafeInteger(n)) return new ValueFault(`holds an integer ${SAFE_RANGE}`);
  return n;
}

function decodeBoolean(raw: unknown): unknown {
  if (typeof raw === 'boolean') return raw;
  return typeof raw === 'number' || typeof raw === 'bigint' ? Number(raw) !== 0 : new ValueFault('holds a value that is not a boolean');
}

/** A string already in Kit's form for `kind`, as stored in a text column. */
function decodeStored(kind: ValueKind, form: string) {
  const type = valueType(kind);
  return (raw: unknown): unknown => (type.isCanonical(raw) ? raw : new ValueFault(`holds ${typeof raw === 'string' ? 'text' : 'a value'} that is not ${form}, the form Kit writes and compares`));
}

const decodeText = (raw: unknown): unknown => (typeof raw === 'string' ? raw : new ValueFault('holds a value that is not text'));
const decodeDecimal = (raw: unknown): unknown =>
  typeof raw === 'string' && /^-?\d+(?:\.\d+)?$/.test(raw) ? raw : new ValueFault('holds a value that is not a finite decimal (NaN or infinity)');

const decodeInt64 = decodeStored('int64', 'a 64-bit integer');
/** JSON text as the engine writes it, parsed; Kit's key order (values/kinds.ts) whatever the engine kept. */
function decodeJson(raw: unknown): unknown {
  if (typeof raw !== 'string') return new ValueFault('holds a value that is not JSON text');
  try {
    const value: unknown = JSON.parse(raw);
    return value !== null && typeof value === 'object' ? canonicalJson(value) : new ValueFault('holds JSON that is not an object or array');
  } catch {
    return new ValueFault('holds text that is not JSON');
  }
}
const encodeJson = (value: unknown): unknown => JSON.stringify(value);

const column = (name: string): RawBuilder<unknown> => sql`${sql.ref(name)}`;
const asText = (name: string): RawBuilder<unknown> => sql`${sql.ref(name)}::text`;
const same = (value: unknown) => value;

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
    decode: (raw) => (typeof raw === 'string' ? dateTimeFromIso(raw) : undefined) ?? new ValueFault('holds a timestamp outside years 1 to 9999 (or infinity), which RFC 3339 cannot write'),
    encode: same,
  },
  date: {
    read: (name) => sql`to_json(${sql.ref(name)}) #>> '{}'`,
    decode: (raw) => (typeof raw === 'string' ? canonicalDate(raw) : undefined) ?? new ValueFault('holds a date outside years 1 to 9999 (or infinity), which RFC 3339 cannot write'),
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
const POSTGRES_JSON: Readonly<Record<ValueKind, (value: Expression<unknown>) => RawBuilder<string>>> = {
  integer: (v) => sql<string>`(${v})::text`,
  number: (v) =>
    sql<string>`(case when (${v})::float8 <> 0 and (abs((${v})::float8) >= 1e21 or abs((${v})::float8) < 1e-6) then regexp_replace((${v})::float8::text, 'e([+-])0*', 'e\\1') else to_jsonb((${v})::float8)::text end)`,
  boolean: (v) => sql<string>`(${v})::text`,
  string: (v) => sql<string>`to_json((${v})::text)::text`,
  uuid: (v) => sql<string>`to_json((${v})::text)::text`,
  'date-time': (v) => sql<string>`('"' || to_char((${v}) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || '"')`,
  date: (v) => sql<string>`('"' || to_char(${v}, 'YYYY-MM-DD') || '"')`,
  decimal: (v) => sql<string>`('"' || (${v})::text || '"')`,
  int64: (v) => sql<string>`('"' || (${v})::text || '"')`,
  // jsonb's text has a space after each `:` and `,` outside strings: each string token or other
  // character is kept, a space after one dropped (a string's own spaces are inside its token).
  json: (v) => sql<string>`regexp_replace((${v})::text, '("(?:[^"\\\\]|\\\\.)*"|[^"]) ?', '\\1', 'g')`,
};

/** PostgreSQL: the JSON text of `field`'s value `value` (a column or an expression, not NULL) in Kit's form (see POSTGRES_JSON). */
export function jsonText(field: EntityField, value: Expression<unknown>): RawBuilder<string> {
  return POSTGRES_JSON[field.kind](value);
}

/**
 * PostgreSQL: whether two stored values of `field` differ as Kit's forms do (NULLs alike): a
 * decimal by its text (`1.50` and `1.5` are two answers), every other kind by value.
 */
export function differs(field: EntityField, a: Expression<unknown>, b: Expression<unknown>): RawBuilder<boolean> {
  return field.kind === 'decimal' ? sql<boolean>`((${a})::text is distinct from (${b})::text)` : sql<boolean>`((${a}) is distinct from (${b}))`;
}

// SQLite has no boolean (0/1), and no date, time or uuid types: those are text in Kit's form,
// whose text order is their order.
const SQLITE: Readonly<Record<ValueKind, ColumnCodec>> = {
  integer: { read: column, decode: decodeInteger, encode: same },
  number: { read: column, decode: decodeNumber, encode: same },
  boolean: { read: column, decode: decodeBoolean, encode: (value) => (typeof value === 'boolean' ? (value ? 1 : 0) : value) },
  string: { read: column, decode: decodeText, encode: same },
  uuid: { read: column, decode: decodeStored('uuid', 'a lower-case UUID'), encode: same },
  'date-time': { read: column, decode: decodeStored('date-time', 'YYYY-MM-DDTHH:MM:SS.ffffffZ'), encode: same },
  date: { read: column, decode: decodeStored('date', 'YYYY-MM-DD'), encode: same },
  decimal: { read: column, decode: decodeDecimal, encode: same },
  // Bound as a BigInt (an INTEGER), read as its decimal text: node:sqlite would refuse to read one past 2^53 - 1 as a number.
  int64: { read: (name) => sql`cast(${sql.ref(name)} as text)`, decode: decodeInt64, encode: (value) => (typeof value === 'string' ? BigInt(value) : value) },
  json: { read: column, decode: decodeJson, encode: encodeJson },
};

/** The most digits a decimal may declare to be kept in a SQLite REAL: every decimal of 15 significant digits round-trips through a double. */
const DOUBLE_DIGITS_SQLITE = 15;

/**
 * A decimal with a declared precision of at most 15 digits on SQLite: stored as a REAL (the
 * nearest double, which tells every such decimal apart and keeps their order), answered with its
 * declared scale as PostgreSQL's numeric(p, s) answers it (`19.90`).
 */
function sqliteDecimal(scale: number): ColumnCodec {
  return {
    read: column,
    decode: (raw) => {
      const n = typeof raw === 'number' ? raw : typeof raw === 'bigint' ? Number(raw) : Number.NaN;
      if (!Number.isFinite(n)) return new ValueFault('holds a value that is not a finite number');
      const text = n.toFixed(scale);
      return Number(text) === n ? text : new ValueFault(`holds ${n}, which has more than the ${scale} fraction digits declared (x-scale)`);
    },
    encode: (value) => (typeof value === 'string' ? Number(value) : value),
  };
}

/** Whether a decimal field fits a SQLite REAL exactly (see {@link sqliteDecimal}). */
function sqliteHoldsDecimal(field: EntityField): boolean {
  return field.precision !== undefined && field.precision <= DOUBLE_DIGITS_SQLITE;
}

/** How `field`'s values cross into and out of a `flavour` database. */
export function columnCodec(flavour: SqlFlavour, field: EntityField): ColumnCodec {
  if (flavour === 'sqlite' && field.kind === 'decimal' && sqliteHoldsDecimal(field)) return sqliteDecimal(field.scale ?? 0);
  return (flavour === 'postgres' ? POSTGRES : SQLITE)[field.kind];
}

/** A field value as the driver binds it (`null` as is). */
export function encodeValue(flavour: SqlFlavour, field: EntityField, value: unknown): unknown {
  return value === null ? null : columnCodec(flavour, field).encode(value);
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
const SQLITE_DDL: Readonly<Record<ValueKind, string | undefined>> = {
  integer: 'integer',
  number: 'real',
  boolean: 'integer',
  string: 'text',
  uuid: 'text',
  'date-time': 'text',
  date: 'text',
  decimal: undefined,
  int64: 'integer',
  json: 'text',
};

/** The column type `createTables` declares for a field; `undefined` where the flavour has none that holds it exactly. */
export function columnType(flavour: SqlFlavour, field: EntityField): string | undefined {
  if (flavour === 'postgres' && field.kind === 'decimal' && field.precision !== undefined) return `numeric(${field.precision}, ${field.scale ?? 0})`;
  if (flavour === 'sqlite' && field.kind === 'decimal' && sqliteHoldsDecimal(field)) return 'real';
  return flavour === 'postgres' ? POSTGRES_DDL[field.kind] : SQLITE_DDL[field.kind];
}

/** The field's type as messages name it: `integer`, `string (format date-time)`. */
export function kindLabel(field: EntityField): string {
  if (field.kind === 'json') return `${field.type} (JSON)`;
  return field.kind === field.type ? field.type : `string (format ${field.kind})`;
}

const DOUBLE_DIGITS = 15;
const DECIMAL_ADVICE = "declare the field { type: 'string', format: 'decimal' } (answered as its exact decimal text)";

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
 * Whether a column of type `column` holds `field`'s values exactly on `flavour`: `undefined` when
 * it does, else what to declare instead (or why nothing fits), for the start-up check's message.
 */
export function refusal(flavour: SqlFlavour, field: EntityField, column: ColumnType): string | false | undefined {
  const f = column.family;
  if (flavour === 'sqlite') {
    if (field.kind === 'decimal' && sqliteHoldsDecimal(field)) return f === 'float' ? undefined : 'a decimal of at most 15 digits is kept in a REAL (or NUMERIC) column on SQLite';
    if (f === 'any') return field.kind === 'decimal' ? SQLITE_DECIMAL : undefined;
    switch (field.kind) {
      case 'int64':
        return f === 'integer' ? undefined : 'a 64-bit integer needs an INTEGER column (REAL or NUMERIC affinity would turn large values into doubles)';
      case 'integer':
      case 'number':
      case 'boolean':
        return f === 'integer' || f === 'float' ? undefined : false;
      case 'decimal':
        return SQLITE_DECIMAL;
      default:
        return f === 'text' ? undefined : false;
    }
  }
  switch (field.kind) {
    case 'integer':
      if (f === 'integer' || (f === 'numeric' && column.scale === 0)) return undefined;
      return f === 'numeric' || f === 'float' ? `it holds fractions: declare the field { type: 'number' }, or ${DECIMAL_ADVICE.slice('declare the field '.length)}` : (postgresAdvice(f) ?? false);
    case 'number':
      if (f === 'integer' || f === 'float' || (f === 'numeric' && column.precision !== undefined && column.precision <= DOUBLE_DIGITS)) return undefined;
      return f === 'numeric'
        ? `a numeric ${column.precision === undefined ? 'without a precision' : `of ${column.precision} digits`} holds values a double (${DOUBLE_DIGITS} digits) cannot answer exactly: ${DECIMAL_ADVICE}, or constrain the column to numeric(p, s) with p <= ${DOUBLE_DIGITS}`
        : (postgresAdvice(f) ?? false);
    case 'boolean':
      return f === 'boolean' ? undefined : (postgresAdvice(f) ?? false);
    case 'string':
      if (f === 'text' || f === 'enum') return undefined;
      return postgresAdvice(f) ?? 'Kit answers text, varchar, char, citext and enum columns as plain strings; this type has a text form of its own: map the field to a text column (or a view that casts it)';
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
      if (f === 'integer' || (f === 'numeric' && column.scale === 0 && column.precision !== undefined && column.precision <= 18)) return undefined;
      return f === 'numeric' ? DECIMAL_ADVICE : (postgresAdvice(f) ?? false);
    case 'json':
      return f === 'jsonb' ? undefined : (postgresAdvice(f) ?? false);
  }
}

const SQLITE_DECIMAL = "SQLite has no exact decimal column (its NUMERIC keeps 15 digits): declare 'x-precision' (at most 15) and 'x-scale', kept exactly in a REAL, or use PostgreSQL or PGlite";

/** A PostgreSQL column type by its base type's name and `pg_type.typtype`, with a `numeric`'s typmod. */
export function postgresColumnType(declared: string, base: string, typtype: string, typmod: number): ColumnType {
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
      return { declared, family: 'numeric', precision: (packed >> 16) & 0xffff, scale: ((packed & 0x7ff) ^ 0x400) - 0x400 };
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

/** A SQLite column type by its declared type's affinity (https://sqlite.org/datatype3.html#determination_of_column_affinity). */
export function sqliteColumnType(declared: string): ColumnType {
  const t = declared.toLowerCase();
  if (t === '' || (!t.includes('int') && !/char|clob|text/.test(t) && t.includes('blob'))) return { declared: declared === '' ? 'untyped' : declared, family: 'any' };
  if (t.includes('int')) return { declared, family: 'integer' };
  if (/char|clob|text/.test(t)) return { declared, family: 'text' };
  // REAL and NUMERIC affinity both keep integers as integers and other numbers as doubles.
  return { declared, family: 'float' };
}
