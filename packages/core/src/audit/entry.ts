/**
 * One audit record per audited request (the fields in docs/audit.md), as custom sinks
 * receive it: a plain, JSON-serialisable object.
 *
 * @example
 * ```ts
 * const sink: IAuditSink = {
 *   async writeAsync(entry: AuditLogEntry) {
 *     if (entry.statusCode >= 500 || entry.aborted) await alerts.notify(`${entry.method} ${entry.path}`, entry.correlationId);
 *   },
 * };
 * ```
 */
export interface AuditLogEntry {
  /** ISO 8601 time the request started. */
  readonly timestamp: string;
  readonly method: string;
  /**
   * Path without the query string, as received; capped at 4096 characters (`AUDIT_PATH_CAP`), a
   * cut path ending with `TRUNCATED_MARKER`.
   */
  readonly path: string;
  /** Redacted query string without `?`, capped at 4096 characters; `null` when absent or excluded. */
  readonly query: string | null;
  readonly statusCode: number;
  /** Milliseconds from the first hook to the response completing (fractional). */
  readonly durationMs: number;
  readonly correlationId: string;
  /** Request headers, redacted, values capped. */
  readonly headers: Readonly<Record<string, string>>;
  /** Present and true when the client went away before the response completed. */
  readonly aborted?: boolean;
  /** The route pattern the request matched (`/api/orders@2/:id`); absent when none did (404). */
  readonly route?: string;
  /**
   * The authenticated subject: `request.user.sub` when the response completed, as
   * `app.kitAuthenticate` sets it (capped at 256 characters); absent on unauthenticated requests.
   */
  readonly user?: string;
  /**
   * W3C trace id (32 hex digits): the active OpenTelemetry span's when the SDK is registered,
   * else the one of a valid incoming `traceparent` header; absent otherwise.
   */
  readonly traceId?: string;
  /** Span id (16 hex digits) of the OpenTelemetry span active when the request reached Kit. */
  readonly spanId?: string;
  /**
   * What plugins added to the request's entry with `setAuditDetail` (AutoCrud's `changes`: the
   * number of change-history rows the request's write recorded); absent when none did.
   */
  readonly details?: Readonly<Record<string, AuditDetailValue>>;
}

/**
 * A value a plugin adds to an audit entry (`setAuditDetail`).
 *
 * @example
 * ```ts
 * const value: AuditDetailValue = 3;
 * ```
 */
export type AuditDetailValue = string | number | boolean;

/**
 * Where audit entries go. `writeBatchAsync`, when present, is used by the
 * asynchronous writer for whole batches.
 *
 * @example
 * ```ts
 * class FileAuditSink implements IAuditSink {
 *   constructor(private readonly deps: { auditFile: FileHandle }) {}
 *   async writeAsync(entry: AuditLogEntry) {
 *     await this.deps.auditFile.appendFile(JSON.stringify(entry) + '\n');
 *   }
 * }
 * addKit(app, (opt) => {
 *   opt.configureAuditTrail();
 *   opt.auditSinkFactory = (services) => services.build(FileAuditSink);
 * });
 * ```
 */
export interface IAuditSink {
  writeAsync(entry: AuditLogEntry, signal?: AbortSignal): Promise<void>;
  writeBatchAsync?(entries: readonly AuditLogEntry[], signal?: AbortSignal): Promise<void>;
}

/**
 * Counters of the audit writer, readable as `app.kit.audit.stats()`. Every audited request is
 * counted once in `enqueued` or `dropped`; every enqueued entry ends in `written` or `failed`, or
 * is still in `queueDepth` (or in the batch being written).
 *
 * @example
 * ```ts
 * app.get('/internal/audit', async () => app.kit.audit.stats());
 * // { enqueued: 1200, written: 1100, dropped: 0, failed: 0, queueDepth: 100 }
 * ```
 */
export interface AuditStats {
  /** Entries accepted into the queue (async) or handed to the sink (sync). */
  readonly enqueued: number;
  /** Entries the sink accepted. */
  readonly written: number;
  /**
   * Entries dropped: the queue was full (async), 4096 custom-sink writes were pending (sync), or
   * the queue was discarded at close because `ensureFlushOnShutdown` is false.
   */
  readonly dropped: number;
  /** Entries whose write failed: the sink threw or rejected, or the call ran past `writeTimeoutMs`. */
  readonly failed: number;
  /** Entries waiting in the queue now. */
  readonly queueDepth: number;
}

/**
 * The audit trail as the running layer exposes it (`app.kit.audit`).
 *
 * @example
 * ```ts
 * if (app.kit.audit.enabled) {
 *   await app.kit.audit.flush();
 *   app.log.info(app.kit.audit.stats(), 'audit trail flushed');
 * }
 * ```
 */
export interface KitAudit {
  /** True when `configureAuditTrail` was called. */
  readonly enabled: boolean;
  /** Queue and sink counters. */
  stats(): AuditStats;
  /**
   * Writes every entry queued so far (asynchronous mode) or waits for pending custom-sink writes
   * (synchronous mode, at most `writeTimeoutMs`); resolves at once when there are none.
   */
  flush(): Promise<void>;
}
