// Conditional requests on one row (RFC 9110, section 13): the row's version as a strong ETag,
// `If-Match` on PUT and DELETE, `If-None-Match` on GET. The version check itself happens in the
// mapper's UPDATE/DELETE statement; this file only reads and writes the headers.

/** The ETag of a row version: strong, since one version has exactly one representation. */
export function etagOf(version: unknown): string {
  return `"${String(version)}"`;
}

/**
 * A parsed `If-Match`/`If-None-Match`: `*`, or the list of entity-tags it names (`weak` for
 * `W/"..."`, `opaque` without the quotes).
 */
export type Preconditions =
  | { readonly any: true }
  | {
      readonly any: false;
      readonly tags: ReadonlyArray<{ readonly weak: boolean; readonly opaque: string }>;
    };

// One entity-tag of a list, with the list's whitespace, empty elements and comma around it.
const ENTITY_TAG = /[\s,]*(W\/)?"([\x21\x23-\x7E\x80-\xFF]*)"\s*(?:,|$)/y;

/** `*` or a comma-separated list of entity-tags; `undefined` when the header is malformed. */
export function parsePreconditions(header: string): Preconditions | undefined {
  if (header.trim() === '*') return { any: true };
  const tags: Array<{ weak: boolean; opaque: string }> = [];
  ENTITY_TAG.lastIndex = 0;
  while (ENTITY_TAG.lastIndex < header.length) {
    const start = ENTITY_TAG.lastIndex;
    const match = ENTITY_TAG.exec(header);
    if (!match) {
      // Trailing whitespace and empty list elements are allowed by the list syntax.
      if (/^[\s,]*$/.test(header.slice(start))) break;
      return undefined;
    }
    tags.push({ weak: match[1] !== undefined, opaque: match[2] ?? '' });
  }
  return tags.length === 0 ? undefined : { any: false, tags };
}

/**
 * The versions an `If-Match` list accepts. Strong comparison (RFC 9110, 13.1.1): a weak tag
 * never matches, nor does a tag that is not a version this service issued; the list may so be
 * empty, which no row matches.
 */
export function matchingVersions(preconditions: Preconditions & { any: false }): number[] {
  const versions: number[] = [];
  for (const tag of preconditions.tags) {
    if (tag.weak || !/^(?:0|[1-9]\d{0,15})$/.test(tag.opaque)) continue;
    const version = Number(tag.opaque);
    if (Number.isSafeInteger(version)) versions.push(version);
  }
  return versions;
}

/** `If-None-Match` against the current ETag: weak comparison (RFC 9110, 13.1.2). */
export function noneMatch(preconditions: Preconditions, etag: string): boolean {
  if (preconditions.any) return false;
  const opaque = etag.slice(1, -1);
  return !preconditions.tags.some((tag) => tag.opaque === opaque);
}
