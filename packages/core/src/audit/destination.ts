// Getting a pino destination's buffered lines onto disk before the process dies of a signal.
//
// `logger.flush(cb)` is not enough: pino's asynchronous destination (sonic-boom) calls back at
// once when it has no `minLength`, while its last `fs.write` is still running in libuv's thread
// pool, and a process killed by a signal then loses those lines (checked here: 0 of 4 written).
// pino itself empties its destinations with `flushSync()` on the process `exit` event, which a
// death by signal never emits. So Kit does what that handler would: waits, bounded, for the write
// in flight (sonic-boom signals it with `drain`), then writes the rest synchronously.
import { pinoDestinationOf, sonicBoomWriting } from '../internals/index.js';

interface Destination {
  flushSync?: () => void;
  once?: (event: string, listener: () => void) => unknown;
  off?: (event: string, listener: () => void) => unknown;
}

/** Waits for the destination's write in flight (at most `timeoutMs`), then flushes it synchronously. */
export async function flushDestinationForExit(logger: object, timeoutMs: number): Promise<void> {
  const stream = pinoDestinationOf(logger) as Destination | undefined;
  if (typeof stream?.flushSync !== 'function') return;
  if (sonicBoomWriting(stream) === true && typeof stream.once === 'function') {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        stream.off?.('drain', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      stream.once?.('drain', done);
    });
  }
  try {
    stream.flushSync();
  } catch {
    // not open yet, or already destroyed: nothing more Kit can do
  }
}
