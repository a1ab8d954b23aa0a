import { KitError } from '../shared/errors.js';
import { CONTRIBUTORS, own, rememberName, type Metadata } from './metadata.js';
import type { RouteContributor } from './types.js';

export type { RouteContributor, RouteContributorContext } from './types.js';

/**
 * Attaches a {@link RouteContributor} to a class, which makes the class an endpoint class even
 * without `addRoutes`. This is the seam for plugins whose decorators generate routes; core
 * knows nothing of the plugin. Repeatable; contributors run in
 * declaration order. A hand-written route of the same method and path (parameter names and
 * `{id}`/`:id` spelling aside) wins: the contributed one is skipped, and its `onRequest` hooks
 * guard the hand-written one (unless that sets `config: { kitPublic: true }`).
 *
 * @example
 * ```ts
 * function Pingable() {
 *   return KitRouteContributor(() => [{ method: 'GET', url: 'ping', handler: async () => 'pong' }]);
 * }
 *
 * @Pingable()
 * export class StatusEndpoint {}          // GET /api/status/ping, operationId status_GET_ping
 * ```
 */
export function KitRouteContributor(contributor: RouteContributor) {
  if (typeof contributor !== 'function') {
    throw new KitError(
      'KIT_ERR_INVALID_ROUTE',
      'KitRouteContributor(contributor): the contributor must be a function (group, context) => routes.',
    );
  }
  return (
    _cls: abstract new (...args: never[]) => unknown,
    context: ClassDecoratorContext,
  ): void => {
    const metadata = context.metadata as Metadata;
    // Class decorators apply bottom-up; prepending keeps the declaration order.
    metadata[CONTRIBUTORS] = [
      contributor,
      ...(own<RouteContributor[]>(metadata, CONTRIBUTORS) ?? []),
    ];
    rememberName(context);
  };
}

/**
 * The key under which a route counts as "the same route" within a group: method and relative
 * path with parameter names dropped (`GET items/:id` and `GET items/{itemId}` collide in
 * Fastify's router).
 */
export function routeKey(method: string, relativePath: string): string {
  return `${method.toUpperCase()} ${relativePath.replace(/:[A-Za-z_$][\w$]*/g, ':')}`;
}
