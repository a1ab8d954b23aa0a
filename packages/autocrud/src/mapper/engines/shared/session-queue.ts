// The embedded engines have one session each (PGlite's single backend, SQLite's one connection):
// callers take turns, first come first served, and a caller that waits longer than
// acquireTimeoutMs gives up with DatabaseBusyError instead of waiting without bound.
import { DatabaseBusyError } from '../../errors.js';

interface Waiter {
  readonly grant: () => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * One holder at a time, the others queued in order. `acquire` resolves when the caller holds the
 * session, or rejects with `DatabaseBusyError` after the wait allowed (or when `signal` aborts): it
 * then leaves the queue, and nothing runs for it later.
 */
export class SessionQueue {
  #held = false;
  readonly #waiting: Waiter[] = [];

  constructor(private readonly timeoutMs: number) {}

  /** True while someone holds the session. */
  get held(): boolean {
    return this.#held;
  }

  /**
   * Resolves once the caller holds the session; the caller must `release()` it exactly once.
   * `waitMs` (default: acquireTimeoutMs) bounds the wait; `DatabaseBusyError` names acquireTimeoutMs.
   */
  acquire(waitMs = this.timeoutMs, signal?: AbortSignal): Promise<void> {
    // Free: taken at once, without a timer (the common case on the request path).
    if (!this.#held) {
      this.#held = true;
      return Promise.resolve();
    }
    if (signal?.aborted || waitMs <= 0)
      return Promise.reject(new DatabaseBusyError(this.timeoutMs));
    return new Promise<void>((resolve, reject) => {
      const leave = () => {
        clearTimeout(waiter.timer);
        signal?.removeEventListener('abort', leave);
        const at = this.#waiting.indexOf(waiter);
        if (at !== -1) this.#waiting.splice(at, 1);
        reject(new DatabaseBusyError(this.timeoutMs));
      };
      const waiter: Waiter = {
        grant: () => {
          clearTimeout(waiter.timer);
          signal?.removeEventListener('abort', leave);
          resolve();
        },
        timer: setTimeout(leave, waitMs),
      };
      signal?.addEventListener('abort', leave, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /** Hands the session to the next waiter, or frees it. */
  release(): void {
    const next = this.#waiting.shift();
    if (next) next.grant();
    else this.#held = false;
  }
}
