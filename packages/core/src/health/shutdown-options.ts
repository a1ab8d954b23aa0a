import { invalidOption } from '../errors.js';

/**
 * Graceful shutdown settings, given to the action of `opt.configureGracefulShutdown(action)`.
 *
 * @example
 * ```ts
 * addKit(app, (opt) => opt.configureGracefulShutdown((g) => { g.shutdownDelayMs = 10_000; }));
 * ```
 */
export class GracefulShutdownOptions {
  /** Signals that start the shutdown. A second signal exits at once. */
  signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
  /** How long requests keep being served, with `/healthz` at 503, before the server closes. */
  shutdownDelayMs = 5000;
  /** How long in-flight requests and the audit flush may take once the server closes. */
  drainTimeoutMs = 30_000;
}

/** Throws `KIT_ERR_INVALID_OPTION` naming the first shutdown option that is out of range. */
export function validateGracefulShutdownOptions(g: GracefulShutdownOptions): void {
  if (!Array.isArray(g.signals) || g.signals.length === 0 || g.signals.some((s) => typeof s !== 'string' || !/^SIG[A-Z0-9]+$/.test(s))) {
    throw invalidOption('gracefulShutdown.signals', g.signals, 'a non-empty array of signal names such as "SIGTERM"');
  }
  for (const key of ['shutdownDelayMs', 'drainTimeoutMs'] as const) {
    if (!Number.isFinite(g[key]) || g[key] < 0 || g[key] > 2_147_483_647) {
      throw invalidOption(`gracefulShutdown.${key}`, g[key], 'a number of milliseconds from 0 to 2147483647');
    }
  }
}
