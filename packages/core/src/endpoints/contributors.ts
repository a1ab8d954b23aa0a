import type { FastifyInstance, RouteOptions } from 'fastify';
import { KitError } from '../errors.js';
import type { KitServices } from '../services.js';
import { rememberName } from './decorators.js';

// A registered symbol, like the other endpoint metadata: a class decorated through one copy of
// @kit/core (src and dist, or two versions in one tree) is still read by another.
const CONTRIBUTORS = Symbol.for('kit.endpoint.routeContributors');

/**
 * What a {@link RouteContributor} receives besides the group's Fastify instance.
 *
 * @example
 * ```ts
 * const contributor: RouteContributor = (group, { className, prefix }: RouteContributorContext) => [
 *   { method: 'GET', url: 'about', handler: async () => ({ className, prefix }) },
 * ];
 * ```
 */
export interface RouteContributorContext {
  /** The decorated class's name as written in source. */
  readonly className: string;
  /** The group the class belongs to (URL segment and default tag), e.g. `product`. */
  readonly group: string;
  /** The group's URL prefix, e.g. `/api/product`. */
  readonly prefix: string;
  /** The Kit service container (`app.kit.services`), for the contributor's own dependencies. */
  readonly services: KitServices;
}

/**
 * Describes routes for an endpoint class on its behalf; attached to a class with
 * {@link KitRouteContributor}. It runs inside the class's group context (so the group's prefix,
 * tags, operationIds and hooks apply), before the classes of the group run `addRoutes`. It
 * returns the routes instead of registering them: Kit registers each one after every `addRoutes`
 * of the group (and the plugins those registered) has run, unless the group already has a route
 * with the same method and path, so a hand-written route always wins. The hand-written route
 * keeps the contributed route's `onRequest` hooks (its guard, such as `app.kitAuthenticate`),
 * run before its own, unless it sets `config: { kitPublic: true }`. Paths are relative to the
 * group, as in `addRoutes`.
 *
 * @example
 * ```ts
 * const pingRoutes: RouteContributor = () => [{ method: 'GET', url: 'ping', handler: async () => 'pong' }];
 * ```
 */
export type RouteContributor = (group: FastifyInstance, context: RouteContributorContext) => readonly RouteOptions[] | Promise<readonly RouteOptions[]>;

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
    throw new KitError('KIT_ERR_INVALID_ROUTE', 'KitRouteContributor(contributor): the contributor must be a function (group, context) => routes.');
  }
  return (_cls: abstract new (...args: never[]) => unknown, context: ClassDecoratorContext): void => {
    const metadata = context.metadata as Record<PropertyKey, unknown>;
    const own = Object.prototype.hasOwnProperty.call(metadata, CONTRIBUTORS) ? (metadata[CONTRIBUTORS] as RouteContributor[]) : [];
    // Class decorators apply bottom-up; prepending keeps the declaration order.
    metadata[CONTRIBUTORS] = [contributor, ...own];
    rememberName(context);
  };
}

/** The contributors attached to `cls` itself (not to its base class). */
export function readRouteContributors(cls: abstract new (...args: never[]) => unknown): readonly RouteContributor[] {
  const metadata = (cls as { [Symbol.metadata]?: Record<PropertyKey, unknown> | null })[Symbol.metadata];
  if (!metadata || !Object.prototype.hasOwnProperty.call(metadata, CONTRIBUTORS)) return [];
  return metadata[CONTRIBUTORS] as RouteContributor[];
}

/**
 * The key under which a route counts as "the same route" within a group: method and relative
 * path with parameter names dropped (`GET items/:id` and `GET items/{itemId}` collide in
 * Fastify's router).
 */
export function routeKey(method: string, relativePath: string): string {
  return `${method.toUpperCase()} ${relativePath.replace(/:[A-Za-z_$][\w$]*/g, ':')}`;
}
