import { routePatternOf } from '../shared/route-pattern.js';
import type { AuditDetailValue, AuditLogEntry } from './entry.js';
import { kHeadersJsonPair, kPlainId, kStartAndRoute } from './formats.js';
import { plainHeadersJsonPair, type HeaderNames } from './header-json.js';
import { quote } from './json-text.js';
import { AUDIT_PATH_CAP, cap, type Redactor } from './redaction.js';
import { traceIdFromTraceparent, type TraceIds } from './trace.js';

type RawHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** URLs longer than this are split and copied when the response completes (see `complete`). */
const LONG_URL = 1024;

/** Longest subject kept in an entry: a host's own `request.user` may hold anything. */
const SUBJECT_CAP = 256;

// V8 keeps a slice of a long string as a view on the whole string. Copying the piece lets a
// queued record hold only what it logs, not a 16 KB (or, over inject, 100 KB) request line.
function detach(value: string): string {
  return value.length < 13 ? value : (' ' + value).slice(1);
}

// `toISOString()` is dear (V8 formats it through a printf-style stream; `npm run
// bench:instructions` counts its instructions), and a service that sees fewer than a thousand
// requests a second would pay it for nearly every entry. So the second's prefix
// (`2026-11-23T15:31:06.`) is formatted once a second and the milliseconds come from a table;
// entries of one busy millisecond share the whole string. Years outside 0000-9999 (an ISO string
// of another length) keep `toISOString()`.
const MILLIS = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(3, '0')}Z`);
let isoSecond = Number.NaN;
let isoPrefix = '';
let isoMs = Number.NaN;
let iso = '';
export function isoOf(ms: number): string {
  if (ms === isoMs) return iso;
  if (!Number.isInteger(ms)) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    const whole = new Date(second * 1000).toISOString();
    if (whole.length !== 24) return new Date(ms).toISOString();
    isoPrefix = whole.slice(0, 20);
    isoSecond = second;
  }
  iso = isoPrefix + (MILLIS[ms - second * 1000] as string);
  isoMs = ms;
  return iso;
}

// The Default line's `StartedAt` member of the last millisecond asked for, and the `Route` member
// of each route, kept on the route's config (one object per route, alive as long as the route)
// under a symbol: both are the same text for many entries, and an ISO time needs no escaping.
let memberMs = Number.NaN;
let startedAtMember = '';
const kRouteMember = Symbol('kit.audit.routeMember');

function startedAt(ms: number): string {
  if (ms !== memberMs) {
    startedAtMember = `,"StartedAt":"${isoOf(ms)}"`;
    memberMs = ms;
  }
  return startedAtMember;
}

function routeMember(config: RouteConfig): string {
  if (config === undefined) return '';
  const cached = (config as { [kRouteMember]?: string })[kRouteMember];
  if (cached !== undefined) return cached;
  const route = routePatternOf(config);
  const member = route === undefined ? '' : `,"Route":${quote(route)}`;
  if (Object.isExtensible(config)) (config as { [kRouteMember]?: string })[kRouteMember] = member;
  return member;
}

/** Settings every record of one audit trail shares, built once at start-up. */
export interface RecordSettings {
  readonly redactor: Redactor;
  /** The header names' pieces of the Default line under `redactor`'s rules. */
  readonly headerNames: HeaderNames;
  readonly includeQuery: boolean;
}

/**
 * The route's config (`request.routeOptions.config`: one object per route, alive as long as the
 * route): a record keeps a reference and reads the route pattern from it only when something
 * formats the entry.
 */
type RouteConfig = Parameters<typeof routePatternOf>[0];

/** The request as far as a record reads it at completion: who was authenticated. */
interface UserSource {
  readonly user?: unknown;
}

/**
 * One audited request as the hooks capture it: the raw pieces (URL, headers object, route
 * context, clock readings) on the request path, and the redacted, formatted parts computed only
 * when something reads them, which in asynchronous mode is the background writer. It satisfies
 * `AuditLogEntry` so the formats and the logging sink read records and plain entries alike;
 * custom sinks get a plain copy from `toEntry()`.
 */
export class AuditRecord implements AuditLogEntry {
  readonly method: string;
  readonly correlationId: string;
  statusCode = 0;
  durationMs = 0;
  /** `true` when the client went away first; `undefined` otherwise, as in a plain entry. */
  aborted: true | undefined = undefined;
  /** The authenticated subject, read from `request.user.sub` when the response completes. */
  user: string | undefined = undefined;
  /** What plugins added (`setAuditDetail`); `undefined` until one does, so an entry without pays nothing. */
  details: Record<string, AuditDetailValue> | undefined = undefined;

  /** `performance.now()` at the first hook. */
  readonly startedAt: number;
  readonly #epochMs: number;
  readonly #settings: RecordSettings;
  readonly #routeConfig: RouteConfig;
  #request: UserSource | undefined;
  #url: string | null;
  #rawHeaders: RawHeaders | null;
  #path: string | undefined = undefined;
  #query: string | null | undefined = undefined;
  #headers: Readonly<Record<string, string>> | undefined = undefined;
  /** `null`: looked for, none found. */
  #trace: TraceIds | null | undefined = undefined;

  constructor(
    method: string,
    url: string,
    headers: RawHeaders,
    correlationId: string,
    startedAt: number,
    settings: RecordSettings,
    routeConfig: RouteConfig,
    request: UserSource | undefined,
  ) {
    this.method = method;
    this.#url = url;
    this.#rawHeaders = headers;
    this.correlationId = correlationId;
    this.startedAt = startedAt;
    this.#epochMs = Date.now();
    this.#settings = settings;
    this.#routeConfig = routeConfig;
    this.#request = request;
  }

  /** The ids of the OpenTelemetry span active at the first hook (they win over `traceparent`). */
  setTrace(ids: TraceIds): void {
    this.#trace = ids;
  }

  /** Records the outcome. `aborted` entries that never sent headers are logged as 499 (nginx's "client closed request"). */
  complete(statusCode: number, finishedAt: number, aborted: boolean): void {
    this.statusCode = statusCode;
    this.durationMs = Math.round((finishedAt - this.startedAt) * 1000) / 1000;
    if (aborted) this.aborted = true;
    const request = this.#request;
    if (request !== undefined) {
      // Set by app.kitAuthenticate (or any auth plugin that follows the `request.user` convention).
      const sub = (request.user as { sub?: unknown } | null | undefined)?.sub;
      if (typeof sub === 'string' && sub !== '')
        this.user = sub.length > SUBJECT_CAP ? cap(sub, SUBJECT_CAP) : sub;
      this.#request = undefined;
    }
    const url = this.#url;
    if (url !== null && url.length > LONG_URL) {
      this.#path = detach(this.path);
      const query = this.query;
      this.#query = query === null ? null : detach(query);
      this.#url = null;
    }
  }

  /** ISO 8601 time the request started. */
  get timestamp(): string {
    return isoOf(this.#epochMs);
  }

  get path(): string {
    if (this.#path === undefined) {
      const url = this.#url ?? '';
      const q = url.indexOf('?');
      const path = q === -1 ? url : url.slice(0, q);
      this.#path = path.length > AUDIT_PATH_CAP ? cap(path, AUDIT_PATH_CAP) : path;
    }
    return this.#path;
  }

  get query(): string | null {
    if (this.#query === undefined) {
      const url = this.#url ?? '';
      const q = url.indexOf('?');
      this.#query =
        q === -1 || !this.#settings.includeQuery
          ? null
          : this.#settings.redactor.query(url.slice(q + 1));
    }
    return this.#query;
  }

  /** The route pattern the request matched (`/api/orders@2/:id`); `undefined` when none did (404). */
  get route(): string | undefined {
    return routePatternOf(this.#routeConfig);
  }

  get traceId(): string | undefined {
    return this.#traceIds()?.traceId;
  }

  get spanId(): string | undefined {
    return this.#traceIds()?.spanId;
  }

  #traceIds(): TraceIds | null {
    if (this.#trace === undefined) {
      const traceId = traceIdFromTraceparent(this.#rawHeaders?.traceparent);
      this.#trace = traceId === undefined ? null : { traceId, spanId: undefined };
    }
    return this.#trace;
  }

  get headers(): Readonly<Record<string, string>> {
    if (this.#headers === undefined) {
      this.#traceIds(); // reads the raw headers, which are released below
      this.#headers = this.#settings.redactor.headers(this.#rawHeaders ?? {}, false);
      this.#rawHeaders = null;
    }
    return this.#headers;
  }

  /** The Default line's headers JSON straight from the request's headers (see `plainHeadersJsonPair`). */
  [kHeadersJsonPair](): [json: string, inMessage: string] | undefined {
    const raw = this.#rawHeaders;
    return this.#headers === undefined && raw !== null
      ? plainHeadersJsonPair(raw, this.#settings.headerNames)
      : undefined;
  }

  /** The Default line's `StartedAt` and `Route` members (see `contextMembers`). */
  [kStartAndRoute](): string {
    return startedAt(this.#epochMs) + routeMember(this.#routeConfig);
  }

  /** A plain, self-contained `AuditLogEntry` for custom sinks (own headers object, ISO timestamp). */
  toEntry(): AuditLogEntry {
    const trace = this.#traceIds();
    const headers =
      this.#headers === undefined
        ? this.#settings.redactor.headers(this.#rawHeaders ?? {}, true)
        : { ...this.#headers };
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
    const route = this.route;
    if (route !== undefined) entry.route = route;
    if (this.user !== undefined) entry.user = this.user;
    if (this.details !== undefined) entry.details = { ...this.details };
    if (trace !== null) {
      entry.traceId = trace.traceId;
      if (trace.spanId !== undefined) entry.spanId = trace.spanId;
    }
    return entry;
  }
}

// Every record's correlation id is a UUID or an id that matched CORRELATION_ID_PATTERN
// (hooks.ts): nothing in it needs escaping. On the prototype, so it costs a record nothing.
(AuditRecord.prototype as { [kPlainId]?: true })[kPlainId] = true;
