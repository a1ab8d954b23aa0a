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
 */
export interface ColumnType {
  readonly declared: string;
  readonly family: 'integer' | 'float' | 'numeric' | 'boolean' | 'text' | 'enum' | 'uuid' | 'timestamptz' | 'timestamp' | 'date' | 'jsonb' | 'json' | 'any' | 'other';
  readonly precision?: number | undefined;
  readonly scale?: number | undefined;
}

/** How one field's values are read, decoded and bound on one dialect. */
export interface ColumnCodec {
  /** What the SELECT list reads for the field (the column, or an expression over it). */
  read(column: string): RawBuilder<unknown>;
  /** A driver's value (not NULL) in Kit's form, or a {@link ValueFault} when it has none. */
  decode(raw: unknown): unknown;
  /** A value in Kit's form as the driver binds it. */
  encode(value: unknown): unknown;
}

const SAFE_RANGE = `outside -${Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}, the integers a JSON number holds exactly`;

export function decodeInteger(raw: unknown): unknown {
  const n = typeof raw === 'number' ? raw : typeof raw === 'bigint' || (typeof raw === 'string' && /^-?\d+$/.test(raw)) ? Number(raw) : Number.NaN;
  if (Number.isSafeInteger(n)) return n;
  return new ValueFault(Number.isInteger(n) ? `holds an integer ${SAFE_RANGE}` : 'holds a value that is not an integer');
}

export function decodeNumber(raw: unknown): unknown {
  const n = typeof raw === 'number' ? raw : typeof raw === 'bigint' || typeof raw === 'string' ? Number(raw) : Number.NaN;
  if (!Number.isFinite(n)) return new ValueFault('holds a value that is not a finite number (NaN or infinity)');
  // An int8 beyond 2^53 - 1 would be rounded; a numeric(p <= 15, s) is exact (the check refuses wider ones).
  if ((typeof raw === 'bigint' || (typeof raw === 'string' && /^-?\d+$/.test(raw))) && !Number.isSafeInteger(n)) return new ValueFault(`holds an integer ${SAFE_RANGE}`);
  return n;
}

export function decodeBoolean(raw: unknown): unknown {
  if (typeof raw === 'boolean') return raw;
  return typeof raw === 'number' || typeof raw === 'bigint' ? Number(raw) !== 0 : new ValueFault('holds a value that is not a boolean');
}

/** A string already in Kit's form for `kind`, as stored in a text column. */
export function decodeStored(kind: ValueKind, form: string) {
  const type = valueType(kind);
  return (raw: unknown): unknown => (type.isCanonical(raw) ? raw : new ValueFault(`holds ${typeof raw === 'string' ? 'text' : 'a value'} that is not ${form}, the form Kit writes and compares`));
}

export const decodeText = (raw: unknown): unknown => (typeof raw === 'string' ? raw : new ValueFault('holds a value that is not text'));
export const decodeDecimal = (raw: unknown): unknown =>
  typeof raw === 'string' && /^-?\d+(?:\.\d+)?$/.test(raw) ? raw : new ValueFault('holds a value that is not a finite decimal (NaN or infinity)');

export const decodeInt64 = decodeStored('int64', 'a 64-bit integer');
/** JSON text as the engine writes it, parsed; Kit's key order (values/kinds.ts) whatever the engine kept. */
export function decodeJson(raw: unknown): unknown {
  if (typeof raw !== 'string') return new ValueFault('holds a value that is not JSON text');
  try {
    const value: unknown = JSON.parse(raw);
    return value !== null && typeof value === 'object' ? canonicalJson(value) : new ValueFault('holds JSON that is not an object or array');
  } catch {
    return new ValueFault('holds text that is not JSON');
  }
}
export const encodeJson = (value: unknown): unknown => JSON.stringify(value);

export const column = (name: string): RawBuilder<unknown> => sql`${sql.ref(name)}`;
export const asText = (name: string): RawBuilder<unknown> => sql`${sql.ref(name)}::text`;
export const same = (value: unknown) => value;

/** The field's type as messages name it: `integer`, `string (format date-time)`. */
export function kindLabel(field: EntityField): string {
  if (field.kind === 'json') return `${field.type} (JSON)`;
  return field.kind === field.type ? field.type : `string (format ${field.kind})`;
}

export const DOUBLE_DIGITS = 15;
export const DECIMAL_ADVICE = "declare the field { type: 'string', format: 'decimal' } (answered as its exact decimal text)";
