import type { AuditLogEntry } from './entry.js';

// C0 controls, DEL, C1 controls and the two Unicode line separators: anything a terminal, a
// text log viewer or a line-based shipper could take for a line break or a control sequence.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
// eslint-disable-next-line no-control-regex
const CONTROL_ALL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const SHORT: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

function escapeOne(c: string): string {
  return SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * Escapes control characters JSON-style (`\n`, `\r`, `\t`, `\u001b`, `\u2028`, ...) so that a
 * request cannot forge or break log lines. The escapes are valid inside JSON strings too, so the
 * same pass is safe on the JsonStyle message. The common case (nothing to escape) is one regex
 * test and no allocation.
 */
export function escapeControl(text: string): string {
  return CONTROL.test(text) ? text.replace(CONTROL_ALL, escapeOne) : text;
}

/** `?query` for a message, or `''` when the entry has none. */
export function querySuffix(entry: AuditLogEntry): string {
  return entry.query === null ? '' : `?${entry.query}`;
}

function abortedSuffix(entry: AuditLogEntry): string {
  return entry.aborted === true ? ' (aborted)' : '';
}

/** `Default`: `HTTP {method} {path}{query} responded {statusCode} in {n}ms [CorrelationId: {id}] Headers={json}`. */
export function defaultMessage(entry: AuditLogEntry, headersJson: string): string {
  // The same text as `defaultMessageJson` (the direct path); decoding that one instead cost pino's
  // path 0.8 µs per entry, so the template is spelled twice and audit-pino-lines.test.ts holds
  // the two together byte for byte.
  return escapeControl(
    `HTTP ${entry.method} ${entry.path}${querySuffix(entry)} responded ${entry.statusCode} in ${entry.durationMs}ms` +
      ` [CorrelationId: ${entry.correlationId}] Headers=${headersJson}${abortedSuffix(entry)}`,
  );
}

/**
 * What every text format (`Default`, `DotnetLogger`, `Compact`) logs beside its message, after
 * the spec's own fields: when the request started (the line's `time` is when it was written,
 * which in asynchronous mode is up to `flushIntervalMs` later), the route pattern, the
 * authenticated subject and the trace ids. Absent values are left out. The messages stay
 * byte for byte the spec's templates.
 */
export interface ContextFields {
  /** ISO 8601 time the request started (`entry.timestamp`). */
  StartedAt: string;
  /** The route pattern (`/api/orders@2/:id`); absent on a 404. */
  Route?: string;
  /** The authenticated subject (`request.user.sub`). */
  User?: string;
  TraceId?: string;
  SpanId?: string;
}

/** The keys of `ContextFields`, in the order they are logged. */
export const CONTEXT_FIELD_KEYS: readonly string[] = ['StartedAt', 'Route', 'User', 'TraceId', 'SpanId'];

/** `ContextFields` as JSON object members (`,"StartedAt":"...",...`), as pino writes the object. */
export function contextMembers(entry: AuditLogEntry): string {
  let out = `,"StartedAt":${quote(entry.timestamp)}`;
  const { route, user, traceId, spanId } = entry;
  if (route !== undefined) out += `,"Route":${quote(route)}`;
  if (user !== undefined) out += `,"User":${quote(user)}`;
  if (traceId !== undefined) out += `,"TraceId":${quote(traceId)}`;
  if (spanId !== undefined) out += `,"SpanId":${quote(spanId)}`;
  return out;
}

/** `ContextFields` as an object, for pino's own path. */
export function contextFields(entry: AuditLogEntry, into: Partial<ContextFields> = {}): ContextFields {
  const fields = into as ContextFields;
  fields.StartedAt = entry.timestamp;
  const { route, user, traceId, spanId } = entry;
  if (route !== undefined) fields.Route = route;
  if (user !== undefined) fields.User = user;
  if (traceId !== undefined) fields.TraceId = traceId;
  if (spanId !== undefined) fields.SpanId = spanId;
  return fields;
}

/** The structured fields of `Default`, named like the message's placeholders, then `ContextFields`. */
export interface DefaultFields extends Partial<ContextFields> {
  Method: string;
  Path: string;
  /** `?a=1`, or `''` without a query: `{Path}{Query}` rebuilds the logged target exactly. */
  Query: string;
  StatusCode: number;
  ElapsedMs: number;
  CorrelationId: string;
  Headers: Readonly<Record<string, string>>;
  /** Only on entries of aborted requests. */
  Aborted?: true;
}

/** The keys of `DefaultFields`, in the order they are logged (the other text formats log `CONTEXT_FIELD_KEYS`). */
export const DEFAULT_FIELD_KEYS: readonly string[] = ['Method', 'Path', 'Query', 'StatusCode', 'ElapsedMs', 'CorrelationId', 'Headers', 'Aborted', ...CONTEXT_FIELD_KEYS];

/**
 * `DefaultFields` as JSON object members (`,"Method":"GET",...`), as pino writes the object:
 * the same keys in the same order, non-finite numbers as `null`.
 */
export function defaultMembers(entry: AuditLogEntry, headersJson: string): string {
  const ms = Number.isFinite(entry.durationMs) ? entry.durationMs : null;
  return (
    `,"Method":${quote(entry.method)},"Path":${quote(entry.path)},"Query":${quote(querySuffix(entry))}` +
    `,"StatusCode":${entry.statusCode},"ElapsedMs":${ms},"CorrelationId":${quote(entry.correlationId)},"Headers":${headersJson}` +
    (entry.aborted === true ? ',"Aborted":true' : '') +
    contextMembers(entry)
  );
}

// A string with none of these is written the same by `JSON.stringify` (between quotes) and by
// `escapeControl`: no quote or backslash, no control character, no surrogate.
// eslint-disable-next-line no-control-regex
const PLAIN = /^[^"\\\u0000-\u001f\u007f-\u009f\u2028\u2029\ud800-\udfff]*$/;

/** `JSON.stringify(x)` for a string, without the call when there is nothing to escape. */
function quote(x: string): string {
  return PLAIN.test(x) ? `"${x}"` : JSON.stringify(x);
}

/** `x` as it appears inside the JSON string of a text message: control-escaped, then JSON-escaped. */
function inMessage(x: string): string {
  return PLAIN.test(x) ? x : JSON.stringify(escapeControl(x)).slice(1, -1);
}

/**
 * The headers as JSON (exactly `JSON.stringify(headers)`) and as they appear inside the JSON
 * string of the Default message, built in one pass when every name and value is plain.
 */
export function headersJsonPair(headers: Readonly<Record<string, string>>): [json: string, inMessage: string] {
  let json = '{';
  let quoted = '{';
  let first = true;
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (typeof value !== 'string' || !PLAIN.test(name) || !PLAIN.test(value)) {
      const raw = JSON.stringify(headers);
      return [raw, inMessage(raw)];
    }
    if (!first) {
      json += ',';
      quoted += ',';
    }
    first = false;
    json += `"${name}":"${value}"`;
    quoted += `\\"${name}\\":\\"${value}\\"`;
  }
  return [json + '}', quoted + '}'];
}

/**
 * The Default message already encoded as a JSON string (with its quotes): the same text as
 * `JSON.stringify(defaultMessage(entry, headersJson))`, without escaping the whole message again.
 */
export function defaultMessageJson(entry: AuditLogEntry, headersInMessage: string): string {
  return (
    `"HTTP ${inMessage(entry.method)} ${inMessage(entry.path + querySuffix(entry))} responded ${entry.statusCode} in ${entry.durationMs}ms` +
    ` [CorrelationId: ${inMessage(entry.correlationId)}] Headers=${headersInMessage}${abortedSuffix(entry)}"`
  );
}

/** The structured fields of `Default`. */
export function defaultFields(entry: AuditLogEntry): DefaultFields {
  const fields: DefaultFields = {
    Method: entry.method,
    Path: entry.path,
    Query: querySuffix(entry),
    StatusCode: entry.statusCode,
    ElapsedMs: entry.durationMs,
    CorrelationId: entry.correlationId,
    Headers: entry.headers,
  };
  if (entry.aborted === true) fields.Aborted = true;
  contextFields(entry, fields);
  return fields;
}

/** `DotnetLogger`: `{method} {path}{query} => {status} in {n}ms [{id}] Headers={json}`. */
export function dotnetLoggerMessage(entry: AuditLogEntry, headersJson: string): string {
  return escapeControl(
    `${entry.method} ${entry.path}${querySuffix(entry)} => ${entry.statusCode} in ${entry.durationMs}ms` +
      ` [${entry.correlationId}] Headers=${headersJson}${abortedSuffix(entry)}`,
  );
}

/**
 * `JsonStyle`: one JSON object, first keys `method`, `path`, `statusCode`, then the rest of the
 * entry (`query`, `durationMs`, `correlationId`, `timestamp`, `headers`, and when present
 * `aborted`, `route`, `user`, `traceId`, `spanId`).
 */
export function jsonStyleMessage(entry: AuditLogEntry): string {
  const json = JSON.stringify({
    method: entry.method,
    path: entry.path,
    statusCode: entry.statusCode,
    query: entry.query,
    durationMs: entry.durationMs,
    correlationId: entry.correlationId,
    timestamp: entry.timestamp,
    headers: entry.headers,
    aborted: entry.aborted === true ? true : undefined,
    route: entry.route,
    user: entry.user,
    traceId: entry.traceId,
    spanId: entry.spanId,
  });
  return escapeControl(json);
}

/** `Compact`: `{method} {path}{query} {status} {n}ms`. */
export function compactMessage(entry: AuditLogEntry): string {
  return escapeControl(`${entry.method} ${entry.path}${querySuffix(entry)} ${entry.statusCode} ${entry.durationMs}ms${abortedSuffix(entry)}`);
}
