/**
 * Scrubbing of the texts a health report shows. Descriptions, data and exception messages come
 * from check code, and check code talks to databases: a driver error or a careless description can
 * carry a connection string or a URL with a password. The detail level decides what is shown at
 * all; this file makes sure that what is shown does not hand out credentials.
 *
 * - `Description` (may be public): a URL carrying credentials and a connection string
 *   (`Key=value;Key=value`) are replaced as a whole by `[redacted]`, address included.
 * - `Full` (Development): the shape stays readable for debugging; only the secret parts are
 *   masked (`postgres://***@db:5432/app`, `Password=***`).
 */

// Key names whose values are secrets: password, pwd, secret, token, api_key, AccountKey,
// SharedAccessSignature, sig, auth, credential(s)...
const SECRET_KEY = /pass|pwd|secret|token|key|sig|auth|credential/i;

// scheme://… up to whitespace or a quote/bracket that usually ends a URL inside prose or JSON.
const URL_PATTERN = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;
const USERINFO = /^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i;
const QUERY_PAIR = /([?&;])([^=&;#]+)=([^&;#]*)/g;

// Key=value pairs separated by ';' (ADO.NET, ODBC, Azure storage...). Keys are one word or a known
// two-word key ("Data Source", "User ID"), so surrounding prose is not swallowed.
const KEY = String.raw`(?:(?:Data|User|Initial|Integrated|Trust|Application|Persist|Connect|Shared Access|Account) [A-Za-z]+|[A-Za-z][\w.]*)`;
const PAIR = String.raw`${KEY}\s*=\s*(?:"[^"]*"|'[^']*'|[^;\s]*)`;
const CONNECTION_STRING = new RegExp(String.raw`${PAIR}(?:\s*;\s*${PAIR})+\s*;?`, 'g');
const SECRET_PAIR = new RegExp(String.raw`(${KEY})(\s*=\s*)("[^"]*"|'[^']*'|[^;\s&]*)`, 'g');

// Keys that make a `k=v;k=v` run a connection string rather than prose such as "p99=120ms; limit=100ms".
const CONNECTION_KEY =
  /^(?:server|host|hostname|address|addr|data source|datasource|database|initial catalog|db|port|user id|uid|user|username|accountname|endpoint|defaultendpointsprotocol|blobendpoint|tenant|provider|dsn)$/i;

function looksLikeConnectionString(run: string): boolean {
  for (const m of run.matchAll(SECRET_PAIR)) {
    const key = (m[1] ?? '').trim();
    if (CONNECTION_KEY.test(key) || SECRET_KEY.test(key)) return true;
  }
  return false;
}

function maskPair(all: string, key: string, eq: string, value: string): string {
  if (!SECRET_KEY.test(key)) return all;
  // A pair written inside parentheses, "(…;Password=x)": keep the closing one, it is prose.
  return `${key}${eq}***${value.endsWith(')') && !value.includes('(') ? ')' : ''}`;
}

function isCredentialedUrl(url: string): boolean {
  if (USERINFO.test(url)) return true;
  for (const m of url.matchAll(QUERY_PAIR)) if (SECRET_KEY.test(m[2] ?? '')) return true;
  return false;
}

function maskUrl(url: string): string {
  return url
    .replace(USERINFO, '$1***@')
    .replace(QUERY_PAIR, (all, sep: string, key: string) =>
      SECRET_KEY.test(key) ? `${sep}${key}=***` : all,
    );
}

/**
 * For `Description`: removes credentialed URLs and connection strings entirely.
 *
 * @example
 * ```ts
 * redactForDescription('down: Server=db;User ID=sa;Password=x'); // 'down: [redacted]'
 * ```
 */
export function redactForDescription(text: string): string {
  return text
    .replace(URL_PATTERN, (url) => (isCredentialedUrl(url) ? '[redacted]' : url))
    .replace(CONNECTION_STRING, (cs) => (looksLikeConnectionString(cs) ? '[redacted]' : cs))
    .replace(SECRET_PAIR, maskPair);
}

/**
 * For `Full`: keeps the text readable, masks passwords, tokens and keys.
 *
 * @example
 * ```ts
 * redactForFull('connect ECONNREFUSED redis://:hunter2@cache:6379'); // '... redis://***@cache:6379'
 * ```
 */
export function redactForFull(text: string): string {
  return text.replace(URL_PATTERN, maskUrl).replace(SECRET_PAIR, maskPair);
}

// Stacks are useful for a few frames; a cap bounds the scrubbing work and the line.
const MAX_LOGGED_TEXT = 8192;
// The properties of an error worth a log line besides message and stack; all primitives.
// Anything else (a driver's `config`, a client's `options`, a command's arguments) is left out:
// that is where credentials hide.
const LOGGED_PROPERTIES = ['code', 'errno', 'syscall', 'address', 'port', 'statusCode'];

function scrubForLog(text: string): string {
  return redactForFull(text.length > MAX_LOGGED_TEXT ? `${text.slice(0, MAX_LOGGED_TEXT)}…` : text);
}

/**
 * For log lines: a copy of an error that keeps its class (the logger's `type`), a scrubbed
 * message and stack, a few primitive properties (`code`, `errno`, `syscall`, `address`, `port`,
 * `statusCode`) and a scrubbed cause chain, masked as at `Full` (`postgres://***@db:5432/app`,
 * `Password=***`). The logger's error serializer would otherwise copy every enumerable property
 * of the original, credentials included. A thrown non-error becomes an `Error` with its text.
 *
 * @example
 * ```ts
 * app.log.warn({ err: redactError(err) }, 'the cache could not be reached');
 * ```
 */
export function redactError(err: unknown, depth = 0): Error {
  if (!(err instanceof Error))
    return new Error(scrubForLog(typeof err === 'string' ? err : String(err)));
  const copy = Object.create(Object.getPrototypeOf(err) as object) as Error;
  // Own properties throughout: a host error's prototype (DOMException's AbortError and
  // TimeoutError) has brand-checked getters for name and code that throw on a copy.
  const define = (key: string, value: unknown, enumerable: boolean): void =>
    void Object.defineProperty(copy, key, {
      value,
      writable: true,
      configurable: true,
      enumerable,
    });
  define('name', err.name, false);
  define('message', scrubForLog(String(err.message)), false);
  if (err.stack !== undefined) define('stack', scrubForLog(err.stack), false);
  for (const key of LOGGED_PROPERTIES) {
    const value = (err as unknown as Record<string, unknown>)[key];
    if (typeof value === 'string') define(key, scrubForLog(value), true);
    else if (typeof value === 'number') define(key, value, true);
  }
  if (depth < 4 && err.cause !== undefined)
    define('cause', redactError(err.cause, depth + 1), false);
  if (depth < 4 && err instanceof AggregateError)
    define(
      'errors',
      err.errors.map((e: unknown) => redactError(e, depth + 1)),
      false,
    );
  return copy;
}
