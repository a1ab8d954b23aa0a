import { constants } from 'node:os';
import { invalidOption } from '../shared/errors.js';

/** Default of `GracefulShutdownOptions.drainTimeoutMs`, also used by `app.kit.shutdown()` without configuration. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/** Default of `GracefulShutdownOptions.shutdownDelayMs` when `NODE_ENV === 'production'`; 0 otherwise. */
export const PRODUCTION_SHUTDOWN_DELAY_MS = 5000;

/**
 * Graceful shutdown settings, given to the action of `opt.configureGracefulShutdown(action)`.
 *
 * @example
 * ```ts
 * addKit(app, (opt) => opt.configureGracefulShutdown((g) => { g.shutdownDelayMs = 10_000; }));
 * ```
 */
export class GracefulShutdownOptions {
  /** Signals that start the shutdown. A second signal exits at once (code 128 + signal number). */
  signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
  /**
   * How long requests keep being served, with `/healthz` at 503, before the server closes.
   * Default 5000 when `NODE_ENV === 'production'`, else 0: outside production no load balancer
   * needs the time, and a watcher restarting the process (`tsx watch`, `node --watch`) should not
   * wait for it.
   */
  shutdownDelayMs = process.env.NODE_ENV === 'production' ? PRODUCTION_SHUTDOWN_DELAY_MS : 0;
  /**
   * How long `app.close()` may take: in-flight requests draining, then the `flush` and `release`
   * steps (the audit flush among them; docs/lifecycle.md). Past it the remaining connections are cut and the process exits 1.
   */
  drainTimeoutMs = DEFAULT_DRAIN_TIMEOUT_MS;
}

/** Throws `KIT_ERR_INVALID_OPTION` naming the first shutdown option that is out of range. */
export function validateGracefulShutdownOptions(g: GracefulShutdownOptions): void {
  // SIGKILL and SIGSTOP cannot be caught; an unknown name would be an ordinary event that never fires.
  const catchable = (s: unknown): boolean =>
    typeof s === 'string' && s in constants.signals && s !== 'SIGKILL' && s !== 'SIGSTOP';
  if (!Array.isArray(g.signals) || g.signals.length === 0 || !g.signals.every(catchable)) {
    throw invalidOption(
      'gracefulShutdown.signals',
      g.signals,
      'a non-empty array of catchable signal names such as "SIGTERM"',
    );
  }
  for (const key of ['shutdownDelayMs', 'drainTimeoutMs'] as const) {
    if (!Number.isFinite(g[key]) || g[key] < 0 || g[key] > 2_147_483_647) {
      throw invalidOption(
        `gracefulShutdown.${key}`,
        g[key],
        'a number of milliseconds from 0 to 2147483647',
      );
    }
  }
}
