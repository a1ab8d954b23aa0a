// The asynchronous audit writer: a bounded ring of records, drained in batches off the request.
import type { AuditLogEntry, IAuditSink } from './entry.js';
import { AUDIT_QUEUE_CAPACITY } from './options.js';
import type { AuditRecord } from './record.js';
import { RecordRing } from './ring.js';
import {
  abandonedError,
  timeoutError,
  type AuditCounters,
  type AuditFailureReporter,
  type AuditWriter,
  type FlushWaiter,
  type WriterSettings,
} from './writer.js';

/** One call into the sink. */
interface SinkCall {
  readonly size: number;
  /** Entries of this call already counted as written or failed. */
  handled: number;
  timedOut: boolean;
  readonly controller: AbortController;
  timer: NodeJS.Timeout | undefined;
}

/** A call that timed out may stay unsettled; at most this many calls may be unsettled at once. */
const MAX_UNSETTLED_CALLS = 2;

/**
 * Asynchronous mode (docs/audit.md, "Synchronous and asynchronous writing"). The hooks push records into a fixed ring of
 * `AUDIT_QUEUE_CAPACITY` (4096) slots; when it is full the new record is dropped and counted,
 * nothing waits. A background writer takes up to `batchSize` records as soon as that many are
 * queued, or whatever is queued once `flushIntervalMs` has passed since the first of them, and
 * hands them to the sink: `writeBatchAsync` when the sink has it, else `writeAsync` entry by
 * entry in order. One batch is in flight at a time.
 *
 * Hung sinks: each call gets `writeTimeoutMs`. When it runs out, the call's `AbortSignal` is
 * aborted, its unwritten entries are counted `failed`, and the writer moves on to the next batch.
 * A call that ignores the signal stays unsettled; once two calls are unsettled the writer stops
 * taking batches until one settles. The queue then fills and new entries are dropped, so memory
 * is bounded by the queue plus two batches whatever the sink does.
 *
 * Custom sinks only: the logging sink is written at the end of each turn in both modes
 * (`DirectLogWriter`).
 */
export class BatchWriter implements AuditWriter {
  readonly #ring = new RecordRing(AUDIT_QUEUE_CAPACITY);
  #current: SinkCall | undefined;
  #unsettled = 0;
  #timer: NodeJS.Timeout | undefined;
  #timerArmed = false;
  /** The flush interval elapsed (or a flush was asked for): send partial batches until the queue is empty. */
  #due = false;
  #scheduled = false;
  #closed = false;
  /** Records pushed, and records whose write settled, failed, timed out or was discarded. */
  #seqIn = 0;
  #seqDone = 0;
  #waiters: FlushWaiter[] = [];

  constructor(
    private readonly sink: IAuditSink,
    private readonly counters: AuditCounters,
    private readonly report: AuditFailureReporter,
    private readonly settings: WriterSettings,
  ) {}

  get queueDepth(): number {
    return this.#ring.size;
  }

  accept(record: AuditRecord): void {
    if (!this.#ring.push(record)) {
      this.counters.dropped++;
      return;
    }
    this.counters.enqueued++;
    this.#seqIn++;
    if (this.#closed) this.#due = true;
    if (this.#ring.size >= this.settings.batchSize || this.#due) {
      if (this.#current === undefined && this.#unsettled < MAX_UNSETTLED_CALLS) this.#schedule();
    } else if (!this.#timerArmed) {
      this.#arm();
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
    if (this.#ring.size === 0) return;
    this.#due = true;
    this.#pump();
  };

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#pumpNow);
  }

  readonly #pumpNow = (): void => {
    this.#scheduled = false;
    this.#pump();
  };

  #pump(): void {
    // flush() callers whose entries are done resolve now, even while more keep arriving; when the
    // writer is stalled on a hung sink, all of them do: they must not wait forever.
    this.#wake();
    if (this.#current !== undefined) return; // its settlement pumps again
    if (this.#unsettled >= MAX_UNSETTLED_CALLS) return;
    const size = this.#ring.size;
    if (size === 0) {
      this.#due = false;
      return;
    }
    const draining = this.#waiters.length > 0;
    if (size < this.settings.batchSize && !this.#due && !draining) {
      if (!this.#timerArmed) this.#arm();
      return;
    }
    const batch = this.#ring.take(this.settings.batchSize);
    if (this.#ring.size === 0) this.#due = false;
    this.#send(batch);
  }

  #send(records: readonly AuditRecord[]): void {
    const entries = records.map((r) => r.toEntry());
    const call: SinkCall = {
      size: entries.length,
      handled: 0,
      timedOut: false,
      controller: new AbortController(),
      timer: undefined,
    };
    this.#current = call;
    this.#unsettled++;
    const batchWrite = typeof this.sink.writeBatchAsync === 'function';
    let result: unknown;
    try {
      result = batchWrite
        ? this.sink.writeBatchAsync?.(entries, call.controller.signal)
        : this.#writeEach(entries, call);
    } catch (err) {
      result = Promise.reject(err);
    }
    call.timer = setTimeout(this.#onCallTimeout, this.settings.writeTimeoutMs, call);
    call.timer.unref();
    Promise.resolve(result).then(
      () => this.#settle(call, batchWrite, undefined, true),
      (err: unknown) => this.#settle(call, batchWrite, err, false),
    );
  }

  /** A sink without `writeBatchAsync`: one entry after the other, in order, each counted. */
  async #writeEach(entries: readonly AuditLogEntry[], call: SinkCall): Promise<void> {
    for (const entry of entries) {
      if (call.timedOut) return;
      try {
        await this.sink.writeAsync(entry, call.controller.signal);
        if (call.timedOut) return;
        this.counters.written++;
      } catch (err) {
        if (call.timedOut) return;
        this.counters.failed++;
        this.report(err);
      }
      call.handled++;
    }
  }

  #settle(call: SinkCall, batchWrite: boolean, err: unknown, ok: boolean): void {
    this.#unsettled--;
    clearTimeout(call.timer);
    if (!call.timedOut) {
      if (batchWrite) {
        if (ok) this.counters.written += call.size;
        else {
          this.counters.failed += call.size;
          this.report(err);
        }
      }
      call.handled = call.size;
      this.#seqDone += call.size;
      this.#current = undefined;
    }
    this.#pump();
  }

  readonly #onCallTimeout = (call: SinkCall): void => {
    if (call.timedOut) return;
    call.timedOut = true;
    const err = timeoutError(this.settings.writeTimeoutMs, call.size - call.handled);
    call.controller.abort(err);
    this.counters.failed += call.size - call.handled;
    call.handled = call.size;
    this.#seqDone += call.size;
    this.report(err);
    if (this.#current === call) this.#current = undefined;
    this.#pump();
  };

  /** Resolves the flush() callers whose entries are all done, or all of them when the writer cannot progress. */
  #wake(): void {
    if (this.#waiters.length === 0) return;
    const stuck =
      this.#current === undefined &&
      (this.#unsettled >= MAX_UNSETTLED_CALLS || this.#ring.size === 0);
    const still: FlushWaiter[] = [];
    for (const waiter of this.#waiters) {
      if (stuck || this.#seqDone >= waiter.target) waiter.resolve();
      else still.push(waiter);
    }
    this.#waiters = still;
  }

  async flush(): Promise<void> {
    const target = this.#seqIn;
    if (this.#seqDone < target) {
      await new Promise<void>((resolve) => {
        this.#waiters.push({ target, resolve });
        this.#pump();
      });
    }
  }

  abandon(): number {
    let abandoned = 0;
    const call = this.#current;
    if (call !== undefined && !call.timedOut) {
      // As a timeout would: its late settlement changes no counter.
      call.timedOut = true;
      clearTimeout(call.timer);
      const left = call.size - call.handled;
      call.controller.abort(abandonedError(left));
      this.counters.failed += left;
      abandoned += left;
      call.handled = call.size;
      this.#seqDone += call.size;
      this.#current = undefined;
    }
    const left = this.#ring.take(this.#ring.size).length;
    this.counters.failed += left;
    this.#seqDone += left;
    abandoned += left;
    this.#closed = true;
    this.#due = false;
    for (const waiter of this.#waiters) waiter.resolve();
    this.#waiters = [];
    return abandoned;
  }

  async close(flush: boolean): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerArmed = false;
    if (flush) await this.flush();
    // Left over: the writer is stalled on a hung sink, or flushing was not asked for.
    const left = this.#ring.take(this.#ring.size).length;
    if (left > 0) {
      if (flush) this.counters.failed += left;
      else this.counters.dropped += left;
      this.#seqDone += left;
    }
    this.#wake();
  }
}
