import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { EndpointGroup, KitTag, sendProblem, type EndpointApp, type IKitEndpoint } from '@kit/core';
import { User } from '../schemas.js';
import type { UserRepository } from '../services/users.js';

/**
 * One of two classes of the "admin" group. The API-key hook it adds guards every admin route,
 * including those of AdminJobsEndpoint, because a group shares one Fastify context. Kit cannot see
 * what the hook checks, so the group declares it: the OpenAPI document requires the `adminKey`
 * scheme on every admin route (a lock in /docs, a header generated clients send).
 */
@EndpointGroup('admin', {
  security: {
    adminKey: {
      type: 'apiKey',
      in: 'header',
      name: 'x-admin-key',
      description: 'The admin API key (ADMIN_API_KEY).',
    },
  },
})
@KitTag('Administration')
export class AdminUsersEndpoint implements IKitEndpoint<TypeBoxTypeProvider> {
  readonly #users: UserRepository;
  readonly #adminApiKey: string;

  constructor({
    userRepository,
    adminApiKey,
  }: {
    userRepository: UserRepository;
    adminApiKey: string;
  }) {
    this.#users = userRepository;
    this.#adminApiKey = adminApiKey;
  }

  addRoutes(app: EndpointApp<TypeBoxTypeProvider>): void {
    app.addHook('onRequest', async (request, reply) => {
      if (request.headers['x-admin-key'] !== this.#adminApiKey) {
        await sendProblem(reply, {
          type: 'about:blank',
          title: 'Unauthorized',
          status: 401,
          detail: 'An admin key (x-admin-key) is required.',
        });
      }
    });
    app.get(
      'users',
      {
        schema: { summary: 'All users with e-mail addresses', response: { 200: Type.Array(User) } },
      },
      async () => this.#users.list(),
    );
  }
}
