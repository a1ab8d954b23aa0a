import type { FastifyInstance } from 'fastify';
import { invalidOption, KitError } from '../shared/errors.js';
import { dependencyError, type KitServices } from '../shared/services.js';
import { BatchWriter } from './batch-writer.js';
import type { AuditStats, IAuditSink, KitAudit } from './entry.js';
import type { AuditTrailOptions } from './options.js';
import type { AuditRecord } from './record.js';
import { flushLoggerForExit } from '../lifecycle/log-flush.js';
import { flushOnSignals, type FlushOnSignal } from '../lifecycle/signals.js';
import { LoggingAuditSink } from './sinks.js';
import {
  DirectLogWriter,
  SinkWriter,
  snapshot,
  type AuditCounters,
  type AuditWriter,
} from './writer.js';
import { redactError } from '../shared/secrets.js';

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
export class AuditTrail implements KitAudit, FlushOnSignal {
  readonly enabled = true;
  readonly #counters: AuditCounters = { enqueued: 0, written: 0, dropped: 0, failed: 0 };
  readonly #app: FastifyInstance;
  readonly #options: Readonly<AuditTrailOptions>;
  readonly #factory: AuditSinkFactory | undefined;
  readonly #services: KitServices;
  #writer: AuditWriter | undefined;
  #lastReport = -Infinity;
  #unreported = 0;
  #stopSignals: (() => void) | undefined;
  /** True while the shutdown's flush runs. */
  #closing = false;

  constructor(
    app: FastifyInstance,
    options: Readonly<AuditTrailOptions>,
    factory: AuditSinkFactory | undefined,
    services: KitServices,
  ) {
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
    // The logging sink formats the turn's entries at its end in both modes; asynchronous mode then
    // holds the lines (not the records) for one destination write per batch (docs/audit.md,
    // "Synchronous and asynchronous writing").
    if (sink instanceof LoggingAuditSink)
      this.#writer = new DirectLogWriter(
        sink,
        this.#counters,
        report,
        o.writeTimeoutMs,
        o.asyncWrite ? o : undefined,
      );
    else if (o.asyncWrite) this.#writer = new BatchWriter(sink, this.#counters, report, o);
    else this.#writer = new SinkWriter(sink, this.#counters, report, o);
    if (o.ensureFlushOnShutdown) this.#stopSignals = flushOnSignals(this);
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
      throw invalidOption(
        'auditSinkFactory',
        sink,
        'a factory returning an IAuditSink (an object with writeAsync(entry, signal))',
      );
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

  /** The `flush` shutdown step: flush (or discard) what is queued. */
  async close(): Promise<void> {
    this.#stopSignals?.();
    this.#stopSignals = undefined;
    const writer = this.#writer;
    if (writer === undefined) return;
    this.#closing = true;
    try {
      await writer.close(this.#options.ensureFlushOnShutdown);
    } finally {
      this.#closing = false;
    }
  }

  /**
   * Graceful shutdown's bound on the shutdown's flush: when it is still running, the entries not
   * yet written are counted `failed`, the flush returns, and the error to report says so.
   */
  abandonCloseFlush(drainTimeoutMs: number): KitError | undefined {
    if (!this.#closing || this.#writer === undefined) return undefined;
    const abandoned = this.#writer.abandon();
    return new KitError(
      'KIT_ERR_AUDIT_FLUSH_TIMEOUT',
      `The audit trail's flush on shutdown did not finish within gracefulShutdown.drainTimeoutMs (${drainTimeoutMs} ms): the audit sink did not answer. ` +
        `${abandoned} entr${abandoned === 1 ? 'y was' : 'ies were'} abandoned and counted as failed (app.kit.audit.stats()).`,
    );
  }

  /**
   * SIGTERM/SIGINT that no handler in the process acts on (or another app's graceful shutdown
   * that ends the process): write what is queued before the process ends.
   */
  flushForSignal(signal: NodeJS.Signals, ending: 'signal' | 'shutdown'): Promise<void> {
    const queued = this.#writer?.queueDepth ?? 0;
    try {
      this.#app.log.info(
        { signal, queued },
        ending === 'signal'
          ? `Kit audit trail: ${signal} and no handler for it: writing the queued audit entries, then ${signal} ends the process (configureGracefulShutdown() drains requests first)`
          : `Kit audit trail: ${signal} ends the process once another Kit app's graceful shutdown is done: writing the queued audit entries first`,
      );
    } catch {
      // a broken logger must not keep the entries from being written
    }
    // Both under the one bound of `signalFlushTimeoutMs` that the signal owner also keeps.
    const end = performance.now() + this.#options.writeTimeoutMs;
    return this.flush().then(() =>
      flushLoggerForExit(this.#app.log, Math.max(0, end - performance.now())),
    );
  }

  get signalFlushTimeoutMs(): number {
    return this.#options.writeTimeoutMs;
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
      this.#app.log.error(
        { err: redactError(err), audit: this.stats(), suppressed },
        'Kit audit trail: the audit sink failed; entries are counted as failed',
      );
    } catch {
      // The logger itself is broken: the counters still tell the story.
    }
  };
}
