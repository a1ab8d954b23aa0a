/**
 * One audit record per audited request (spec `AuditLogEntry`, DESIGN item 17).
 */
export interface AuditLogEntry {
  /** ISO 8601 time the request started. */
  readonly timestamp: string;
  readonly method: string;
  /** Path without the query string. */
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
}

/**
 * Where audit entries go (spec `IAuditSink`). `writeBatchAsync`, when present, is used by the
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

/** Counters of the audit writer, readable as `app.kit.audit.stats()`. */
export interface AuditStats {
  /** Entries accepted into the queue (async) or handed to the sink (sync). */
  readonly enqueued: number;
  /** Entries the sink accepted. */
  readonly written: number;
  /** Entries dropped because the queue was full. */
  readonly dropped: number;
  /** Entries whose write failed (the sink threw or rejected). */
  readonly failed: number;
  /** Entries waiting in the queue now. */
  readonly queueDepth: number;
}
