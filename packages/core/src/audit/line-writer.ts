// Writing audit entries through the logging sink, in both modes.
import { formatLines, writeLines, type LoggingAuditSink } from './sinks.js';
import type { AuditCounters, AuditFailureReporter, AuditWriter } from './writer.js';
import type { AuditRecord } from './record.js';

/** Settings of a `LineWriter`, from `AuditTrailOptions`. */
export interface LineWriterSettings {
  /** Asynchronous mode: lines wait until this many are ready (or `flushIntervalMs` has passed). */
  readonly asyncWrite: boolean;
  readonly batchSize: number;
  readonly flushIntervalMs: number;
  readonly writeTimeoutMs: number;
}

/**
 * The logging sink, synchronous or asynchronous. The records whose responses complete in one turn
 * of the event loop are formatted together at the end of that turn (`setImmediate`), straight
 * from the record (no plain-entry copy, no promise), whatever the mode; the modes differ only in
 * when the lines reach the logger's destination:
 *
 * - synchronous: at once, one write per turn;
 * - asynchronous: once `batchSize` entries are ready, or `flushIntervalMs` after the first of
 *   them, in one write.
 *
 * So the asynchronous mode does the synchronous mode's work and fewer destination writes: it costs
 * a request no more, and a record never outlives its turn (an earlier writer queued the records
 * and formatted them a batch later, which cost the request more than the synchronous mode: the
 * measurements are in docs/decisions.md). What waits in the asynchronous mode is text, at most
 * `batchSize` lines plus one turn's.
 *
 * pino's own destination (sonic-boom) re-measures its pending buffer on every write: an entry
 * written on its own cost 6.4 µs of process CPU, one written in a batch of 100 3.7 µs
 * (`npm run bench:lines`, Node 20). When the logger needs pino's own call (see `pino-lines.ts`),
 * each entry is logged at the end of its turn in both modes.
 */
export class LineWriter implements AuditWriter {
  #records: AuditRecord[] = [];
  #scheduled = false;
  /** Asynchronous mode: the lines ready and not yet written, and how many entries they hold. */
  #lines = '';
  #ready = 0;
  #timer: NodeJS.Timeout | undefined;
  #timerArmed = false;
  #closed = false;
  readonly #batchSize: number;

  constructor(
    private readonly sink: LoggingAuditSink,
    private readonly counters: AuditCounters,
    private readonly report: AuditFailureReporter,
    private readonly settings: LineWriterSettings,
  ) {
    this.#batchSize = settings.asyncWrite ? settings.batchSize : 1;
  }

  /** Asynchronous mode: the entries formatted or to be formatted and not yet written. */
  get queueDepth(): number {
    return this.settings.asyncWrite ? this.#ready + this.#records.length : 0;
  }

  accept(record: AuditRecord): void {
    this.counters.enqueued++;
    // Below the logger's level: nothing to write, nothing to hold until the end of the turn.
    if (!this.sink.isEnabledFor(record.statusCode)) {
      this.counters.written++;
      return;
    }
    this.#records.push(record);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#endOfTurn);
    }
  }

  readonly #endOfTurn = (): void => {
    this.#scheduled = false;
    this.#format();
    if (this.#ready >= this.#batchSize || this.#closed) this.#write();
    else if (this.#ready > 0 && !this.#timerArmed) this.#arm();
  };

  /** The records of this turn become lines (or, on pino's own path, are logged now). */
  #format(): void {
    const records = this.#records;
    if (records.length === 0) return;
    this.#records = [];
    let text: string | undefined;
    try {
      text = formatLines(this.sink, records);
      if (text === undefined) {
        this.sink.writeMany(records, 0, records.length);
        this.counters.written += records.length;
        return;
      }
    } catch (err) {
      this.counters.failed += records.length;
      this.report(err);
      return;
    }
    this.#lines += text;
    this.#ready += records.length;
  }

  /** Hands the ready lines to the logger's destination in one write. */
  #write(): void {
    const count = this.#ready;
    if (count === 0) return;
    const text = this.#lines;
    this.#lines = '';
    this.#ready = 0;
    try {
      if (text.length > 0) writeLines(this.sink, text);
      this.counters.written += count;
    } catch (err) {
      this.counters.failed += count;
      this.report(err);
    }
  }

  #arm(): void {
    this.#timerArmed = true;
    if (this.#timer === undefined) {
      this.#timer = setTimeout(this.#onTimer, this.settings.flushIntervalMs);
      // The interval must not keep a process alive that has nothing else to do.
      this.#timer.unref();
    } else {
      this.#timer.refresh();
    }
  }

  readonly #onTimer = (): void => {
    this.#timerArmed = false;
    this.#write();
  };

  /** Writes what is waiting, then flushes pino's destination. */
  flush(): Promise<void> {
    this.#format();
    this.#write();
    return this.sink.flush(this.settings.writeTimeoutMs);
  }

  /** Writes (or, asynchronous without `flush`, discards: counted dropped) what is waiting. */
  close(flush: boolean): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerArmed = false;
    if (flush || !this.settings.asyncWrite) return this.flush();
    this.counters.dropped += this.#discard();
    return Promise.resolve();
  }

  /** Asynchronous mode: what waits is counted failed and dropped. Lines already handed to the logger are its. */
  abandon(): number {
    this.#closed = true;
    if (!this.settings.asyncWrite) return 0;
    const left = this.#discard();
    this.counters.failed += left;
    return left;
  }

  #discard(): number {
    const left = this.#ready + this.#records.length;
    this.#records = [];
    this.#lines = '';
    this.#ready = 0;
    return left;
  }
}
