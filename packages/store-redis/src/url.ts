import { KitError } from '@kit/core';

/** Query parameters ioredis reads from a URL that may carry a secret. */
const SECRET_PARAMS = /pass|secret|token|auth/i;

/** A parsed store URL: what to connect to, how to print it, and which strings must never be printed. */
export interface StoreUrl {
  /** `rediss:`: TLS. */
  readonly tls: boolean;
  /** The host name or address (IPv6 without brackets); in Sentinel mode the master group's name. */
  readonly host: string;
  readonly port: number | undefined;
  /** Decoded credentials; `username` only when one is given. */
  readonly username: string | undefined;
  readonly password: string | undefined;
  /** The database index from the path (`/2`) or a `db` query parameter; undefined for none. */
  readonly db: number | undefined;
  /** Further query parameters, as ioredis reads them from a URL (`family` as a number). */
  readonly query: Readonly<Record<string, string | number>>;
  /** The URL with the password (and secret-looking query values) replaced by `***`. */
  readonly redacted: string;
  /** The literal secrets (raw and percent-decoded), to scrub from any text we print. */
  readonly secrets: readonly string[];
}

function decode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function invalid(what: string, why: string): KitError {
  return new KitError('KIT_ERR_INVALID_OPTION', `Invalid Kit option ${what}: ${why}`);
}

/**
 * `/2` -> 2. Anything but digits fails start-up: ioredis would read `/abc` as database 0 and
 * write there without a word (the value is shown only when it cannot be a secret).
 */
function databaseIndex(
  what: string,
  raw: string,
  secrets: readonly string[],
  source: string,
): number {
  const text = decode(raw);
  if (/^\d+$/.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
  const shown =
    secrets.some((s) => text.includes(s)) || text.length > 40
      ? '(not shown)'
      : JSON.stringify(text);
  throw invalid(
    what,
    `the database index ${source} ${shown} is not a number; expected redis://host:6379/0 (an index from 0 to the server's "databases" setting minus one) or no path for database 0. The URL is not shown because it may contain a password.`,
  );
}

/**
 * Parses a `redis://` or `rediss://` URL. Errors never echo the URL itself, since an unparsable
 * URL may still contain a password. `what` names the option in error messages.
 */
export function parseStoreUrl(input: string | URL, what = 'addKitStore(app, url)'): StoreUrl {
  let url: URL;
  try {
    url = new URL(String(input));
  } catch {
    throw invalid(
      what,
      'expected a URL such as "redis://:password@host:6379/0" (the value is not shown because it may contain a password).',
    );
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw invalid(what, `expected a redis:// or rediss:// URL, got a ${url.protocol}// URL.`);
  }
  if (!url.hostname)
    throw invalid(
      what,
      'the URL has no host (the value is not shown because it may contain a password).',
    );
  const secrets = new Set<string>();
  const redactedUrl = new URL(url.href);
  if (url.password) {
    secrets.add(url.password);
    secrets.add(decode(url.password));
    redactedUrl.password = '***';
  }
  const query: Record<string, string | number> = {};
  for (const [name, value] of url.searchParams) {
    if (SECRET_PARAMS.test(name) && value) {
      secrets.add(value);
      secrets.add(encodeURIComponent(value));
      redactedUrl.searchParams.set(name, '***');
    }
    if (name !== 'db')
      query[name] = name === 'family' && /^\d+$/.test(value) ? Number(value) : value;
  }
  // Longest first, so that a secret containing another is scrubbed whole.
  const list = [...secrets].filter((s) => s.length > 0).sort((x, y) => y.length - x.length);
  const path = url.pathname.replace(/^\//, '');
  const dbParam = url.searchParams.get('db');
  let db: number | undefined;
  if (path !== '') db = databaseIndex(what, path, list, 'in the path');
  else if (dbParam !== null) db = databaseIndex(what, dbParam, list, 'in the db query parameter');
  return {
    tls: url.protocol === 'rediss:',
    host: decode(url.hostname.replace(/^\[|\]$/g, '')),
    port: url.port ? Number(url.port) : undefined,
    username: url.username ? decode(url.username) : undefined,
    password: url.password ? decode(url.password) : undefined,
    db,
    query,
    redacted: redactedUrl.href,
    secrets: list,
  };
}

/** Replaces every secret in `text` with `***`. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('***');
  return out;
}

/**
 * `redis://user:pass@host:6379/0` -> `redis://user:***@host:6379/0`. Use it wherever you print a
 * store URL; `addKitStore` already does for everything it logs.
 *
 * @example
 * ```ts
 * app.log.info({ redis: redactStoreUrl(process.env.REDIS_URL!) }, 'using Redis stores');
 * ```
 */
export function redactStoreUrl(url: string | URL): string {
  try {
    return parseStoreUrl(url).redacted;
  } catch {
    return '[invalid store URL]';
  }
}
