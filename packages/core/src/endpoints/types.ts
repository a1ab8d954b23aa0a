import type { FastifyInstance } from 'fastify';

/**
 * An endpoint class (spec `IKitEndpoint`): each becomes a route group. Paths given to `app` inside
 * `addRoutes` are relative to `/{apiPrefix}/{group}`.
 *
 * @example
 * ```ts
 * // endpoints/UserEndpoint.ts -> GET /api/user/profile, tag "user", operationId user_GET_profile
 * export class UserEndpoint implements IKitEndpoint {
 *   addRoutes(app: FastifyInstance) {
 *     app.get('profile', async () => ({ name: 'Ada' }));
 *   }
 * }
 * ```
 */
export interface IKitEndpoint {
  addRoutes(app: FastifyInstance): void | Promise<void>;
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
