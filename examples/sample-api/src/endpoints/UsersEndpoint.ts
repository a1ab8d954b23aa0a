import type { FastifyInstance } from 'fastify';
import type { IKitEndpoint } from '@kit/core';
import type { UserRepository } from '../services/users.js';

const user = {
  type: 'object',
  required: ['id', 'name', 'email'],
  properties: { id: { type: 'string' }, name: { type: 'string' }, email: { type: 'string' } },
} as const;

/** /api/users/... : group "users", tag "users". */
export class UsersEndpoint implements IKitEndpoint {
  readonly #users: UserRepository;

  constructor({ userRepository }: { userRepository: UserRepository }) {
    this.#users = userRepository;
  }

  addRoutes(app: FastifyInstance): void {
    app.get('', { schema: { summary: 'List users', response: { 200: { type: 'array', items: user } } } }, async () => this.#users.list());

    app.get<{ Params: { id: string } }>(
      '{id}',
      {
        schema: {
          summary: 'Get one user',
          params: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
          response: { 200: user, 404: { type: 'object', properties: { message: { type: 'string' } } } },
        },
      },
      async (request, reply) => this.#users.get(request.params.id) ?? reply.code(404).send({ message: 'user not found' }),
    );

    app.post<{ Body: { name: string; email: string } }>(
      '',
      {
        schema: {
          summary: 'Create a user',
          operationId: 'createUser',
          body: { type: 'object', required: ['name', 'email'], properties: { name: { type: 'string' }, email: { type: 'string' } } },
          response: { 201: user },
        },
      },
      async (request, reply) => reply.code(201).send(this.#users.add(request.body.name, request.body.email)),
    );
  }
}
