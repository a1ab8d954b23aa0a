// Getting what a logger's destination still holds written before the process ends.
//
// `logger.flush(cb)` is not enough for pino's own asynchronous destination (sonic-boom): without a
// `minLength` it calls back at once, while its writes may still be running or waiting to be
// retried. A process killed by a signal then loses those lines, and a process that exits loses
// worse: pino's `exit` handler calls `flushSync()`, which writes the buffered lines while the write
// in flight is unfinished. On a pipe (stdout read by a log shipper or a container runtime;
// non-blocking in Node) that write is often partial, so the line it carries is cut where the pipe
// was full and the next line follows it (`log-exit-flush.test.ts`: every round without the wait).
//
// So Kit waits for the destination to empty (sonic-boom's `drain`) and then writes the rest
// synchronously. The wait is long because sonic-boom is slow exactly here: when the pipe is full
// it retries after 100 ms, whatever the reader does, so a backlog ships at about one pipe buffer
// (64 KiB) per 100 ms, and `health-shutdown-load.test.ts` finds megabytes of audit lines behind at
// SIGTERM, seconds to write. The wait therefore ends when no write completed for `stallMs`, or at
// `maxMs`. Past either a synchronous write would tear the line in flight, so Kit leaves the
// destination as it is (pino's own exit handler then does what it does).
import { pinoDestinationOf, sonicBoomWriting } from '../internals/index.js';

interface Destination {
  flushSync?: () => void;
  on?: (event: string, listener: () => void) => unknown;
  off?: (event: string, listener: () => void) => unknown;
}

/** How long the destination may go without completing a write before the exit flush stops waiting. */
const EXIT_FLUSH_STALL_MS = 1000;

/**
 * Writes what `logger` buffers before the process ends, in at most `maxMs`: pino's own
 * destination by waiting for it to empty while it makes progress and then `flushSync()`, any
 * other (a transport, a custom stream) through `logger.flush(cb)`.
 */
export async function flushLoggerForExit(
  logger: object,
  maxMs: number,
  stallMs = EXIT_FLUSH_STALL_MS,
): Promise<void> {
  const stream = pinoDestinationOf(logger) as Destination | undefined;
  if (typeof stream?.flushSync !== 'function') return flushThroughLogger(logger, maxMs);
  if (sonicBoomWriting(stream) === true && typeof stream.on === 'function') {
    await drained(stream, maxMs, Math.min(stallMs, maxMs));
    if (sonicBoomWriting(stream) === true) return;
  }
  try {
    stream.flushSync();
  } catch {
    // not open yet, or already destroyed: nothing more Kit can do
  }
}

/** Resolves on `drain`, after `stallMs` without a completed write, or after `maxMs`. */
function drained(stream: Destination, maxMs: number, stallMs: number): Promise<void> {
  return new Promise((resolve) => {
    let stall: NodeJS.Timeout | undefined;
    const done = (): void => {
      clearTimeout(end);
      clearTimeout(stall);
      stream.off?.('drain', done);
      stream.off?.('write', progress);
      resolve();
    };
    const progress = (): void => {
      clearTimeout(stall);
      stall = setTimeout(done, stallMs);
    };
    const end = setTimeout(done, maxMs);
    stream.on?.('drain', done);
    stream.on?.('write', progress);
    progress();
  });
}

function flushThroughLogger(logger: object, maxMs: number): Promise<void> {
  const flush = (logger as { flush?: (cb?: (err?: Error) => void) => void }).flush;
  if (typeof flush !== 'function') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, maxMs);
    try {
      flush.call(logger, () => {
        clearTimeout(timer);
        resolve();
      });
    } catch {
      clearTimeout(timer);
      resolve(); // exit without the flush rather than not at all
    }
  });
}
