import { KitError } from '@kit/core';

/** Query parameters ioredis reads from a URL that may carry a secret. */
const SECRET_PARAMS = /pass|secret|token|auth/i;

/** A parsed store URL: what to connect to, how to print it, and which strings must never be printed. */
export interface StoreUrl {
  /** The URL as given, for the client only. */
  readonly href: string;
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

/**
 * Parses a `redis://` or `rediss://` URL. Errors never echo the URL itself, since an unparsable
 * URL may still contain a password.
 */
export function parseStoreUrl(input: string | URL): StoreUrl {
  let url: URL;
  try {
    url = new URL(String(input));
  } catch {
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      'Invalid Kit option addKitStore(app, url): expected a URL such as "redis://:password@host:6379/0" (the value is not shown because it may contain a password).',
    );
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new KitError('KIT_ERR_INVALID_OPTION', `Invalid Kit option addKitStore(app, url): expected a redis:// or rediss:// URL, got a ${url.protocol}// URL.`);
  }
  const secrets = new Set<string>();
  const redactedUrl = new URL(url.href);
  if (url.password) {
    secrets.add(url.password);
    secrets.add(decode(url.password));
    redactedUrl.password = '***';
  }
  for (const [name, value] of url.searchParams) {
    if (SECRET_PARAMS.test(name) && value) {
      secrets.add(value);
      secrets.add(encodeURIComponent(value));
      redactedUrl.searchParams.set(name, '***');
    }
  }
  // Longest first, so that a secret containing another is scrubbed whole.
  const list = [...secrets].filter((s) => s.length > 0).sort((x, y) => y.length - x.length);
  return { href: url.href, redacted: redactedUrl.href, secrets: list };
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
