// What differs between the PostgreSQL and SQLite flavours of SQL, in one place: how a value is
// bound, how "contains" is written, and which column types `createTables` uses.
import { sql, type RawBuilder } from 'kysely';
import type { EntityField } from '../entity.js';
import type { SqlFlavour } from './engine.js';

/** A field value as the driver binds it: SQLite has no boolean, node:sqlite binds none. */
export function encodeValue(flavour: SqlFlavour, value: unknown): unknown {
  if (flavour === 'sqlite' && typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

/** `LIKE` metacharacters of the caller's text, matched literally (PostgreSQL's default escape is `\`). */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * "column contains text", case-sensitive on both flavours: PostgreSQL's LIKE is; SQLite's is not
 * for ASCII letters, so it uses instr(), which compares bytes and has no wildcards at all.
 */
export function contains(flavour: SqlFlavour, column: string, text: string): RawBuilder<boolean> {
  if (flavour === 'sqlite') return sql<boolean>`instr(${sql.ref(column)}, ${text}) > 0`;
  return sql<boolean>`${sql.ref(column)} like ${`%${escapeLike(text)}%`}`;
}

/** The column type `createTables` declares for a field. */
export function columnType(flavour: SqlFlavour, field: EntityField): string {
  switch (field.type) {
    case 'integer':
      return flavour === 'postgres' ? 'bigint' : 'integer';
    case 'number':
      return flavour === 'postgres' ? 'double precision' : 'real';
    case 'boolean':
      return flavour === 'postgres' ? 'boolean' : 'integer';
    case 'string':
      return flavour === 'postgres' && field.format === 'uuid' ? 'uuid' : 'text';
  }
}

/**
 * The value family a column's declared type belongs to, for the start-up check: a field may only
 * map to a column of a compatible family. `undefined` accepts anything (SQLite without a type).
 */
export function columnFamily(flavour: SqlFlavour, dataType: string): 'integer' | 'number' | 'boolean' | 'string' | undefined {
  const t = dataType.toLowerCase();
  if (flavour === 'postgres') {
    if (/^int[248]$|^(smallint|integer|bigint)$/.test(t)) return 'integer';
    if (/^(float[48]|numeric|decimal|real|double precision)$/.test(t)) return 'number';
    if (t === 'bool' || t === 'boolean') return 'boolean';
    return 'string';
  }
  // SQLite type affinity (https://sqlite.org/datatype3.html#determination_of_column_affinity).
  if (t === '') return undefined;
  if (t.includes('int')) return 'integer';
  if (/char|clob|text/.test(t)) return 'string';
  if (t.includes('blob')) return undefined;
  if (/real|floa|doub/.test(t)) return 'number';
  return t.includes('bool') ? 'boolean' : 'number';
}

/** Which field types a column family can hold (integers fit a numeric column, booleans a SQLite integer). */
export function fits(field: EntityField, family: ReturnType<typeof columnFamily>, flavour: SqlFlavour): boolean {
  if (family === undefined) return true;
  switch (field.type) {
    case 'integer':
      return family === 'integer' || family === 'number';
    case 'number':
      return family === 'number' || family === 'integer';
    case 'boolean':
      return family === 'boolean' || (flavour === 'sqlite' && (family === 'integer' || family === 'number'));
    case 'string':
      return family === 'string';
  }
}
