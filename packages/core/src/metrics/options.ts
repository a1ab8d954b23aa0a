import { invalidOption } from '../shared/errors.js';

/**
 * What Kit needs of a prom-client `Registry` (a host's own, so its `/metrics` carries Kit's
 * metrics too). Structural, so that `@kit/core`'s types do not depend on prom-client.
 *
 * @example
 * ```ts
 * import { register } from 'prom-client';
 * const registry: PrometheusRegistry = register;
 * ```
 */
export interface PrometheusRegistry {
  metrics(): Promise<string>;
  readonly contentType: string;
  registerMetric(metric: never): void;
}

/**
 * Metrics settings, given to the action of `opt.configureMetrics(action)`.
 *
 * @example
 * ```ts
 * import { register } from 'prom-client';
 * addKit(app, (opt) => opt.configureMetrics((m) => {
 *   m.registry = register;   // Kit's metrics beside the host's own
 *   m.path = false;          // the host already serves register at /metrics
 * }));
 * ```
 */
export class MetricsOptions {
  /** Path of the Prometheus text endpoint, or `false` for none (the host serves `registry` itself). */
  path: string | false = '/metrics';
  /** The prom-client registry Kit's metrics go into; default a registry of Kit's own. */
  registry: PrometheusRegistry | undefined = undefined;
  /** Prefix of every metric name. */
  prefix = 'kit_';
  /**
   * Per-route request metrics (`{prefix}http_request_duration_seconds{method,route,status_class}`);
   * `false` leaves them out (the audit and health metrics stay).
   */
  requestMetrics = true;
  /** Upper bounds (seconds) of the request duration histogram's buckets, ascending. */
  requestDurationBuckets: number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** Throws `KIT_ERR_INVALID_OPTION` naming the first metrics option that is out of range (the path is checked with the other paths). */
export function validateMetricsOptions(m: MetricsOptions): void {
  if (typeof m.prefix !== 'string' || !METRIC_NAME.test(`${m.prefix}x`)) {
    throw invalidOption(
      'metrics.prefix',
      m.prefix,
      'a Prometheus metric name prefix such as "kit_" (letters, digits, "_" and ":")',
    );
  }
  if (typeof m.requestMetrics !== 'boolean')
    throw invalidOption('metrics.requestMetrics', m.requestMetrics, 'true or false');
  const b = m.requestDurationBuckets as unknown;
  if (
    !Array.isArray(b) ||
    b.length === 0 ||
    b.some(
      (x, i) =>
        typeof x !== 'number' ||
        !Number.isFinite(x) ||
        x <= 0 ||
        (i > 0 && x <= (b[i - 1] as number)),
    )
  ) {
    throw invalidOption(
      'metrics.requestDurationBuckets',
      b,
      'a non-empty array of positive numbers of seconds in ascending order, such as [0.01, 0.1, 1]',
    );
  }
  const r = m.registry as Partial<Record<keyof PrometheusRegistry, unknown>> | undefined;
  if (
    r !== undefined &&
    (typeof r !== 'object' ||
      r === null ||
      typeof r.metrics !== 'function' ||
      typeof r.registerMetric !== 'function')
  ) {
    throw invalidOption(
      'metrics.registry',
      r,
      'a prom-client Registry (such as its default `register`)',
    );
  }
}
