// What differs between the PostgreSQL and SQLite flavours of SQL in the conditions: how
// "contains" is written, case-sensitive (like) and not (ilike). (How each kind of value is read,
// bound and declared: columns.ts.)
import { sql, type RawBuilder } from 'kysely';
import type { SqlFlavour } from './engine.js';

/** `LIKE` metacharacters of the caller's text, matched literally (PostgreSQL's default escape is `\`). */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * The SQL function Kit registers on every SQLite connection: JavaScript's `toLowerCase()`, the
 * Unicode lower case (SQLite's own lower() and LIKE fold only ASCII letters).
 */
export const LOWER_FUNCTION = 'kit_lower';

/** {@link LOWER_FUNCTION}'s body: text in lower case, anything else (NULL) as it is. */
export function lowerText(value: unknown): unknown {
  return typeof value === 'string' ? value.toLowerCase() : value;
}

// ICU's root locale: Unicode case mapping whatever the database's own collation (a C-locale
// database folds ASCII only). Present in PostgreSQL built with ICU (Debian's, the official
// images, the managed services) and in PGlite.
const UNICODE_CASE = sql.raw('"und-x-icu"');

/**
 * "column contains text". Case-sensitive (`like`): PostgreSQL's LIKE (on the column's text, so
 * that citext and enum columns behave as text does); SQLite's LIKE ignores ASCII case, so there it
 * is instr(), which compares bytes and has no wildcards at all. Case-insensitive (`ilike`):
 * PostgreSQL's ILIKE under ICU's root collation; on SQLite instr() over both sides in Unicode lower
 * case ({@link LOWER_FUNCTION}). Both map letter by letter (simple case mapping): `É` matches `é`,
 * `ß` does not match `SS`. `pattern` is what {@link containsPattern} makes of the text (or a
 * statement's slot for it).
 */
export function contains(flavour: SqlFlavour, column: string, pattern: unknown, insensitive = false): RawBuilder<boolean> {
  const ref = sql.ref(column);
  if (flavour === 'sqlite') {
    return insensitive ? sql<boolean>`instr(${sql.raw(LOWER_FUNCTION)}(${ref}), ${pattern}) > 0` : sql<boolean>`instr(${ref}, ${pattern}) > 0`;
  }
  return insensitive ? sql<boolean>`${ref}::text collate ${UNICODE_CASE} ilike ${pattern}` : sql<boolean>`${ref}::text like ${pattern}`;
}

/** The value `contains` binds for `text`. */
export function containsPattern(flavour: SqlFlavour, text: string, insensitive = false): string {
  if (flavour === 'sqlite') return insensitive ? text.toLowerCase() : text;
  return `%${escapeLike(text)}%`;
}
