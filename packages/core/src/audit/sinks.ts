import type { FastifyBaseLogger } from 'fastify';
import { AuditTrailFormat } from '../shared/enums.js';
import { invalidOption } from '../shared/errors.js';
import type { AuditLogEntry, IAuditSink } from './entry.js';
import {
  compactMessage,
  contextFields,
  contextMembers,
  DEFAULT_FIELD_KEYS,
  defaultFields,
  defaultLineParts,
  defaultMessage,
  dotnetLoggerMessage,
  jsonStyleMessage,
} from './formats.js';
import type { AuditLogLevel } from './options.js';
import { PinoLines, type LineHead } from './pino-lines.js';

const LEVELS: readonly string[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/**
 * The lines a logging sink would write for `entries[from..to)`, as one string, or `undefined`
 * when the sink writes through pino's own call (then `writeMany` is the way). Kit-internal.
 */
export let linesOf: (
  sink: LoggingAuditSink,
  entries: readonly AuditLogEntry[],
  from: number,
  to: number,
) => string | undefined;

/** Hands text from `linesOf` to the sink's logger destination. Kit-internal. */
export let writeLines: (sink: LoggingAuditSink, text: string) => void;
const RESOLVED = Promise.resolve();

/**
 * Output style and levels of a `LoggingAuditSink`; Kit passes the audit trail's own settings.
 *
 * @example
 * ```ts
 * const sink = new LoggingAuditSink(app.log, { logFormat: AuditTrailFormat.JsonStyle, successLogLevel: 'debug' });
 * ```
 */
export interface LoggingAuditSinkOptions {
  /** Default `AuditTrailFormat.Default`. */
  logFormat?: AuditTrailFormat;
  /** Level for status codes below 400; default `'info'`. */
  successLogLevel?: AuditLogLevel;
  /** Level for status codes 400 to 499; default `'warn'`. */
  warningLogLevel?: AuditLogLevel;
  /** Level for status codes 500 and above; default `'error'`. */
  errorLogLevel?: AuditLogLevel;
}

type LevelCheck = { isLevelEnabled?: (level: string) => boolean };
type Flushable = { flush?: (cb?: (err?: Error) => void) => void };

/**
 * The default audit sink: writes each entry as one line through a pino
 * logger — Kit uses the Fastify instance's `app.log` — at a level chosen by status code, in one
 * of the four formats. Writing is synchronous (pino's own destination decides whether the bytes
 * reach the file now or in its buffer); the `*Async` methods resolve at once.
 *
 * Entries at a level the logger has disabled are not formatted at all.
 *
 * @example
 * ```ts
 * // Tee: every entry to the log in Compact form and to a store of your own.
 * addKit(app, (opt) => {
 *   opt.configureAuditTrail();
 *   opt.auditSinkFactory = (services) => {
 *     const log = new LoggingAuditSink(app.log, { logFormat: AuditTrailFormat.Compact });
 *     const store = services.resolve<AuditStore>('auditStore');
 *     return { async writeAsync(entry) { log.write(entry); await store.save(entry); } };
 *   };
 * });
 * ```
 */
export class LoggingAuditSink implements IAuditSink {
  readonly #logger: FastifyBaseLogger;
  readonly #isLevelEnabled: ((level: string) => boolean) | undefined;
  readonly #format: AuditTrailFormat;
  readonly #success: AuditLogLevel;
  readonly #warning: AuditLogLevel;
  readonly #error: AuditLogLevel;
  readonly #lines: PinoLines | undefined;

  constructor(logger: FastifyBaseLogger, options: LoggingAuditSinkOptions = {}) {
    if (typeof logger !== 'object' || logger === null || typeof logger.info !== 'function') {
      throw invalidOption('LoggingAuditSink(logger)', logger, 'a pino logger such as app.log');
    }
    this.#logger = logger;
    const check = (logger as FastifyBaseLogger & LevelCheck).isLevelEnabled;
    this.#isLevelEnabled = typeof check === 'function' ? check.bind(logger) : undefined;
    this.#format = options.logFormat ?? AuditTrailFormat.Default;
    if (!Object.values(AuditTrailFormat).includes(this.#format)) {
      throw invalidOption(
        'LoggingAuditSink logFormat',
        this.#format,
        `one of ${Object.values(AuditTrailFormat).join(', ')}`,
      );
    }
    this.#success = level('successLogLevel', options.successLogLevel ?? 'info');
    this.#warning = level('warningLogLevel', options.warningLogLevel ?? 'warn');
    this.#error = level('errorLogLevel', options.errorLogLevel ?? 'error');
    this.#lines = PinoLines.create(logger, DEFAULT_FIELD_KEYS);
  }

  /** The pino level an entry with this status code is written at. */
  levelFor(statusCode: number): AuditLogLevel {
    return statusCode < 400 ? this.#success : statusCode < 500 ? this.#warning : this.#error;
  }

  /**
   * Whether an entry with this status code would be written at the logger's current level.
   *
   * @example
   * ```ts
   * if (sink.isEnabledFor(entry.statusCode)) queue.push(entry);
   * ```
   */
  isEnabledFor(statusCode: number): boolean {
    return this.#isLevelEnabled === undefined || this.#isLevelEnabled(this.levelFor(statusCode));
  }

  /** Writes one entry now. */
  write(entry: AuditLogEntry): void {
    const level = this.levelFor(entry.statusCode);
    if (this.#isLevelEnabled !== undefined && !this.#isLevelEnabled(level)) return;
    const lines = this.#lines;
    if (lines !== undefined && lines.usable)
      lines.write(this.#line(lines, level, entry, lines.head()));
    else this.#log(level, entry);
  }

  /**
   * Writes `entries[from]` to `entries[to - 1]` in order. On the direct path their lines reach the
   * destination in one write: the synchronous mode writes a turn's entries this way (the
   * asynchronous mode also holds the lines across turns, writer.ts).
   */
  writeMany(entries: readonly AuditLogEntry[], from: number, to: number): void {
    const text = this.#text(entries, from, to);
    if (text === undefined) for (let i = from; i < to; i++) this.write(entries[i] as AuditLogEntry);
    else if (text.length > 0) (this.#lines as PinoLines).write(text);
  }

  static {
    // The asynchronous writer holds lines as text between destination writes (writer.ts); these
    // two reach the private path without widening the public class.
    linesOf = (sink, entries, from, to) => sink.#text(entries, from, to);
    writeLines = (sink, text) => (sink.#lines as PinoLines).write(text);
  }

  /** The lines of `entries[from..to)` on the direct path, or `undefined` when pino's own call must write them. */
  #text(entries: readonly AuditLogEntry[], from: number, to: number): string | undefined {
    const lines = this.#lines;
    if (lines === undefined || !lines.usable) return undefined;
    let out = '';
    const head = lines.head();
    for (let i = from; i < to; i++) {
      const entry = entries[i] as AuditLogEntry;
      const level = this.levelFor(entry.statusCode);
      if (this.#isLevelEnabled === undefined || this.#isLevelEnabled(level))
        out += this.#line(lines, level, entry, head);
    }
    return out;
  }

  #line(lines: PinoLines, level: AuditLogLevel, entry: AuditLogEntry, head: LineHead): string {
    switch (this.#format) {
      case AuditTrailFormat.Default: {
        const { members, messageJson } = defaultLineParts(entry);
        return lines.lineWithJsonMessage(level, members, messageJson, head);
      }
      case AuditTrailFormat.DotnetLogger:
        return lines.line(
          level,
          contextMembers(entry),
          dotnetLoggerMessage(entry, JSON.stringify(entry.headers)),
          head,
        );
      case AuditTrailFormat.JsonStyle:
        return lines.line(level, '', jsonStyleMessage(entry), head);
      case AuditTrailFormat.Compact:
        return lines.line(level, contextMembers(entry), compactMessage(entry), head);
    }
  }

  /** pino's own path, for loggers whose lines Kit cannot reproduce (see `pino-lines.ts`). */
  #log(level: AuditLogLevel, entry: AuditLogEntry): void {
    const logger = this.#logger;
    switch (this.#format) {
      case AuditTrailFormat.Default:
        logger[level](defaultFields(entry), defaultMessage(entry, JSON.stringify(entry.headers)));
        return;
      case AuditTrailFormat.DotnetLogger:
        logger[level](
          contextFields(entry),
          dotnetLoggerMessage(entry, JSON.stringify(entry.headers)),
        );
        return;
      case AuditTrailFormat.JsonStyle:
        logger[level](jsonStyleMessage(entry));
        return;
      case AuditTrailFormat.Compact:
        logger[level](contextFields(entry), compactMessage(entry));
        return;
    }
  }

  /** Writes one entry; resolves at once. */
  writeAsync(entry: AuditLogEntry, _signal?: AbortSignal): Promise<void> {
    this.write(entry);
    return RESOLVED;
  }

  /** Writes a batch in order; resolves at once. */
  writeBatchAsync(entries: readonly AuditLogEntry[], _signal?: AbortSignal): Promise<void> {
    for (const entry of entries) this.write(entry);
    return RESOLVED;
  }

  /**
   * Asks the logger to write out what its destination still buffers (pino's `flush`), waiting at
   * most `timeoutMs`. Kit calls it when the server closes: pino's asynchronous destinations hold
   * lines in memory, and a process that exits without flushing loses them.
   */
  flush(timeoutMs = 10_000): Promise<void> {
    const flush = (this.#logger as FastifyBaseLogger & Flushable).flush;
    if (typeof flush !== 'function') return RESOLVED;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      timer.unref();
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      try {
        flush.call(this.#logger, done);
      } catch {
        done(); // a destination that cannot flush (already closed): nothing more to do
      }
    });
  }
}

function level(option: string, value: unknown): AuditLogLevel {
  if (!LEVELS.includes(value as string))
    throw invalidOption(`LoggingAuditSink ${option}`, value, `one of ${LEVELS.join(', ')}`);
  return value as AuditLogLevel;
}
