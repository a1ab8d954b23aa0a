import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type * as PromClientModule from 'prom-client';
import type { Histogram, Registry } from 'prom-client';
import { routePatternOf } from '../route-pattern.js';
import type { PrometheusRegistry } from './options.js';

/**
 * Per-route request metrics: one histogram, `{prefix}http_request_duration_seconds`, labelled by
 * method, route pattern and status class; its `_count` series is the request count. Labels come
 * only from bounded sets: the route pattern Fastify matched (never the URL), `(unmatched)` for
 * every request no route matched, the standard methods (anything else is `OTHER`), five classes.
 */
export const UNMATCHED_ROUTE = '(unmatched)';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT', 'QUERY']);
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

type Labels = 'method' | 'route' | 'status_class';

/** Defines the request histogram in `target`. */
export function defineRequestMetric(prom: typeof PromClientModule, target: PrometheusRegistry, prefix: string, buckets: readonly number[]): Histogram<Labels> {
  return new prom.Histogram({
    name: `${prefix}http_request_duration_seconds`,
    help: 'Requests by method, route pattern and status class, and how long they took (from the request to the end of the response). Its _count is the request count.',
    labelNames: ['method', 'route', 'status_class'],
    buckets: [...buckets],
    registers: [target as unknown as Registry],
  });
}

type Child = Histogram.Internal<'method' | 'route' | 'status_class'>;
type RouteContext = { config?: { url?: unknown } };

// Fastify's per-route context sits on each request under this symbol: one object per route (one
// for every unmatched request), so it keys the cache of labelled children and gives the route's
// config without `request.routeOptions`, which builds a new object at each read.
let kRouteContext: symbol | null | undefined;
function routeContextOf(request: FastifyRequest): RouteContext {
  if (kRouteContext === undefined) kRouteContext = Object.getOwnPropertySymbols(request).find((s) => s.description === 'fastify.context') ?? null;
  if (kRouteContext !== null) {
    const context = (request as unknown as Record<symbol, RouteContext | undefined>)[kRouteContext];
    if (context !== undefined) return context;
  }
  return { config: request.routeOptions.config };
}

/**
 * The `onResponse` hook that observes each request. `histogram` is read at each call: the hook
 * is added before the metrics exist (useKit adds routes and hooks before its first await), and
 * observes nothing until then.
 */
export function requestObserver(histogram: () => Histogram<Labels> | undefined) {
  // Per route context: the labelled children by method and status class.
  const children = new WeakMap<object, Map<string, Child>>();
  return function kitRequestMetrics(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const h = histogram();
    if (h !== undefined) {
      const context = routeContextOf(request);
      const status = reply.statusCode;
      const cls = CLASSES[Math.floor(status / 100) - 1] ?? '5xx';
      const method = METHODS.has(request.method) ? request.method : 'OTHER';
      const key = method + cls;
      let byKey = children.get(context);
      if (byKey === undefined) children.set(context, (byKey = new Map()));
      let child = byKey.get(key);
      if (child === undefined) {
        const route = request.is404 ? UNMATCHED_ROUTE : (routePatternOf(context.config) ?? UNMATCHED_ROUTE);
        child = h.labels(method, route, cls);
        byKey.set(key, child);
      }
      child.observe(reply.elapsedTime / 1000);
    }
    done();
  };
}
