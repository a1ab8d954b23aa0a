// The one way a test waits for something to become true: a probe tried again at an interval until
// it yields a value or the time is up. Time is read from `performance.now()` and the pause is a
// real timer, so a test that mocks `Date` (node:test's mock.timers) still waits in real time.
import { setTimeout as sleep } from 'node:timers/promises';

/** How `until` waits; a plain number is the timeout. */
export interface UntilOptions {
  /** How long to keep trying before the wait fails. Default 5000 ms. */
  readonly timeoutMs?: number;
  /** The pause between two tries. Default 20 ms. */
  readonly intervalMs?: number;
  /**
   * Read once when the wait fails and appended to its message: the state the test saw instead
   * (a count, a status, a child's stderr), so a failure says more than "timed out".
   */
  readonly diagnostic?: () => string | Promise<string>;
  /**
   * A probe that throws counts as "not yet" (a server still starting refuses connections); its
   * last error goes into the failure message. Default false: the error fails the wait at once.
   */
  readonly retryErrors?: boolean;
}

/** What a wait reached: the probe's value and how long it took. */
export interface Reached<T> {
  readonly value: T;
  /** Milliseconds from the start of the wait to the try that succeeded, rounded. */
  readonly ms: number;
}

/** The values a probe returns while the awaited thing has not happened yet. */
export type NotYet = false | undefined | null;

/**
 * Tries `probe` until it returns something other than `false`, `undefined` or `null`, and resolves
 * with that value and the elapsed time; throws `timed out after N ms waiting for <what>` (plus the
 * diagnostic, or the probe's last error) once `timeoutMs` has passed.
 *
 * @example
 * ```ts
 * await until('the check healthy again', async () => (await check(app)).status === 'healthy', 10_000);
 * const { ms } = await until('the replica promoted', () => promoted, { timeoutMs: 20_000, intervalMs: 50 });
 * const { value: leader } = await until('a leader', async () => hosts.find((h) => h.leading), {
 *   timeoutMs: 15_000,
 *   retryErrors: true,
 *   diagnostic: () => `hosts: ${hosts.map((h) => h.state).join(', ')}`,
 * });
 * ```
 */
export async function until<T>(
  what: string,
  probe: () => T | Promise<T>,
  options: number | UntilOptions = {},
): Promise<Reached<Exclude<T, NotYet>>> {
  const {
    timeoutMs = 5000,
    intervalMs = 20,
    diagnostic,
    retryErrors = false,
  } = typeof options === 'number' ? { timeoutMs: options } : options;
  const started = performance.now();
  let lastError: unknown;
  for (;;) {
    let value: T | undefined;
    try {
      value = await probe();
    } catch (err) {
      if (!retryErrors) throw err;
      lastError = err;
      value = undefined;
    }
    if (value !== false && value !== undefined && value !== null)
      return { value: value as Exclude<T, NotYet>, ms: Math.round(performance.now() - started) };
    if (performance.now() - started >= timeoutMs) {
      const seen = diagnostic
        ? `: ${await diagnostic()}`
        : lastError === undefined
          ? ''
          : `: last error ${lastError instanceof Error ? lastError.message : String(lastError)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${seen}`);
    }
    await sleep(intervalMs);
  }
}
