/**
 * Decides whether a raw request URL (path and query, as received) is excluded from the audit
 * trail (docs/decisions.md, "Audit trail"): case-insensitive, exact or as a prefix that ends at `/`, so `/docs`
 * excludes `/docs`, `/DOCS/`, `/docs/static/x.js` and `/docs?x`, but not `/docsx`, and `/healthz`
 * does not exclude `/healthzz`.
 *
 * The list is lower-cased once at start-up; per request the URL is compared in place, character
 * by character with ASCII case folding, so nothing is allocated on the hot path.
 */
export type ExcludeMatcher = (url: string) => boolean;

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
  return (url) => {
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
