import type { FastifyInstance } from 'fastify';
import { KitError } from '../shared/errors.js';
import type { CheckOutcome } from '../health/runner.js';
import type { MetricsOptions, PrometheusRegistry } from './options.js';
import { defineKitMetrics, loadPromClient, type AuditSource } from './prometheus.js';
import { defineRequestMetric, requestObserver } from './requests.js';

/** What `useKit` does with metrics: the route first (before its first await), the metrics later. */
interface KitMetricsSetup {
  /** Defines the metrics; resolves with the observer for the health runner. */
  start(audit: AuditSource | undefined): Promise<(outcome: CheckOutcome) => void>;
}

/**
 * Maps `GET {metrics.path}` (Prometheus text format, left out of the OpenAPI document), adds the
 * request metrics' `onResponse` hook at the root (so it sees every route, the host's included) and
 * starts loading prom-client. The route answers 503, and the hook observes nothing, until `start`
 * has defined the metrics.
 */
export function registerMetrics(
  app: FastifyInstance,
  options: Readonly<MetricsOptions>,
): KitMetricsSetup {
  const loading = loadPromClient();
  // Awaited by start(); a failure before then must not be an unhandled rejection.
  loading.catch(() => undefined);
  let registry: PrometheusRegistry | undefined;
  let requests: ReturnType<typeof defineRequestMetric> | undefined;
  if (options.requestMetrics)
    app.addHook(
      'onResponse',
      requestObserver(() => requests),
    );
  if (options.path !== false) {
    app.get(options.path, { schema: { hide: true } }, async function kitMetrics(_request, reply) {
      if (registry === undefined)
        return reply
          .code(503)
          .header('retry-after', '1')
          .type('text/plain; charset=utf-8')
          .send('metrics are not ready');
      const text = await registry.metrics();
      return reply.header('cache-control', 'no-store').type(registry.contentType).send(text);
    });
  }
  return {
    async start(audit) {
      const prom = await loading;
      const target = options.registry ?? (new prom.Registry() as unknown as PrometheusRegistry);
      const observe = defineKitMetrics(prom, target, options.prefix, audit);
      if (options.requestMetrics) {
        try {
          requests = defineRequestMetric(target, options.prefix, options.requestDurationBuckets);
        } catch (err) {
          throw new KitError(
            'KIT_ERR_INVALID_OPTION',
            `Invalid Kit option metrics.prefix = ${JSON.stringify(options.prefix)}: ${(err as Error).message}. Give each Kit app sharing a registry its own prefix.`,
            { cause: err },
          );
        }
      }
      registry = target;
      return observe;
    },
  };
}
