// Type-level test: route schemas type the request and the reply inside addRoutes, with TypeBox
// and with Zod. `npm run typecheck` compiles this file; if inference is lost (request.params
// typed `unknown`), the assertions below stop compiling. type-providers.test.ts also compiles a
// copy that loses the provider, to prove this check can fail.
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { EndpointApp, IKitEndpoint } from '@kit/core';

type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function expectType<T extends true>(value: T): T {
  return value;
}

const Order = Type.Object({ id: Type.Integer(), total: Type.Number() }, { $id: 'Order' });

export class TypeBoxOrdersEndpoint implements IKitEndpoint<TypeBoxTypeProvider> {
  addRoutes(app: EndpointApp<TypeBoxTypeProvider>): void {
    app.get(
      '{id}',
      {
        schema: {
          params: Type.Object({ id: Type.Integer() }),
          querystring: Type.Object({ expand: Type.Optional(Type.Boolean()) }),
          response: { 200: Order },
        },
      },
      async (request) => {
        expectType<Equal<typeof request.params.id, number>>(true);
        expectType<Equal<typeof request.query.expand, boolean | undefined>>(true);
        return { id: request.params.id, total: 12.5 };
      },
    );
    app.post(
      '',
      { schema: { body: Type.Object({ total: Type.Number() }), response: { 201: Order } } },
      async (request, reply) => {
        expectType<Equal<typeof request.body.total, number>>(true);
        // @ts-expect-error the 201 response schema types what the reply may send
        return reply.code(201).send({ id: 'not a number', total: request.body.total });
      },
    );
  }
}

export class ZodOrdersEndpoint implements IKitEndpoint<ZodTypeProvider> {
  addRoutes(app: EndpointApp<ZodTypeProvider>): void {
    app.get(
      '{id}',
      {
        schema: {
          params: z.object({ id: z.coerce.number().int() }),
          querystring: z.object({ q: z.string().optional() }),
        },
      },
      async (request) => {
        expectType<Equal<typeof request.params.id, number>>(true);
        expectType<Equal<typeof request.query.q, string | undefined>>(true);
        return { id: request.params.id };
      },
    );
  }
}
