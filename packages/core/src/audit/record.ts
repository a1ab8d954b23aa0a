import type { AuditLogEntry } from './entry.js';
import type { Redactor } from './redaction.js';

type RawHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** URLs longer than this are split and copied when the response completes (see `complete`). */
const LONG_URL = 1024;

// V8 keeps a slice of a long string as a view on the whole string. Copying the piece lets a
// queued record hold only what it logs, not a 16 KB (or, over inject, 100 KB) request line.
function detach(value: string): string {
  return value.length < 13 ? value : (' ' + value).slice(1);
}

/**
 * One audited request as the hooks capture it: the raw pieces (URL, headers object, clock
 * readings) on the request path, and the redacted, formatted parts computed only when something
 * reads them, which in asynchronous mode is the background writer. It satisfies `AuditLogEntry`
 * so the formats and the logging sink read records and plain entries alike; custom sinks get a
 * plain copy from `toEntry()`.
 */
export class AuditRecord implements AuditLogEntry {
  readonly method: string;
  readonly correlationId: string;
  statusCode = 0;
  durationMs = 0;
  /** `true` when the client went away first; `undefined` otherwise, as in a plain entry. */
  aborted: true | undefined = undefined;

  /** `performance.now()` at the first hook. */
  readonly startedAt: number;
  readonly #epochMs: number;
  readonly #redactor: Redactor;
  readonly #includeQuery: boolean;
  #url: string | null;
  #rawHeaders: RawHeaders | null;
  #path: string | undefined = undefined;
  #query: string | null | undefined = undefined;
  #headers: Readonly<Record<string, string>> | undefined = undefined;

  constructor(
    method: string,
    url: string,
    headers: RawHeaders,
    correlationId: string,
    startedAt: number,
    redactor: Redactor,
    includeQuery: boolean,
  ) {
    this.method = method;
    this.#url = url;
    this.#rawHeaders = headers;
    this.correlationId = correlationId;
    this.startedAt = startedAt;
    this.#epochMs = Date.now();
    this.#redactor = redactor;
    this.#includeQuery = includeQuery;
  }

  /** Records the outcome. `aborted` entries that never sent headers are logged as 499 (nginx's "client closed request"). */
  complete(statusCode: number, finishedAt: number, aborted: boolean): void {
    this.statusCode = statusCode;
    this.durationMs = Math.round((finishedAt - this.startedAt) * 1000) / 1000;
    if (aborted) this.aborted = true;
    const url = this.#url;
    if (url !== null && url.length > LONG_URL) {
      this.#path = detach(this.path);
      const query = this.query;
      this.#query = query === null ? null : detach(query);
      this.#url = null;
    }
  }

  get timestamp(): string {
    return new Date(this.#epochMs).toISOString();
  }

  get path(): string {
    if (this.#path === undefined) {
      const url = this.#url ?? '';
      const q = url.indexOf('?');
      this.#path = q === -1 ? url : url.slice(0, q);
    }
    return this.#path;
  }

  get query(): string | null {
    if (this.#query === undefined) {
      const url = this.#url ?? '';
      const q = url.indexOf('?');
      this.#query = q === -1 || !this.#includeQuery ? null : this.#redactor.query(url.slice(q + 1));
    }
    return this.#query;
  }

  get headers(): Readonly<Record<string, string>> {
    if (this.#headers === undefined) {
      this.#headers = this.#redactor.headers(this.#rawHeaders ?? {}, false);
      this.#rawHeaders = null;
    }
    return this.#headers;
  }

  /** A plain, self-contained `AuditLogEntry` for custom sinks (own headers object, ISO timestamp). */
  toEntry(): AuditLogEntry {
    const headers = this.#headers === undefined ? this.#redactor.headers(this.#rawHeaders ?? {}, true) : { ...this.#headers };
    const entry: { -readonly [K in keyof AuditLogEntry]: AuditLogEntry[K] } = {
      timestamp: this.timestamp,
      method: this.method,
      path: this.path,
      query: this.query,
      statusCode: this.statusCode,
      durationMs: this.durationMs,
      correlationId: this.correlationId,
      headers,
    };
    if (this.aborted) entry.aborted = true;
    return entry;
  }
}
