import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { invalidOption } from '../errors.js';
import type { KitAudit } from '../runtime.js';
import { dependencyError, type KitServices } from '../services.js';
import { correlationIdFrom, enterCorrelationContext } from './correlation.js';
import type { AuditStats, IAuditSink } from './entry.js';
import { createExcludeMatcher } from './exclude.js';
import type { AuditTrailOptions } from './options.js';
import { AuditRecord } from './record.js';
import { Redactor } from './redaction.js';
import { LoggingAuditSink } from './sinks.js';
import { BatchWriter } from './batch-writer.js';
import { DirectLogWriter, SinkWriter, snapshot, type AuditCounters, type AuditWriter } from './writer.js';

// Per-request state rides on Node's own request and response objects under symbols: no Fastify
// decoration (which would widen every FastifyRequest) and no closure per request.
const kCorrelationId = Symbol('kit.audit.correlationId');
const kRecord = Symbol('kit.audit.record');

/** `string`: audited with this id; `null`: excluded path; absent: Kit's genReqId did not run. */
type RawRequest = IncomingMessage & { [kCorrelationId]?: string | null };
type RawResponse = ServerResponse & { [kRecord]?: AuditRecord | undefined };
type GenReqId = (this: unknown, req: IncomingMessage) => string;

/** The sink factory as `KitOption.auditSinkFactory` holds it. */
export type AuditSinkFactory = (services: KitServices) => IAuditSink;

/** How often, at most, a failing or hanging sink is reported in the log. */
const REPORT_EVERY_MS = 10_000;

/**
 * The running audit trail, `app.kit.audit` when `configureAuditTrail` was called. Owns the
 * counters and the writer; `installAuditTrail` wires it into Fastify.
 *
 * @example
 * ```ts
 * const { enqueued, written, dropped, failed, queueDepth } = app.kit.audit.stats();
 * await app.kit.audit.flush();
 * ```
 */
export class AuditTrail implements KitAudit {
  readonly enabled = true;
  readonly #counters: AuditCounters = { enqueued: 0, written: 0, dropped: 0, failed: 0 };
  readonly #app: FastifyInstance;
  readonly #options: Readonly<AuditTrailOptions>;
  readonly #factory: AuditSinkFactory | undefined;
  readonly #services: KitServices;
  #writer: AuditWriter | undefined;
  #lastReport = -Infinity;
  #unreported = 0;

  constructor(app: FastifyInstance, options: Readonly<AuditTrailOptions>, factory: AuditSinkFactory | undefined, services: KitServices) {
    this.#app = app;
    this.#options = options;
    this.#factory = factory;
    this.#services = services;
  }

  /**
   * Builds the sink and its writer. `useKit` calls it after DI validation so that a factory
   * resolving a missing service fails start-up; a request that completes earlier starts it lazily.
   */
  start(): void {
    if (this.#writer !== undefined) return;
    const sink = this.#createSink();
    const o = this.#options;
    const report = this.#report;
    if (o.asyncWrite) this.#writer = new BatchWriter(sink, this.#counters, report, o);
    else if (sink instanceof LoggingAuditSink) this.#writer = new DirectLogWriter(sink, this.#counters, report, o.writeTimeoutMs);
    else this.#writer = new SinkWriter(sink, this.#counters, report, o);
  }

  #createSink(): IAuditSink {
    const factory = this.#factory;
    if (factory === undefined) return new LoggingAuditSink(this.#app.log, this.#options);
    let sink: unknown;
    try {
      sink = factory(this.#services);
    } catch (err) {
      throw dependencyError(err, 'auditSinkFactory');
    }
    if (typeof (sink as IAuditSink | null)?.writeAsync !== 'function') {
      throw invalidOption('auditSinkFactory', sink, 'a factory returning an IAuditSink (an object with writeAsync(entry, signal))');
    }
    return sink as IAuditSink;
  }

  /** Hands a finished record to the writer; never throws into Node's response machinery. */
  accept(record: AuditRecord): void {
    let writer = this.#writer;
    if (writer === undefined) {
      try {
        this.start();
      } catch (err) {
        this.#counters.failed++;
        this.#report(err);
        return;
      }
      writer = this.#writer as AuditWriter;
    }
    writer.accept(record);
  }

  stats(): AuditStats {
    return snapshot(this.#counters, this.#writer);
  }

  flush(): Promise<void> {
    return this.#writer?.flush() ?? Promise.resolve();
  }

  /** The `onClose` step: flush (or discard) what is queued. */
  close(): Promise<void> {
    return this.#writer?.close(this.#options.ensureFlushOnShutdown) ?? Promise.resolve();
  }

  // Sink failures are counted every time but logged at most once per REPORT_EVERY_MS, so a
  // broken sink under load cannot flood the log it may itself be writing to.
  readonly #report = (err: unknown): void => {
    const now = Date.now();
    if (now - this.#lastReport < REPORT_EVERY_MS) {
      this.#unreported++;
      return;
    }
    this.#lastReport = now;
    const suppressed = this.#unreported;
    this.#unreported = 0;
    try {
      this.#app.log.error({ err, audit: this.stats(), suppressed }, 'Kit audit trail: the audit sink failed; entries are counted as failed');
    } catch {
      // The logger itself is broken: the counters still tell the story.
    }
  };
}

/**
 * Wires the audit trail into a Fastify instance (called by `addKit`, before any plugin context or
 * route exists):
 *
 * - `genReqId` gives audited requests their correlation id as `request.id`, so every log line of
 *   the request carries it. Excluded paths keep the id generator the instance had before (the
 *   host's `genReqId` option, `requestIdHeader`, or Fastify's counter). A host that calls
 *   `setGenReqId` after `addKit` wins for `request.id`; the correlation id is then computed in
 *   the first hook and used for the header, the entry and `getCorrelationId()` all the same.
 *   Fastify's `requestIdHeader` option is applied by Fastify around any genReqId: when a request
 *   carries that header, its value is `request.id`, and the correlation id again comes from the
 *   first hook.
 * - A root `onRequest` hook sets the response header, opens the correlation context and starts
 *   the record; the response's `close` event (which fires for completed and for aborted
 *   responses alike) finishes it. No body is read and nothing waits on the sink.
 * - An `onClose` hook flushes the queue when the server closes.
 */
export function installAuditTrail(
  app: FastifyInstance,
  options: Readonly<AuditTrailOptions>,
  factory: AuditSinkFactory | undefined,
  services: KitServices,
): AuditTrail {
  const trail = new AuditTrail(app, options, factory, services);
  const isExcluded = createExcludeMatcher(options.excludePaths);
  const redactor = new Redactor(options.redactHeaders, options.redactQueryParams);
  const headerKey = options.correlationIdHeader.toLowerCase();
  const forward = options.forwardCorrelationId;
  const includeQuery = options.includeQueryString;
  const withContext = options.correlationIdContext;

  function correlationIdOf(raw: RawRequest): string | null {
    if (isExcluded(raw.url ?? '/')) return null;
    return forward ? correlationIdFrom(raw.headers[headerKey]) : randomUUID();
  }

  const previous = (app as unknown as { genReqId?: GenReqId }).genReqId;
  let fallbackCounter = 0;
  const hostGenReqId: GenReqId = typeof previous === 'function' ? previous : () => `req-${(++fallbackCounter).toString(36)}`;
  app.setGenReqId(function kitGenReqId(this: unknown, req: RawRequest): string {
    const id = correlationIdOf(req);
    req[kCorrelationId] = id;
    return id ?? hostGenReqId.call(this, req);
  });

  function onResponseClose(this: RawResponse): void {
    const record = this[kRecord];
    if (record === undefined) return;
    this[kRecord] = undefined;
    // 'close' before end() was called: the connection went away before the response was
    // complete. (writableFinished would also wait for the bytes to drain, which inject's fake
    // socket never reports.)
    const aborted = !this.writableEnded;
    record.complete(aborted && !this.headersSent ? 499 : this.statusCode, performance.now(), aborted);
    trail.accept(record);
  }

  app.addHook('onRequest', function kitAuditOnRequest(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const raw = request.raw as RawRequest;
    let id = raw[kCorrelationId];
    if (id === undefined) {
      id = correlationIdOf(raw);
      raw[kCorrelationId] = id;
    }
    if (id === null) {
      // The connection's async resource may still carry the previous request's id.
      if (withContext) enterCorrelationContext(undefined);
      done();
      return;
    }
    // reply.header(), not res.setHeader(): a header set on Node's response pushes every later
    // writeHead() onto Node's slow path. Error replies and 404s keep it; a handler that hijacks
    // the reply writes its own headers. Fastify lower-cases names anyway: hand it the lower-case one.
    reply.header(headerKey, id);
    const res = reply.raw as RawResponse;
    if (withContext) enterCorrelationContext(id);
    if (res[kRecord] === undefined) res.on('close', onResponseClose);
    res[kRecord] = new AuditRecord(raw.method ?? 'GET', raw.url ?? '/', raw.headers, id, performance.now(), redactor, includeQuery);
    done();
  });

  app.addHook('onClose', () => trail.close());
  return trail;
}
