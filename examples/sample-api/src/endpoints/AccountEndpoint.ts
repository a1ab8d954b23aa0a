import type { FastifyInstance } from 'fastify';
import type { IKitEndpoint } from '@kit/core';
import type { OrderRepository } from '../services/orders.js';

/**
 * /api/account/...: the caller's own data, for a bearer token of the configured authority. One
 * group-wide hook guards every route of the group, and the OpenAPI document marks them all with
 * `security: [{ bearerAuth: [] }]`.
 *
 * The group exists only when JWT is configured (JWT_AUTHORITY and JWT_AUDIENCE set): without
 * `configureJwt`, reading `app.kitAuthenticate` throws KIT_ERR_JWT_NOT_CONFIGURED by design, so
 * the sample leaves these routes out rather than serve them unprotected.
 */
export class AccountEndpoint implements IKitEndpoint {
  constructor(private readonly deps: { orderRepository: OrderRepository }) {}

  addRoutes(app: FastifyInstance): void {
    if (!app.kit.options.jwt) return;
    app.addHook('onRequest', app.kitAuthenticate);

    app.get('me', { schema: { summary: 'Who the bearer token says I am' } }, async (request) => ({
      subject: request.user?.sub ?? null,
      issuer: request.user?.iss,
      scope: typeof request.user?.scope === 'string' ? request.user.scope.split(' ') : [],
      expiresAt: request.user ? new Date(request.user.exp * 1000).toISOString() : null,
    }));

    app.get('orders', { schema: { summary: 'My orders' } }, async (request) =>
      this.deps.orderRepository.list().filter((order) => order.userId === request.user?.sub),
    );
  }
}
