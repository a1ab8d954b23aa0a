/**
 * The value written in place of a redacted header or query parameter; the name is kept.
 *
 * @example
 * ```ts
 * // GET /orders?token=abc  ->  entry.query === `token=${REDACTED}`  ('token=***')
 * const leaked = entry.headers.authorization !== undefined && entry.headers.authorization !== REDACTED;
 * ```
 */
export const REDACTED = '***';

/**
 * Marker ending a query string or header value that was cut to its cap; it counts towards the cap.
 *
 * @example
 * ```ts
 * if (entry.query?.endsWith(TRUNCATED_MARKER)) metrics.increment('audit.query_truncated');
 * ```
 */
export const TRUNCATED_MARKER = '...[truncated]';

/**
 * Longest query string kept in an entry, marker included (docs/decisions.md, "Audit trail"). The request itself is
 * served whatever its length.
 *
 * @example
 * ```ts
 * assert.ok((entry.query ?? '').length <= AUDIT_QUERY_CAP);
 * ```
 */
export const AUDIT_QUERY_CAP = 4096;

/**
 * Longest path kept in an entry, marker included: a 12 KB path would otherwise make a 24 KB line
 * (the path is in the message and in a field). The request itself is served whatever its length.
 *
 * @example
 * ```ts
 * if (entry.path.endsWith(TRUNCATED_MARKER)) metrics.increment('audit.path_truncated');
 * ```
 */
export const AUDIT_PATH_CAP = 4096;

/**
 * Longest header value kept in an entry, marker included.
 *
 * @example
 * ```ts
 * for (const value of Object.values(entry.headers)) assert.ok(value.length <= AUDIT_HEADER_VALUE_CAP);
 * ```
 */
export const AUDIT_HEADER_VALUE_CAP = 1024;

/** Cuts `value` to `cap` characters, the last of them the truncation marker. */
export function cap(value: string, limit: number): string {
  if (value.length <= limit) return value;
  let end = limit - TRUNCATED_MARKER.length;
  // Do not leave half of a surrogate pair behind.
  const last = value.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return value.slice(0, end) + TRUNCATED_MARKER;
}

/**
 * Redaction rules, built once at start-up from the options: lower-cased name sets, so a request
 * pays one `Set.has` per header or parameter and nothing else.
 */
export class Redactor {
  readonly #headers: ReadonlySet<string>;
  readonly #params: ReadonlySet<string>;

  constructor(redactHeaders: readonly string[], redactQueryParams: readonly string[]) {
    this.#headers = new Set(redactHeaders.map((h) => h.toLowerCase()));
    this.#params = new Set(redactQueryParams.map((p) => p.toLowerCase()));
  }

  /**
   * Request headers as logged: redacted values become `***`, long values are capped, repeated
   * headers Node keeps as arrays are joined with `, `. When nothing needs changing (the common
   * case) and `copy` is false, the request's own headers object is returned as is: formatting a
   * log line only reads it, so the copy would be pure overhead.
   */
  headers(
    raw: Readonly<Record<string, string | string[] | undefined>>,
    copy: boolean,
  ): Readonly<Record<string, string>> {
    let clean = !copy;
    for (const name in raw) {
      if (!clean) break;
      const value = raw[name];
      if (
        typeof value !== 'string' ||
        value.length > AUDIT_HEADER_VALUE_CAP ||
        this.#headers.has(name) ||
        hasUpperCase(name)
      ) {
        clean = false;
        break;
      }
    }
    if (clean) return raw as Readonly<Record<string, string>>;
    const out: Record<string, string> = {};
    for (const name in raw) {
      const value = raw[name];
      if (value === undefined) continue;
      if (this.redactsHeader(name)) out[name] = REDACTED;
      else
        out[name] = cap(
          typeof value === 'string' ? value : value.join(', '),
          AUDIT_HEADER_VALUE_CAP,
        );
    }
    return out;
  }

  /** Whether a header of this name is logged as `***` (names compared case-insensitively). */
  redactsHeader(name: string): boolean {
    return this.#headers.has(hasUpperCase(name) ? name.toLowerCase() : name);
  }

  /**
   * The query string (without `?`) as logged: values of listed parameters become `***`, then the
   * result is capped at 4096 characters. Everything else is kept verbatim. Names are compared
   * percent-decoded and case-insensitively (`%74oken=x` is redacted like `token=x`), and a
   * bracketed or dotted name by each of its parts (`token[]`, `user[password]`,
   * `user.password`), as `qs`-style parsers turn them into nested values.
   */
  query(raw: string): string {
    if (this.#params.size === 0 || raw.length === 0) return cap(raw, AUDIT_QUERY_CAP);
    // Redacting may shorten the string, so redact a prefix slightly longer than the cap, then cap.
    const input = raw.length > AUDIT_QUERY_CAP * 2 ? raw.slice(0, AUDIT_QUERY_CAP * 2) : raw;
    let out = '';
    let changed = false;
    let start = 0;
    while (start <= input.length) {
      let end = input.indexOf('&', start);
      if (end === -1) end = input.length;
      const eq = input.indexOf('=', start);
      const nameEnd = eq === -1 || eq > end ? end : eq;
      const name = input.slice(start, nameEnd);
      const pair =
        nameEnd < end && this.#listed(normalizeParamName(name)) ? `${name}=${REDACTED}` : null;
      if (pair !== null) changed = true;
      out += (start === 0 ? '' : '&') + (pair ?? input.slice(start, end));
      start = end + 1;
      if (end === input.length) break;
    }
    if (!changed && input === raw) return cap(raw, AUDIT_QUERY_CAP);
    if (input !== raw) out += TRUNCATED_MARKER; // guarantees the cap below marks the cut
    return cap(out, AUDIT_QUERY_CAP);
  }

  /** Whether a (normalised) parameter name, or one of its bracketed or dotted parts, is listed. */
  #listed(name: string): boolean {
    if (this.#params.has(name)) return true;
    if (!NESTED.test(name)) return false;
    for (const part of name.split(PARTS)) if (part !== '' && this.#params.has(part)) return true;
    return false;
  }
}

const NESTED = /[[\].]/;
const PARTS = /[[\].]+/;

// Node and light-my-request lower-case header names; a key added by hand may not be, and must
// not slip past the lower-cased redaction set.
function hasUpperCase(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) return true;
  }
  return false;
}

function normalizeParamName(name: string): string {
  let n = name;
  if (n.includes('+')) n = n.replaceAll('+', ' ');
  if (n.includes('%')) {
    try {
      n = decodeURIComponent(n);
    } catch {
      // Malformed escapes: compare the raw name.
    }
  }
  return n.toLowerCase();
}
