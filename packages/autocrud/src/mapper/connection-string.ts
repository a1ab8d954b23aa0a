import path from 'node:path';
import { KitError } from '@kit/core';

/**
 * The database engines AutoCrud speaks.
 *
 * @example
 * ```ts
 * const engine: EngineKind = addKitAutoCrud(app, 'pglite:').engine;   // 'pglite'
 * ```
 */
export type EngineKind = 'postgres' | 'pglite' | 'sqlite';

/** A parsed connection string. */
export type ConnectionTarget =
  | { readonly kind: 'postgres'; readonly url: string; readonly redacted: string }
  | { readonly kind: 'pglite'; readonly directory: string | undefined; readonly redacted: string }
  | { readonly kind: 'sqlite'; readonly file: string; readonly redacted: string };

/**
 * A connection string with its password (and any `password`-like query parameter) replaced by
 * `***`: safe for logs and errors.
 *
 * @example
 * ```ts
 * redactConnectionString('postgres://kit:s3cret@db:5432/shop'); // 'postgres://kit:***@db:5432/shop'
 * ```
 */
export function redactConnectionString(value: string): string {
  return value
    .replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*):[^@/?#]*@/i, '$1:***@')
    .replace(/([?&](?:password|pass|pwd|secret|token|sslpassword|sslkey)=)[^&#]*/gi, '$1***');
}

function invalid(value: string, expected: string): KitError {
  return new KitError('KIT_ERR_INVALID_OPTION', `Invalid Kit option addKitAutoCrud(app, url): ${JSON.stringify(redactConnectionString(value))}: expected ${expected}.`);
}

const EXPECTED = "postgres://user:password@host:5432/db (or postgresql://), 'pglite:' (in memory), 'pglite:<directory>', 'sqlite::memory:' or 'sqlite:<file>'";

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
    if (!url.hostname && !url.searchParams.get('host')) throw invalid(text, 'a host in the postgres:// URL');
    return { kind: 'postgres', url: text, redacted: redactConnectionString(text) };
  }
  if (scheme === 'pglite') {
    const rest = text.slice('pglite:'.length);
    if (rest === '' || rest === ':memory:' || rest === 'memory://') return { kind: 'pglite', directory: undefined, redacted: 'pglite: (in memory)' };
    const directory = path.resolve(rest.startsWith('file://') ? new URL(rest).pathname : rest);
    return { kind: 'pglite', directory, redacted: `pglite:${directory}` };
  }
  if (scheme === 'sqlite') {
    const rest = text.slice('sqlite:'.length);
    if (rest === '') throw invalid(text, "'sqlite::memory:' or 'sqlite:<file>'");
    if (rest === ':memory:') return { kind: 'sqlite', file: ':memory:', redacted: 'sqlite::memory:' };
    const file = path.resolve(rest.startsWith('file://') ? new URL(rest).pathname : rest);
    return { kind: 'sqlite', file, redacted: `sqlite:${file}` };
  }
  throw invalid(text, EXPECTED);
}
