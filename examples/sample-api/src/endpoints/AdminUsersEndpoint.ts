import type { FastifyInstance } from 'fastify';
import { EndpointGroup, KitTag, type IKitEndpoint } from '@kit/core';
import type { UserRepository } from '../services/users.js';

/**
 * One of two classes of the "admin" group. The API-key hook it adds guards every admin route,
 * including those of AdminJobsEndpoint, because a group shares one Fastify context.
 */
@EndpointGroup('admin')
@KitTag('Administration')
export class AdminUsersEndpoint implements IKitEndpoint {
  readonly #users: UserRepository;
  readonly #adminApiKey: string;

  constructor({ userRepository, adminApiKey }: { userRepository: UserRepository; adminApiKey: string }) {
    this.#users = userRepository;
    this.#adminApiKey = adminApiKey;
  }

  addRoutes(app: FastifyInstance): void {
    app.addHook('onRequest', async (request, reply) => {
      if (request.headers['x-admin-key'] !== this.#adminApiKey) {
        await reply.code(401).send({ message: 'admin key required' });
      }
    });
    app.get('users', { schema: { summary: 'All users with e-mail addresses' } }, async () => this.#users.list());
  }
}
