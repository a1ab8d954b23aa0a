// How each kind of value (src/values/kinds.ts) crosses into and out of SQLite: which column
// types hold it exactly (by affinity), how it is read, decoded and bound, and which column
// `createTables` makes for it.
import { sql } from 'kysely';
import type { EntityField } from '../../../entity.js';
import { ValueFault, type ValueKind } from '../../../values/kinds.js';
import {
  column,
  decodeBoolean,
  decodeDecimal,
  decodeInt64,
  decodeInteger,
  decodeJson,
  decodeNumber,
  decodeStored,
  decodeText,
  encodeJson,
  same,
  type ColumnCodec,
  type ColumnType,
} from '../../sql/columns.js';

// SQLite has no boolean (0/1), and no date, time or uuid types: those are text in Kit's form,
// whose text order is their order.
const SQLITE: Readonly<Record<ValueKind, ColumnCodec>> = {
  integer: { read: column, decode: decodeInteger, encode: same },
  number: { read: column, decode: decodeNumber, encode: same },
  boolean: {
    read: column,
    decode: decodeBoolean,
    encode: (value) => (typeof value === 'boolean' ? (value ? 1 : 0) : value),
  },
  string: { read: column, decode: decodeText, encode: same },
  uuid: { read: column, decode: decodeStored('uuid', 'a lower-case UUID'), encode: same },
  'date-time': {
    read: column,
    decode: decodeStored('date-time', 'YYYY-MM-DDTHH:MM:SS.ffffffZ'),
    encode: same,
  },
  date: { read: column, decode: decodeStored('date', 'YYYY-MM-DD'), encode: same },
  decimal: { read: column, decode: decodeDecimal, encode: same },
  // Bound as a BigInt (an INTEGER), read as its decimal text: node:sqlite would refuse to read one past 2^53 - 1 as a number.
  int64: {
    read: (name) => sql`cast(${sql.ref(name)} as text)`,
    decode: decodeInt64,
    encode: (value) => (typeof value === 'string' ? BigInt(value) : value),
  },
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
      return Number(text) === n
        ? text
        : new ValueFault(
            `holds ${n}, which has more than the ${scale} fraction digits declared (x-scale)`,
          );
    },
    encode: (value) => (typeof value === 'string' ? Number(value) : value),
  };
}

/** Whether a decimal field fits a SQLite REAL exactly (see {@link sqliteDecimal}). */
function sqliteHoldsDecimal(field: EntityField): boolean {
  return field.precision !== undefined && field.precision <= DOUBLE_DIGITS_SQLITE;
}

/**
 * How `field`'s values cross into and out of SQLite.
 *
 * @example
 * ```ts
 * sqliteCodec(field).encode(true); // 1
 * ```
 */
export function sqliteCodec(field: EntityField): ColumnCodec {
  if (field.kind === 'decimal' && sqliteHoldsDecimal(field)) return sqliteDecimal(field.scale ?? 0);
  return SQLITE[field.kind];
}

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

/**
 * The column type `createTables` declares for a field on SQLite; `undefined` where none holds it exactly.
 *
 * @example
 * ```ts
 * sqliteColumnDdl(field); // 'text' for a date-time field
 * ```
 */
export function sqliteColumnDdl(field: EntityField): string | undefined {
  if (field.kind === 'decimal' && sqliteHoldsDecimal(field)) return 'real';
  return SQLITE_DDL[field.kind];
}

const SQLITE_DECIMAL =
  "SQLite has no exact decimal column (its NUMERIC keeps 15 digits): declare 'x-precision' (at most 15) and 'x-scale', kept exactly in a REAL, or use PostgreSQL or PGlite";

/**
 * Whether a SQLite column of type `column` holds `field`'s values exactly: `undefined` when it
 * does, else what to declare instead (or why nothing fits), for the start-up check's message.
 *
 * @example
 * ```ts
 * sqliteRefusal(field, { declared: 'REAL', family: 'float' }); // why a 64-bit integer needs INTEGER
 * ```
 */
export function sqliteRefusal(field: EntityField, column: ColumnType): string | false | undefined {
  const f = column.family;
  if (field.kind === 'decimal' && sqliteHoldsDecimal(field))
    return f === 'float'
      ? undefined
      : 'a decimal of at most 15 digits is kept in a REAL (or NUMERIC) column on SQLite';
  if (f === 'any') return field.kind === 'decimal' ? SQLITE_DECIMAL : undefined;
  switch (field.kind) {
    case 'int64':
      return f === 'integer'
        ? undefined
        : 'a 64-bit integer needs an INTEGER column (REAL or NUMERIC affinity would turn large values into doubles)';
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

/**
 * A SQLite column type by its declared type's affinity (https://sqlite.org/datatype3.html#determination_of_column_affinity).
 *
 * @example
 * ```ts
 * sqliteColumnType('VARCHAR(20)'); // { declared: 'VARCHAR(20)', family: 'text' }
 * ```
 */
export function sqliteColumnType(declared: string): ColumnType {
  const t = declared.toLowerCase();
  if (t === '' || (!t.includes('int') && !/char|clob|text/.test(t) && t.includes('blob')))
    return { declared: declared === '' ? 'untyped' : declared, family: 'any' };
  if (t.includes('int')) return { declared, family: 'integer' };
  if (/char|clob|text/.test(t)) return { declared, family: 'text' };
  // REAL and NUMERIC affinity both keep integers as integers and other numbers as doubles.
  return { declared, family: 'float' };
}
