import { onLoopDrained } from '../lifecycle/signals.js';
import { KitError } from '../shared/errors.js';
import type { AuditStats, IAuditSink } from './entry.js';
import { AUDIT_QUEUE_CAPACITY } from './options.js';
import type { AuditRecord } from './record.js';
import { linesOf, writeLines, type LoggingAuditSink } from './sinks.js';

/** Counters shared by the hooks and the writers; `stats()` adds the queue depth. */
export interface AuditCounters {
  enqueued: number;
  written: number;
  dropped: number;
  failed: number;
}

/** Called when a sink fails or times out; the audit trail rate-limits what reaches the log. */
export type AuditFailureReporter = (err: unknown) => void;

/** Where the hooks hand finished records. */
export interface AuditWriter {
  accept(record: AuditRecord): void;
  readonly queueDepth: number;
  /** Resolves when every entry accepted before the call has been written, has failed, or cannot progress. */
  flush(): Promise<void>;
  /** Stops the writer: flushes first when `flush` is true, else discards what is queued (counted `dropped`). */
  close(flush: boolean): Promise<void>;
  /**
   * Gives up on every entry not yet written (queued, or in a sink call still running): they are
   * counted `failed`, pending `flush()` and `close()` calls return. Returns how many.
   */
  abandon(): number;
}

/** Settings of the writers, from `AuditTrailOptions`. */
export interface WriterSettings {
  readonly batchSize: number;
  readonly flushIntervalMs: number;
  readonly writeTimeoutMs: number;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}

export function timeoutError(ms: number, count: number): KitError {
  return new KitError(
    'KIT_ERR_AUDIT_WRITE_TIMEOUT',
    `The audit sink did not settle a write of ${count} entr${count === 1 ? 'y' : 'ies'} within writeTimeoutMs = ${ms}; the entries are counted as failed.`,
  );
}

export function abandonedError(count: number): KitError {
  return new KitError(
    'KIT_ERR_AUDIT_FLUSH_TIMEOUT',
    `The audit flush on shutdown ran out of time; ${count} entr${count === 1 ? 'y' : 'ies'} not yet written ${count === 1 ? 'is' : 'are'} counted as failed.`,
  );
}

/** A `flush()` caller: resolved once `target` records are done. */
export interface FlushWaiter {
  readonly target: number;
  readonly resolve: () => void;
}

/**
 * The logging sink's writer. Each entry is formatted in the turn of the event loop in which its
 * response completed, straight from the record (no plain-entry copy, no promise), and the turn's
 * lines are joined at its end (`setImmediate`).
 *
 * - Synchronous mode (`hold` undefined): the turn's lines reach the logger's destination at the
 *   end of that turn. Nothing is queued past the turn, nothing is dropped.
 * - Asynchronous mode: the lines are held as text, not as records, and handed to the destination
 *   once `batchSize` entries are held or `flushIntervalMs` after the first of them. What this
 *   saves is the destination's cost per write, which does not depend on how much is written:
 *   pino's sonic-boom measures its whole pending buffer again on each write and, when idle, starts
 *   a file write on a libuv thread for each (docs/decisions.md, "asyncWrite and the logging sink").
 *   Holding the records instead, as Kit once did, cost more than it saved: records kept across a
 *   young-generation collection drag their request's headers into the old generation; text does
 *   not refer to anything.
 *
 * Why not one write per entry even in synchronous mode: an entry written on its own cost 6.4 µs
 * of process CPU, one written in a batch of 100 3.7 µs (`npm run bench:lines`, Node 20).
 */
export class DirectLogWriter implements AuditWriter {
  #pending: AuditRecord[] = [];
  #scheduled = false;
  /** Asynchronous mode: lines formatted, not yet handed to the destination, and how many entries. */
  #held = '';
  #heldCount = 0;
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** Removes the `beforeExit` listener that writes held lines when the event loop runs dry. */
  readonly #stopDrained: (() => void) | undefined;

  constructor(
    private readonly sink: LoggingAuditSink,
    private readonly counters: AuditCounters,
    private readonly report: AuditFailureReporter,
    private readonly timeoutMs: number,
    private readonly hold?: Pick<WriterSettings, 'batchSize' | 'flushIntervalMs'>,
  ) {
    // The interval's timer is unref'd: a process whose loop runs dry (a script that never closes
    // its app) would otherwise end with lines held, where pino writes out its own buffer.
    this.#stopDrained = hold === undefined ? undefined : onLoopDrained(this.#release);
  }

  /** Entries accepted and not yet handed to the logger (asynchronous mode holds up to `batchSize`). */
  get queueDepth(): number {
    return this.#pending.length + this.#heldCount;
  }

  accept(record: AuditRecord): void {
    this.counters.enqueued++;
    // Below the logger's level: nothing to write, nothing to hold until the end of the turn.
    if (!this.sink.isEnabledFor(record.statusCode)) {
      this.counters.written++;
      return;
    }
    this.#pending.push(record);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#write);
    }
  }

  readonly #write = (): void => {
    this.#scheduled = false;
    const records = this.#pending;
    const count = records.length;
    if (count === 0) return;
    this.#pending = [];
    const hold = this.hold;
    let text: string | undefined;
    try {
      if (hold !== undefined) text = linesOf(this.sink, records, 0, count);
      if (hold === undefined || text === undefined) {
        // `undefined` with `hold` set: something now subscribes to pino's asJson channel, so pino
        // writes each line itself from here on. Lines held from before go first, in order; they
        // were formatted before the subscriber came and are written as they were formatted.
        if (hold !== undefined) this.#release();
        this.sink.writeMany(records, 0, count);
        this.counters.written += count;
        return;
      }
      this.#held += text;
      this.#heldCount += count;
    } catch (err) {
      this.counters.failed += count;
      this.report(err);
      return;
    }
    if (this.#heldCount >= hold.batchSize) this.#release();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(this.#release, hold.flushIntervalMs);
      this.#timer.unref();
    }
  };

  /** Hands the held lines to the destination. */
  readonly #release = (): void => {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    const count = this.#heldCount;
    if (count === 0) return;
    const text = this.#held;
    this.#held = '';
    this.#heldCount = 0;
    try {
      if (text.length > 0) writeLines(this.sink, text);
      this.counters.written += count;
    } catch (err) {
      this.counters.failed += count;
      this.report(err);
    }
  };

  /** Writes what this turn and the asynchronous mode hold, then flushes pino's destination. */
  flush(): Promise<void> {
    this.#write();
    this.#release();
    return this.sink.flush(this.timeoutMs);
  }

  close(): Promise<void> {
    this.#stopDrained?.();
    return this.flush();
  }

  /**
   * Held lines are handed to the destination at once, which cannot wait on anything: entries
   * handed to the logger are written as far as Kit can tell, so there is nothing to give up.
   */
  abandon(): number {
    this.#write();
    this.#release();
    return 0;
  }
}

/**
 * Synchronous mode with a custom sink: `writeAsync` is called as soon as the response has
 * completed and its promise is watched, never awaited by the request. Writes still pending are
 * bounded by the queue capacity: past 4096 unsettled writes (a sink that hangs) new entries are
 * dropped, so a stuck sink cannot grow memory without limit.
 */
export class SinkWriter implements AuditWriter {
  readonly queueDepth = 0;
  #pending = 0;
  #started = 0;
  #settledTotal = 0;
  #idle: FlushWaiter[] = [];
  #abandoned = false;
  readonly #abort = new AbortController();

  constructor(
    private readonly sink: IAuditSink,
    private readonly counters: AuditCounters,
    private readonly report: AuditFailureReporter,
    private readonly settings: WriterSettings,
  ) {}

  // Bound once: no closure per request.
  readonly #ok = (): void => {
    if (this.#abandoned) return; // already counted failed
    this.counters.written++;
    this.#settled();
  };

  readonly #fail = (err: unknown): void => {
    if (this.#abandoned) return;
    this.counters.failed++;
    this.report(err);
    this.#settled();
  };

  #settled(): void {
    this.#pending--;
    this.#settledTotal++;
    if (this.#idle.length === 0) return;
    const still: FlushWaiter[] = [];
    for (const waiter of this.#idle) {
      if (this.#settledTotal >= waiter.target) waiter.resolve();
      else still.push(waiter);
    }
    this.#idle = still;
  }

  accept(record: AuditRecord): void {
    if (this.#pending >= AUDIT_QUEUE_CAPACITY) {
      this.counters.dropped++;
      return;
    }
    this.counters.enqueued++;
    this.#pending++;
    this.#started++;
    let result: unknown;
    try {
      result = this.sink.writeAsync(record.toEntry(), this.#abort.signal);
    } catch (err) {
      this.#fail(err);
      return;
    }
    if (isThenable(result)) result.then(this.#ok, this.#fail);
    else this.#ok();
  }

  /**
   * Waits until as many writes have settled as had been started at the call (writes settle in
   * any order), at most `writeTimeoutMs`.
   */
  flush(): Promise<void> {
    const target = this.#started;
    if (this.#settledTotal >= target) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.settings.writeTimeoutMs);
      timer.unref();
      this.#idle.push({
        target,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  async close(): Promise<void> {
    await this.flush();
    // Whatever is still pending is told to give up.
    if (this.#pending > 0)
      this.#abort.abort(timeoutError(this.settings.writeTimeoutMs, this.#pending));
  }

  abandon(): number {
    const left = this.#abandoned ? 0 : this.#pending;
    this.#abandoned = true;
    this.counters.failed += left;
    this.#pending = 0;
    for (const waiter of this.#idle) waiter.resolve();
    this.#idle = [];
    if (left > 0) this.#abort.abort(abandonedError(left));
    return left;
  }
}

/** The counters and the queue depth as `app.kit.audit.stats()` reports them. */
export function snapshot(counters: AuditCounters, writer: AuditWriter | undefined): AuditStats {
  return {
    enqueued: counters.enqueued,
    written: counters.written,
    dropped: counters.dropped,
    failed: counters.failed,
    queueDepth: writer?.queueDepth ?? 0,
  };
}
