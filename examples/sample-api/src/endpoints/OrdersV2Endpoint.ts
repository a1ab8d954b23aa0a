import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { sendProblem, type EndpointApp, type IKitEndpoint } from '@kit/core';
import { IdParams, Order } from '../schemas.js';
import type { OrderRepository } from '../services/orders.js';

/** Version 2 of the orders API: /api/orders@2/..., with items and status, typed with TypeBox. */
export class OrdersV2Endpoint implements IKitEndpoint<TypeBoxTypeProvider> {
  readonly #orders: OrderRepository;

  constructor({ orderRepository }: { orderRepository: OrderRepository }) {
    this.#orders = orderRepository;
  }

  addRoutes(app: EndpointApp<TypeBoxTypeProvider>): void {
    app.get(
      '',
      { schema: { summary: 'List orders (v2)', response: { 200: Type.Array(Order) } } },
      async () => this.#orders.list(),
    );
    app.get(
      '{id}',
      { schema: { summary: 'Get one order (v2)', params: IdParams, response: { 200: Order } } },
      async (request, reply) => {
        const order = this.#orders.get(request.params.id);
        if (!order)
          return sendProblem(reply, {
            type: 'about:blank',
            title: 'Not Found',
            status: 404,
            detail: `No order ${request.params.id}.`,
          });
        return order;
      },
    );
  }
}
