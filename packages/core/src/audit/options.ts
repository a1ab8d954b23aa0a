import { AuditTrailFormat } from '../shared/enums.js';
import { invalidOption } from '../shared/errors.js';

/**
 * A pino level name used for audit entries.
 *
 * @example
 * ```ts
 * opt.configureAuditTrail((a) => { a.successLogLevel = 'debug' satisfies AuditLogLevel; });
 * ```
 */
export type AuditLogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

const LEVELS: readonly string[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/**
 * The capacity of the asynchronous audit queue (docs/decisions.md, "Public names"); new
 * entries are dropped past it. A host can compare `app.kit.audit.stats().queueDepth` with it.
 * It also bounds the writes a synchronous custom sink may have pending.
 *
 * @example
 * ```ts
 * const { queueDepth } = app.kit.audit.stats();
 * if (queueDepth > AUDIT_QUEUE_CAPACITY * 0.8) app.log.warn({ queueDepth }, 'audit queue nearly full');
 * ```
 */
export const AUDIT_QUEUE_CAPACITY = 4096;

/**
 * The headers `redactHeaders` lists by default: credentials and session or anti-forgery tokens.
 *
 * @example
 * ```ts
 * addKit(app, (opt) => opt.configureAuditTrail((a) => {
 *   a.redactHeaders = [...DEFAULT_REDACT_HEADERS, 'X-Admin-Key'];
 * }));
 * ```
 */
export const DEFAULT_REDACT_HEADERS: readonly string[] = Object.freeze([
  'Authorization',
  'Proxy-Authorization',
  'Cookie',
  'X-Api-Key',
  'X-Auth-Token',
  'X-Access-Token',
  'X-Amz-Security-Token',
  'X-CSRF-Token',
  'X-XSRF-Token',
]);

/**
 * The query parameters `redactQueryParams` lists by default: tokens and codes of OAuth 2 and
 * OpenID Connect (`access_token`, `refresh_token`, `id_token`, `code`, `code_verifier`,
 * `client_secret`, `client_assertion`, `assertion`), API keys, passwords, session ids, signatures
 * of pre-signed URLs (`sig` of Azure SAS, `X-Amz-Signature`, `X-Amz-Credential`,
 * `X-Amz-Security-Token`) and `authorization` sent as a parameter.
 *
 * @example
 * ```ts
 * addKit(app, (opt) => opt.configureAuditTrail((a) => {
 *   a.redactQueryParams = [...DEFAULT_REDACT_QUERY_PARAMS, 'otp'];
 * }));
 * ```
 */
export const DEFAULT_REDACT_QUERY_PARAMS: readonly string[] = Object.freeze([
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'code',
  'code_verifier',
  'client_secret',
  'client_assertion',
  'assertion',
  'jwt',
  'api_key',
  'apikey',
  'key',
  'secret',
  'password',
  'passwd',
  'pwd',
  'authorization',
  'auth',
  'session',
  'sessionid',
  'session_id',
  'signature',
  'sig',
  'x-amz-signature',
  'x-amz-credential',
  'x-amz-security-token',
]);

/**
 * Audit trail settings, given to the action of
 * `opt.configureAuditTrail(action)`. The defaults are listed in docs/audit.md.
 *
 * @example
 * ```ts
 * addKit(app, (opt) => opt.configureAuditTrail((a) => {
 *   a.asyncWrite = true;
 *   a.excludePaths.push('/metrics');
 *   a.logFormat = AuditTrailFormat.Compact;
 * }));
 * ```
 */
export class AuditTrailOptions {
  /** Level for status codes below 400. */
  successLogLevel: AuditLogLevel = 'info';
  /** Level for status codes 400 to 499. */
  warningLogLevel: AuditLogLevel = 'warn';
  /** Level for status codes 500 and above. */
  errorLogLevel: AuditLogLevel = 'error';
  /**
   * Paths that are neither audited nor given a correlation header. Matching is case-insensitive,
   * exact or as a prefix that ends at `/` (`/docs` excludes `/docs/static/x`, not `/docsx`).
   * Defaults to the health path, `/livez`, the OpenAPI document path and the reference UI path.
   */
  excludePaths: string[];
  /**
   * Request headers whose values are written as `***` (case-insensitive), in the audit entry and
   * in every line Fastify logs for the request. Defaults: `DEFAULT_REDACT_HEADERS`.
   */
  redactHeaders: string[] = [...DEFAULT_REDACT_HEADERS];
  /**
   * Query parameters whose values are written as `***` (case-insensitive, percent-decoded; a
   * bracketed or dotted name such as `token[]` or `user[password]` by each of its parts), in the
   * audit entry and in every line Fastify logs for the request. Defaults: `DEFAULT_REDACT_QUERY_PARAMS`.
   */
  redactQueryParams: string[] = [...DEFAULT_REDACT_QUERY_PARAMS];
  /** Whether the (redacted) query string is part of the logged path. */
  includeQueryString = true;
  /** Name of the correlation header, read from requests and set on responses. */
  correlationIdHeader = 'X-Correlation-Id';
  /** Reuse a valid incoming correlation id (`^[A-Za-z0-9._-]{1,128}$`) instead of a new UUID. */
  forwardCorrelationId = true;
  /**
   * Write in batches off the request: a custom sink through a bounded queue and a background batch
   * writer; the logging sink by holding its formatted lines for one destination write per batch.
   */
  asyncWrite = false;
  /** Maximum entries per flush in asynchronous mode. */
  batchSize = 100;
  /** Maximum wait, in milliseconds, before a partial batch is flushed. */
  flushIntervalMs = 5000;
  /**
   * Flush queued entries when the server closes (`app.close()`, which graceful shutdown calls),
   * and on SIGTERM or SIGINT when nothing else in the process handles that signal: Kit then
   * writes what is queued (at most `writeTimeoutMs`) and lets the signal end the process as Node
   * would without a handler.
   */
  ensureFlushOnShutdown = true;
  /**
   * Longest time one sink call (a batch in asynchronous mode) may take. When it runs out the
   * call's `AbortSignal` is aborted, its entries are counted `failed` and the writer moves on, so a
   * hung sink can neither stall the trail for good nor hold `app.close()` open.
   */
  writeTimeoutMs = 10_000;
  /**
   * Makes `getCorrelationId()` work anywhere in the request (an `AsyncLocalStorage`). On Node 20
   * and 22 its async hooks track every promise of the process: about 1.5 µs of CPU per request on
   * Node 20, about 12,000 instructions (a tenth of a hello-world request) on Node 22; on Node 24
   * and later it costs almost nothing. Hosts that only use `request.id` (which is the correlation
   * id) may turn it off.
   */
  correlationIdContext = true;
  /** Output style of each entry. */
  logFormat: AuditTrailFormat = AuditTrailFormat.Default;
  /**
   * Fastify's own per-request lines (`incoming request`, `request completed`, `Route ... not
   * found`). Off while the audit trail is on: the entry is the request's line, and those lines
   * would say the same thing twice. `true` leaves them to Fastify's own setting
   * (`logController`). Either way the URL and headers in every line Fastify logs for a request
   * (its error lines included) are redacted like the entry's.
   */
  fastifyRequestLogging = false;

  constructor(defaultExcludePaths: readonly string[]) {
    this.excludePaths = [...defaultExcludePaths];
  }
}

/** Throws `KIT_ERR_INVALID_OPTION` naming the first audit option that is out of range. */
export function validateAuditTrailOptions(a: AuditTrailOptions): void {
  for (const key of ['successLogLevel', 'warningLogLevel', 'errorLogLevel'] as const) {
    if (!LEVELS.includes(a[key]))
      throw invalidOption(`auditTrail.${key}`, a[key], `one of ${LEVELS.join(', ')}`);
  }
  for (const key of ['excludePaths', 'redactHeaders', 'redactQueryParams'] as const) {
    const list: unknown = a[key];
    if (!Array.isArray(list) || list.some((v) => typeof v !== 'string' || v.length === 0)) {
      throw invalidOption(`auditTrail.${key}`, list, 'an array of non-empty strings');
    }
  }
  for (const p of a.excludePaths) {
    if (!p.startsWith('/'))
      throw invalidOption('auditTrail.excludePaths', p, 'paths that start with "/"');
  }
  if (
    typeof a.correlationIdHeader !== 'string' ||
    !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(a.correlationIdHeader)
  ) {
    throw invalidOption(
      'auditTrail.correlationIdHeader',
      a.correlationIdHeader,
      'a valid HTTP header name',
    );
  }
  if (!Number.isInteger(a.batchSize) || a.batchSize < 1 || a.batchSize > AUDIT_QUEUE_CAPACITY) {
    throw invalidOption(
      'auditTrail.batchSize',
      a.batchSize,
      `an integer from 1 to ${AUDIT_QUEUE_CAPACITY}`,
    );
  }
  for (const key of ['flushIntervalMs', 'writeTimeoutMs'] as const) {
    if (!Number.isFinite(a[key]) || a[key] < 1 || a[key] > 2_147_483_647) {
      throw invalidOption(
        `auditTrail.${key}`,
        a[key],
        'a number of milliseconds from 1 to 2147483647',
      );
    }
  }
  if (!Object.values(AuditTrailFormat).includes(a.logFormat)) {
    throw invalidOption(
      'auditTrail.logFormat',
      a.logFormat,
      `one of ${Object.values(AuditTrailFormat).join(', ')}`,
    );
  }
  for (const key of [
    'includeQueryString',
    'forwardCorrelationId',
    'asyncWrite',
    'ensureFlushOnShutdown',
    'correlationIdContext',
    'fastifyRequestLogging',
  ] as const) {
    if (typeof a[key] !== 'boolean')
      throw invalidOption(`auditTrail.${key}`, a[key], 'true or false');
  }
}
