import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyTypeProvider,
  FastifyTypeProviderDefault,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';

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
export type EndpointApp<P extends FastifyTypeProvider = FastifyTypeProviderDefault> = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression<RawServerDefault>,
  RawReplyDefaultExpression<RawServerDefault>,
  FastifyBaseLogger,
  P
>;

/**
 * An endpoint class (spec `IKitEndpoint`): each becomes a route group. Paths given to `app` inside
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
