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
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** Throws `KIT_ERR_INVALID_OPTION` naming the first metrics option that is out of range (the path is checked with the other paths). */
export function validateMetricsOptions(m: MetricsOptions): void {
  if (typeof m.prefix !== 'string' || !METRIC_NAME.test(`${m.prefix}x`)) {
    throw invalidOption('metrics.prefix', m.prefix, 'a Prometheus metric name prefix such as "kit_" (letters, digits, "_" and ":")');
  }
  const r = m.registry as Partial<Record<keyof PrometheusRegistry, unknown>> | undefined;
  if (r !== undefined && (typeof r !== 'object' || r === null || typeof r.metrics !== 'function' || typeof r.registerMetric !== 'function')) {
    throw invalidOption('metrics.registry', r, 'a prom-client Registry (such as its default `register`)');
  }
}
