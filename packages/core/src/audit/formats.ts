import type { AuditLogEntry } from './entry.js';
import { plainHeadersJsonPair } from './header-json.js';
import { isPlain, jsonInner, quote } from './json-text.js';

// C0 controls, DEL, C1 controls and the two Unicode line separators: anything a terminal, a
// text log viewer or a line-based shipper could take for a line break or a control sequence.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
// eslint-disable-next-line no-control-regex
const CONTROL_ALL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const SHORT: Readonly<Record<string, string>> = {
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\b': '\\b',
  '\f': '\\f',
};

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
function querySuffix(entry: AuditLogEntry): string {
  return entry.query === null ? '' : `?${entry.query}`;
}

function abortedSuffix(entry: AuditLogEntry): string {
  return entry.aborted === true ? ' (aborted)' : '';
}

/** `Default`: `HTTP {method} {path}{query} responded {statusCode} in {n}ms [CorrelationId: {id}] Headers={json}`. */
export function defaultMessage(entry: AuditLogEntry, headersJson: string): string {
  // The same text as `defaultLineParts` writes (the direct path); decoding that one instead made
  // pino's path measurably slower per entry, so the template is spelled twice and
  // audit-pino-lines.test.ts holds the two together byte for byte.
  return escapeControl(
    `HTTP ${entry.method} ${entry.path}${querySuffix(entry)} responded ${entry.statusCode} in ${entry.durationMs}ms` +
      ` [CorrelationId: ${entry.correlationId}] Headers=${headersJson}${abortedSuffix(entry)}`,
  );
}

/**
 * What every text format (`Default`, `DotnetLogger`, `Compact`) logs beside its message, after
 * the documented structured fields (docs/audit.md): when the request started (the line's `time`
 * is when it was written, which in asynchronous mode is up to `flushIntervalMs` later), the route
 * pattern, the authenticated subject and the trace ids. Absent values are left out. The messages stay
 * byte for byte the templates docs/audit.md gives.
 */
interface ContextFields {
  /** ISO 8601 time the request started (`entry.timestamp`). */
  StartedAt: string;
  /** The route pattern (`/api/orders@2/:id`); absent on a 404. */
  Route?: string;
  /** The authenticated subject (`request.user.sub`). */
  User?: string;
  TraceId?: string;
  SpanId?: string;
  /** What plugins added to the entry (`setAuditDetail`). */
  Details?: Readonly<Record<string, string | number | boolean>>;
}

/** The keys of `ContextFields`, in the order they are logged. */
const CONTEXT_FIELD_KEYS: readonly string[] = [
  'StartedAt',
  'Route',
  'User',
  'TraceId',
  'SpanId',
  'Details',
];

/** `ContextFields` as JSON object members (`,"StartedAt":"...",...`), as pino writes the object. */
export function contextMembers(entry: AuditLogEntry): string {
  let out = (entry as RecordFacts)[kStartAndRoute]?.();
  if (out === undefined) {
    out = `,"StartedAt":${quote(entry.timestamp)}`;
    const route = entry.route;
    if (route !== undefined) out += `,"Route":${quote(route)}`;
  }
  const { user, traceId, spanId } = entry;
  if (user !== undefined) out += `,"User":${quote(user)}`;
  if (traceId !== undefined) out += `,"TraceId":${quote(traceId)}`;
  if (spanId !== undefined) out += `,"SpanId":${quote(spanId)}`;
  if (entry.details !== undefined) out += `,"Details":${JSON.stringify(entry.details)}`;
  return out;
}

/** `ContextFields` as an object, for pino's own path. */
export function contextFields(
  entry: AuditLogEntry,
  into: Partial<ContextFields> = {},
): ContextFields {
  const fields = into as ContextFields;
  fields.StartedAt = entry.timestamp;
  const { route, user, traceId, spanId } = entry;
  if (route !== undefined) fields.Route = route;
  if (user !== undefined) fields.User = user;
  if (traceId !== undefined) fields.TraceId = traceId;
  if (spanId !== undefined) fields.SpanId = spanId;
  if (entry.details !== undefined) fields.Details = entry.details;
  return fields;
}

/** The structured fields of `Default`, named like the message's placeholders, then `ContextFields`. */
interface DefaultFields extends Partial<ContextFields> {
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
export const DEFAULT_FIELD_KEYS: readonly string[] = [
  'Method',
  'Path',
  'Query',
  'StatusCode',
  'ElapsedMs',
  'CorrelationId',
  'Headers',
  'Aborted',
  ...CONTEXT_FIELD_KEYS,
];

/** `x` as it appears inside the JSON string of a text message: control-escaped, then JSON-escaped. */
function inMessage(x: string): string {
  return isPlain(x) ? x : jsonInner(escapeControl(x));
}

/** `plainHeadersJsonPair` of an entry's (already redacted) headers, or the general path. */
function headersJsonPair(
  headers: Readonly<Record<string, string>>,
): [json: string, inMessage: string] {
  const pair = plainHeadersJsonPair(headers);
  if (pair !== undefined) return pair;
  const json = JSON.stringify(headers);
  return [json, inMessage(json)];
}

/**
 * What Kit's own records (record.ts) tell the line without a scan or a lookup, each under its
 * key; a plain entry has none of them and takes the general path:
 *
 * - `kHeadersJsonPair`: the headers' JSON pair straight from the request's headers, or
 *   `undefined` when the redacted headers object is needed (`plainHeadersJsonPair`).
 * - `kStartAndRoute`: the `StartedAt` and `Route` members, which records cache (one per
 *   millisecond, one per route).
 * - `kPlainId`: `true` when the correlation id needs no escaping, which holds for every record:
 *   it is a UUID or an id that matched `CORRELATION_ID_PATTERN`.
 */
export const kHeadersJsonPair = Symbol('kit.audit.headersJsonPair');
export const kStartAndRoute = Symbol('kit.audit.startAndRoute');
export const kPlainId = Symbol('kit.audit.plainId');
type RecordFacts = {
  [kHeadersJsonPair]?: () => [json: string, inMessage: string] | undefined;
  [kStartAndRoute]?: () => string;
  [kPlainId]?: true;
};

/**
 * The Default line's two variable parts: the structured fields as JSON object members
 * (`,"Method":"GET",...`, the keys of `DEFAULT_FIELD_KEYS` in that order, non-finite numbers as
 * `null`, as pino writes the object) and the message already encoded as a JSON string with its
 * quotes (the same text as `JSON.stringify(defaultMessage(entry, headersJson))`). Each value is
 * checked once for characters that need escaping and used in both.
 */
export function defaultLineParts(entry: AuditLogEntry): { members: string; messageJson: string } {
  const { method, path, correlationId, statusCode, durationMs } = entry;
  const query = querySuffix(entry);
  const [headersJson, headersInMessage] =
    (entry as RecordFacts)[kHeadersJsonPair]?.() ?? headersJsonPair(entry.headers);
  const plainPath = isPlain(path);
  const plainQuery = isPlain(query);
  const plainId = (entry as RecordFacts)[kPlainId] === true || isPlain(correlationId);
  const aborted = entry.aborted === true;
  const [methodMember, methodMessage] = methodPieces(method);
  const [statusMember, statusMessage] = statusPieces(statusCode);
  // Each `+` of two longer strings is a rope node that the destination flattens again, so the
  // constant pieces are joined in the source, those around the method and the status come whole
  // from a cache, and the duration is turned into text once (`npm run bench:instructions`). A
  // value that is not plain is escaped in its place.
  const ms = `${durationMs}`;
  return {
    members:
      methodMember +
      (plainPath ? path : jsonInner(path)) +
      '","Query":"' +
      (plainQuery ? query : jsonInner(query)) +
      statusMember +
      (Number.isFinite(durationMs) ? ms : 'null') +
      ',"CorrelationId":"' +
      (plainId ? correlationId : jsonInner(correlationId)) +
      '","Headers":' +
      headersJson +
      (aborted ? ',"Aborted":true' : '') +
      contextMembers(entry),
    messageJson:
      methodMessage +
      (plainPath ? path : inMessage(path)) +
      (plainQuery ? query : inMessage(query)) +
      statusMessage +
      ms +
      'ms [CorrelationId: ' +
      (plainId ? correlationId : inMessage(correlationId)) +
      '] Headers=' +
      headersInMessage +
      (aborted ? ' (aborted)"' : '"'),
  };
}

// The Default line's text around the method (`,"Method":"GET","Path":"` and `"HTTP GET `) and around
// the status code (`","StatusCode":200,"ElapsedMs":` and ` responded 200 in `), one pair per method
// and per status, made flat (`join`) so that a line holds each as one piece. Methods are few (Node's
// parser knows a fixed list); the cache stops growing at 64, and statuses are the integers 100-999.
const METHOD_PIECES = new Map<string, readonly [member: string, message: string]>();
const STATUS_PIECES: Array<readonly [member: string, message: string] | undefined> = [];

function methodPieces(method: string): readonly [member: string, message: string] {
  let pieces = METHOD_PIECES.get(method);
  if (pieces === undefined) {
    const plain = isPlain(method);
    pieces = [
      [',"Method":"', plain ? method : jsonInner(method), '","Path":"'].join(''),
      ['"HTTP ', plain ? method : inMessage(method), ' '].join(''),
    ];
    if (METHOD_PIECES.size < 64 && method.length <= 32) METHOD_PIECES.set(method, pieces);
  }
  return pieces;
}

function statusPieces(status: number): readonly [member: string, message: string] {
  const cacheable = Number.isInteger(status) && status >= 100 && status <= 999;
  let pieces = cacheable ? STATUS_PIECES[status] : undefined;
  if (pieces === undefined) {
    pieces = [
      ['","StatusCode":', String(status), ',"ElapsedMs":'].join(''),
      [' responded ', String(status), ' in '].join(''),
    ];
    if (cacheable) STATUS_PIECES[status] = pieces;
  }
  return pieces;
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
    details: entry.details,
  });
  return escapeControl(json);
}

/** `Compact`: `{method} {path}{query} {status} {n}ms`. */
export function compactMessage(entry: AuditLogEntry): string {
  return escapeControl(
    `${entry.method} ${entry.path}${querySuffix(entry)} ${entry.statusCode} ${entry.durationMs}ms${abortedSuffix(entry)}`,
  );
}
