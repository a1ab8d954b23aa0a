import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@fastify/type-provider-typebox';
import { sendProblem, type EndpointApp, type IKitEndpoint } from '@kit/core';
import { IdParams, NewUser, User } from '../schemas.js';
import type { UserRepository } from '../services/users.js';

/**
 * /api/users/... : group "users", tag "users". Typed with TypeBox: `IKitEndpoint<TypeBoxTypeProvider>`
 * and `EndpointApp<TypeBoxTypeProvider>` make each route's schema type `request.params`,
 * `request.body` and what the reply may send.
 */
export class UsersEndpoint implements IKitEndpoint<TypeBoxTypeProvider> {
  readonly #users: UserRepository;

  constructor({ userRepository }: { userRepository: UserRepository }) {
    this.#users = userRepository;
  }

  addRoutes(app: EndpointApp<TypeBoxTypeProvider>): void {
    app.get(
      '',
      { schema: { summary: 'List users', response: { 200: Type.Array(User) } } },
      async () => this.#users.list(),
    );

    app.get(
      '{id}',
      { schema: { summary: 'Get one user', params: IdParams, response: { 200: User } } },
      async (request, reply) => {
        const user = this.#users.get(request.params.id);
        if (!user)
          return sendProblem(reply, {
            type: 'about:blank',
            title: 'Not Found',
            status: 404,
            detail: `No user ${request.params.id}.`,
          });
        return user;
      },
    );

    app.post(
      '',
      {
        schema: {
          summary: 'Create a user',
          operationId: 'createUser',
          body: NewUser,
          response: { 201: User },
        },
      },
      async (request, reply) =>
        reply.code(201).send(this.#users.add(request.body.name, request.body.email)),
    );
  }
}
