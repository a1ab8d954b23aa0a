import path from 'node:path';
import { KitError } from '@kit/core';

/** A parsed connection string. */
export type ConnectionTarget =
  | { readonly kind: 'postgres'; readonly url: string; readonly redacted: string }
  | { readonly kind: 'pglite'; readonly directory: string | undefined; readonly redacted: string }
  | { readonly kind: 'sqlite'; readonly file: string; readonly redacted: string };

// Query or keyword parameters whose value is a secret, in a URL's query (`?password=...`) or a
// libpq keyword/value string (`host=db password='s 3'`); a quoted value may hold spaces.
const SECRET_PARAMETER =
  /(^|[?&;\s])(password|passwd|pass|pwd|secret|token|sslpassword|sslkey|api_?key)(\s*=\s*)('(?:[^'\\]|\\.)*'?|[^&#;\s]*)/gi;

/**
 * A connection string with its password (and any `password`-like query or keyword parameter)
 * replaced by `***`: safe for logs and errors. The password of a URL runs from the first `:` of
 * its user information to the last `@` of the string, so an unencoded `@`, `/`, `?` or `#` in it
 * is hidden too; when an `@` stands in the query instead, more than the password is hidden, never
 * less.
 *
 * @example
 * ```ts
 * redactConnectionString('postgres://kit:s3cret@db:5432/shop'); // 'postgres://kit:***@db:5432/shop'
 * redactConnectionString('postgres://kit:p@ss@db/shop');        // 'postgres://kit:***@db/shop'
 * ```
 */
export function redactConnectionString(value: string): string {
  let text = value;
  const scheme = /^\s*[a-z][a-z0-9+.-]*:\/\//i.exec(text);
  if (scheme) {
    const start = scheme[0].length;
    const at = text.lastIndexOf('@');
    const colon = text.indexOf(':', start);
    // A password: a ':' in the user information, which ends at the last '@'.
    if (at > start && colon !== -1 && colon < at && !text.slice(start, colon).includes('/'))
      text = `${text.slice(0, colon + 1)}***${text.slice(at)}`;
  }
  return text.replace(
    SECRET_PARAMETER,
    (_, before: string, name: string, equals: string) => `${before}${name}${equals}***`,
  );
}

function invalid(value: string, expected: string): KitError {
  return new KitError(
    'KIT_ERR_INVALID_OPTION',
    `Invalid Kit option addKitAutoCrud(app, url): ${JSON.stringify(redactConnectionString(value))}: expected ${expected}.`,
  );
}

/**
 * The target of a PGlite instance the host made and passes instead of a connection string.
 *
 * @example
 * ```ts
 * const target = isPGlite(url) ? pgliteInstanceTarget() : parseConnectionString(url);
 * ```
 */
export function pgliteInstanceTarget(): ConnectionTarget {
  return { kind: 'pglite', directory: undefined, redacted: 'pglite: (an instance passed in)' };
}

const EXPECTED =
  "postgres://user:password@host:5432/db (or postgresql://), 'pglite:' (in memory), 'pglite:<directory>', 'sqlite::memory:' or 'sqlite:<file>'";

/**
 * Picks the engine from a connection string: `postgres://…`/`postgresql://…`, `pglite:` (in
 * memory) or `pglite:<directory>`, `sqlite::memory:` or `sqlite:<file>`. Relative paths are
 * resolved against the working directory. Throws `KIT_ERR_INVALID_OPTION` (the value redacted)
 * for anything else.
 */
export function parseConnectionString(value: unknown): ConnectionTarget {
  if (typeof value !== 'string' || value.trim() === '') throw invalid(String(value), EXPECTED);
  const text = value.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(text)?.[1]?.toLowerCase();
  if (scheme === 'postgres' || scheme === 'postgresql') {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw invalid(text, `a valid URL such as ${EXPECTED.split(' (')[0]}`);
    }
    if (!url.hostname && !url.searchParams.get('host'))
      throw invalid(text, 'a host in the postgres:// URL');
    return { kind: 'postgres', url: text, redacted: redactConnectionString(text) };
  }
  if (scheme === 'pglite') {
    const rest = text.slice('pglite:'.length);
    if (rest === '' || rest === ':memory:' || rest === 'memory://')
      return { kind: 'pglite', directory: undefined, redacted: 'pglite: (in memory)' };
    const directory = path.resolve(rest.startsWith('file://') ? new URL(rest).pathname : rest);
    return { kind: 'pglite', directory, redacted: `pglite:${directory}` };
  }
  if (scheme === 'sqlite') {
    const rest = text.slice('sqlite:'.length);
    if (rest === '') throw invalid(text, "'sqlite::memory:' or 'sqlite:<file>'");
    if (rest === ':memory:')
      return { kind: 'sqlite', file: ':memory:', redacted: 'sqlite::memory:' };
    const file = path.resolve(rest.startsWith('file://') ? new URL(rest).pathname : rest);
    return { kind: 'sqlite', file, redacted: `sqlite:${file}` };
  }
  throw invalid(text, EXPECTED);
}
