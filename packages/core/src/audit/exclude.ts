/**
 * Decides whether a raw request URL (path and query, as received) is excluded from the audit
 * trail (docs/decisions.md, "Audit trail"): case-insensitive, exact or as a prefix that ends at `/`, so `/docs`
 * excludes `/docs`, `/DOCS/`, `/docs/static/x.js` and `/docs?x`, but not `/docsx`, and `/healthz`
 * does not exclude `/healthzz`.
 *
 * The list is lower-cased once at start-up; per request the URL is compared in place, character
 * by character with ASCII case folding, so nothing is allocated on the hot path. Most URLs are
 * told apart by their first character after `/` alone: a table of the prefixes' first characters
 * answers them without walking the list.
 */
type ExcludeMatcher = (url: string) => boolean;

/** Builds the matcher for `excludePaths` (validated: each starts with `/`). */
export function createExcludeMatcher(paths: readonly string[]): ExcludeMatcher {
  const prefixes = [
    ...new Set(
      paths.map((p) => {
        const lower = p.toLowerCase();
        // '/docs/' and '/docs' mean the same thing; '/' alone excludes everything.
        return lower.length > 1 ? lower.replace(/\/+$/, '') || '/' : lower;
      }),
    ),
  ];
  if (prefixes.length === 0) return () => false;
  if (prefixes.includes('/')) return () => true;
  // Indexed by the lower-cased ASCII character after the leading `/`; a prefix whose character
  // there is not ASCII marks every entry, so such URLs always walk the list.
  const firsts = new Uint8Array(128);
  for (const p of prefixes) {
    const c = p.charCodeAt(1);
    if (c < 128) firsts[c] = 1;
    else firsts.fill(1);
  }
  return (url) => {
    let c = url.charCodeAt(1);
    if (c >= 65 && c <= 90) c += 32;
    if (c < 128 && firsts[c] === 0) return false;
    for (let i = 0; i < prefixes.length; i++) {
      if (startsWithPath(url, prefixes[i] as string)) return true;
    }
    return false;
  };
}

function startsWithPath(url: string, prefix: string): boolean {
  const n = prefix.length;
  if (url.length < n) return false;
  for (let i = 0; i < n; i++) {
    let c = url.charCodeAt(i);
    if (c >= 65 && c <= 90) c += 32; // ASCII A-Z -> a-z; the prefix is already lower case
    if (c !== prefix.charCodeAt(i)) return false;
  }
  if (url.length === n) return true;
  const next = url.charCodeAt(n);
  return next === 47 /* / */ || next === 63 /* ? */ || next === 35; /* # */
}
