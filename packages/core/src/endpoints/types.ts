import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyTypeProvider,
  FastifyTypeProviderDefault,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteOptions,
} from 'fastify';
import type { KitServices } from '../shared/services.js';

/**
 * The Fastify instance `addRoutes` receives, typed with a type provider `P` (TypeBox, Zod, JSON
 * Schema to TS...), so route schemas type `request.params`, `query`, `body` and the reply. At run
 * time it is the group's encapsulation context; the provider only changes types.
 *
 * @example
 * ```ts
 * import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
 * type App = EndpointApp<TypeBoxTypeProvider>;
 * ```
 */
export type EndpointApp<P extends FastifyTypeProvider = FastifyTypeProviderDefault> =
  FastifyInstance<
    RawServerDefault,
    RawRequestDefaultExpression<RawServerDefault>,
    RawReplyDefaultExpression<RawServerDefault>,
    FastifyBaseLogger,
    P
  >;

/**
 * An endpoint class: each becomes a route group. Paths given to `app` inside
 * `addRoutes` are relative to `/{apiPrefix}/{group}`. `P` is the type provider the class's route
 * schemas are written for (default: Fastify's, which infers nothing from schemas).
 *
 * @example
 * ```ts
 * // endpoints/UserEndpoint.ts -> GET /api/user/profile, tag "user", operationId user_GET_profile
 * export class UserEndpoint implements IKitEndpoint {
 *   addRoutes(app: FastifyInstance) {
 *     app.get('profile', async () => ({ name: 'Ada' }));
 *   }
 * }
 *
 * // With TypeBox: request.params.id is a number, inferred from the schema.
 * import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
 * export class OrdersEndpoint implements IKitEndpoint<TypeBoxTypeProvider> {
 *   addRoutes(app: EndpointApp<TypeBoxTypeProvider>) {
 *     app.get('{id}', { schema: { params: Type.Object({ id: Type.Integer() }) } }, async (req) => ({ id: req.params.id + 1 }));
 *   }
 * }
 * ```
 */
export interface IKitEndpoint<P extends FastifyTypeProvider = FastifyTypeProviderDefault> {
  addRoutes(app: EndpointApp<P>): void | Promise<void>;
}

/**
 * A class Kit can build into an endpoint (its constructor receives the service cradle).
 *
 * @example
 * ```ts
 * const sources: EndpointClass[] = [UserEndpoint, OrdersV2Endpoint];
 * addKit(app, sources);
 * ```
 */
export type EndpointClass = new (...args: never[]) => object;

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
  /**
   * Every endpoint class of the app, with its group, known before any group's routes are made:
   * for a contributor whose routes depend on other classes (a plugin's relations between the
   * classes it serves). The same frozen array for every contributor of one app.
   */
  readonly endpoints: readonly PlannedEndpoint[];
}

/**
 * One endpoint class of the app as Kit planned it (see {@link RouteContributorContext.endpoints}).
 *
 * @example
 * ```ts
 * const contributor: RouteContributor = (_group, { endpoints }) =>
 *   [{ method: 'GET', url: 'siblings', handler: async () => endpoints.map((e: PlannedEndpoint) => e.prefix) }];
 * ```
 */
export interface PlannedEndpoint {
  /** The class itself. */
  readonly cls: EndpointClass;
  /** The class's name as written in source. */
  readonly className: string;
  /** Its group (URL segment and default tag). */
  readonly group: string;
  /** Its group's URL prefix, e.g. `/api/product`. */
  readonly prefix: string;
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
export type RouteContributor = (
  group: FastifyInstance,
  context: RouteContributorContext,
) => readonly RouteOptions[] | Promise<readonly RouteOptions[]>;
