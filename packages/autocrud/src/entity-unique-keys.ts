// An entity definition's unique keys: lists of writable fields whose values no two rows share
// (a UNIQUE constraint each; the first is what an upsert matches rows on).
import { entityError } from './entity-checks.js';

/**
 * The declared unique keys, each a non-empty list of distinct writable fields; no key twice.
 *
 * @example
 * ```ts
 * uniqueKeys('Product', [['sku'], ['vendor', 'code']], new Set(['sku', 'vendor', 'code'])); // [['sku'], ['vendor', 'code']]
 * ```
 */
export function uniqueKeys(
  name: string,
  declared: unknown,
  writable: ReadonlySet<string>,
): readonly (readonly string[])[] {
  if (declared === undefined) return Object.freeze([]);
  if (!Array.isArray(declared))
    throw entityError(
      name,
      "unique must be an array of keys, each an array of field names: unique: [['sku'], ['vendor', 'code']].",
    );
  const seen = new Set<string>();
  return Object.freeze(
    declared.map((key: unknown, i) => {
      if (!Array.isArray(key) || key.length === 0 || key.some((f) => typeof f !== 'string'))
        throw entityError(
          name,
          `unique[${i}] must be a non-empty array of field names; found ${JSON.stringify(key)}.`,
        );
      const fields = key as string[];
      for (const field of fields) {
        if (!writable.has(field))
          throw entityError(
            name,
            `unique[${i}] names '${field}', which is not a writable field: a unique key is made of fields a client writes.`,
          );
      }
      if (new Set(fields).size !== fields.length)
        throw entityError(name, `unique[${i}] names a field twice.`);
      const id = [...fields].sort().join('\u0000');
      if (seen.has(id))
        throw entityError(name, `unique[${i}] repeats another unique key (${fields.join(', ')}).`);
      seen.add(id);
      return Object.freeze([...fields]);
    }),
  );
}
