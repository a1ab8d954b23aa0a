import type { FastifyInstance } from 'fastify';
import type { IKitEndpoint } from '@kit/core';
import type { OrderRepository } from '../services/orders.js';

/** Version 2 of the orders API: /api/orders@2/..., with items and status. */
export class OrdersV2Endpoint implements IKitEndpoint {
  readonly #orders: OrderRepository;

  constructor({ orderRepository }: { orderRepository: OrderRepository }) {
    this.#orders = orderRepository;
  }

  addRoutes(app: FastifyInstance): void {
    app.get('', { schema: { summary: 'List orders (v2)' } }, async () => this.#orders.list());
    app.get<{ Params: { id: string } }>('{id}', { schema: { summary: 'Get one order (v2)' } }, async (request, reply) =>
      this.#orders.get(request.params.id) ?? reply.code(404).send({ message: 'order not found' }),
    );
  }
}
