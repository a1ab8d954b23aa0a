/**
 * Where a route keeps its final URL pattern when an `onRoute` hook rewrote it: Fastify computes
 * `request.routeOptions.url` (its route `config.url`) before `onRoute` hooks run, so for a route
 * whose path Kit's endpoint mapping made absolute (`'{id}'` -> `/api/orders@2/:id`) it still says
 * `/api/orders@2{id}`. The mapping stores the pattern on the route's config under this symbol (a
 * symbol, so it never shows among the host's config keys); readers such as the audit trail take
 * it before `config.url`. Not public.
 */
export const ROUTE_PATTERN = Symbol('kit.routePattern');

/** The URL pattern of a route from its Fastify config: the rewritten one when there is one. */
export function routePatternOf(
  config: { readonly url?: unknown; readonly [ROUTE_PATTERN]?: unknown } | undefined,
): string | undefined {
  const pattern = config?.[ROUTE_PATTERN] ?? config?.url;
  return typeof pattern === 'string' ? pattern : undefined;
}
