import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { fastifyRouteContext } from '../internals/index.js';
import { routePatternOf } from '../shared/route-pattern.js';
import { FastHistogram, type HistogramCell } from './histogram.js';
import type { PrometheusRegistry } from './options.js';

/**
 * Per-route request metrics: one histogram, `{prefix}http_request_duration_seconds`, labelled by
 * method, route pattern and status class; its `_count` series is the request count. Labels come
 * only from bounded sets: the route pattern Fastify matched (never the URL), `(unmatched)` for
 * every request no route matched, the standard methods (anything else is `OTHER`), five classes.
 */
const UNMATCHED_ROUTE = '(unmatched)';

const METHODS = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'CONNECT',
  'QUERY',
]);
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

type Labels = 'method' | 'route' | 'status_class';

/** Defines the request histogram in `target` (throws when the name is taken there). */
export function defineRequestMetric(
  target: PrometheusRegistry,
  prefix: string,
  buckets: readonly number[],
): FastHistogram<Labels> {
  const histogram = new FastHistogram<Labels>(
    `${prefix}http_request_duration_seconds`,
    'Requests by method, route pattern and status class, and how long they took (from the request to the end of the response). Its _count is the request count.',
    ['method', 'route', 'status_class'],
    buckets,
  );
  const registry = target as unknown as {
    getSingleMetric?: (name: string) => unknown;
    registerMetric(metric: unknown): void;
  };
  // prom-client's registerMetric replaces a metric of the same name without a word: refuse, as its own metrics do.
  if (registry.getSingleMetric?.(histogram.name) !== undefined)
    throw new Error(`A metric with the name ${histogram.name} has already been registered.`);
  registry.registerMetric(histogram);
  return histogram;
}

/**
 * The `onResponse` hook that observes each request. `histogram` is read at each call: the hook
 * is added before the metrics exist (useKit adds routes and hooks before its first await), and
 * observes nothing until then.
 */
export function requestObserver(histogram: () => FastHistogram<Labels> | undefined) {
  // Per route context (one object per route, read from Fastify's private state under its guard):
  // the cells by method and status class. Without it each request brings a new context from the
  // public routeOptions, so the cache misses and each request finds its cell by its labels.
  const routeContext = fastifyRouteContext();
  const cells = new WeakMap<object, Map<string, HistogramCell>>();
  return function kitRequestMetrics(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    const h = histogram();
    if (h !== undefined) {
      const context = routeContext(request) ?? { config: request.routeOptions.config };
      const status = reply.statusCode;
      const cls = CLASSES[Math.floor(status / 100) - 1] ?? '5xx';
      const method = METHODS.has(request.method) ? request.method : 'OTHER';
      const key = method + cls;
      let byKey = cells.get(context);
      if (byKey === undefined) cells.set(context, (byKey = new Map()));
      let cell = byKey.get(key);
      if (cell === undefined) {
        const route = request.is404
          ? UNMATCHED_ROUTE
          : (routePatternOf(context.config) ?? UNMATCHED_ROUTE);
        cell = h.cell([method, route, cls]);
        byKey.set(key, cell);
      }
      cell.observe(reply.elapsedTime / 1000);
    }
    done();
  };
}
