// What differs between the PostgreSQL and SQLite flavours of SQL in the conditions: how
// "contains" is written. (How each kind of value is read, bound and declared: columns.ts.)
import { sql, type RawBuilder } from 'kysely';
import type { SqlFlavour } from './engine.js';

/** `LIKE` metacharacters of the caller's text, matched literally (PostgreSQL's default escape is `\`). */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * "column contains text", case-sensitive on both flavours: PostgreSQL's LIKE is (on the column's
 * text, so that citext and enum columns behave as text does); SQLite's is not for ASCII letters,
 * so it uses instr(), which compares bytes and has no wildcards at all. `pattern` is what
 * {@link containsPattern} makes of the text (or a statement's slot for it).
 */
export function contains(flavour: SqlFlavour, column: string, pattern: unknown): RawBuilder<boolean> {
  if (flavour === 'sqlite') return sql<boolean>`instr(${sql.ref(column)}, ${pattern}) > 0`;
  return sql<boolean>`${sql.ref(column)}::text like ${pattern}`;
}

/** The value `contains` binds for `text`. */
export function containsPattern(flavour: SqlFlavour, text: string): string {
  return flavour === 'sqlite' ? text : `%${escapeLike(text)}%`;
}
