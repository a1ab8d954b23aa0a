import type { FastifyInstance } from 'fastify';
import type { IKitEndpoint } from '@kit/core';
import type { OrderRepository } from '../services/orders.js';

/** Version 2 of the orders API: /api/orders@2/..., with items and status. */
export class OrdersV2Endpoint implements IKitEndpoint {
  constructor(private readonly deps: { orderRepository: OrderRepository }) {}

  addRoutes(app: FastifyInstance): void {
    app.get('', { schema: { summary: 'List orders (v2)' } }, async () => this.deps.orderRepository.list());
    app.get<{ Params: { id: string } }>('{id}', { schema: { summary: 'Get one order (v2)' } }, async (request, reply) =>
      this.deps.orderRepository.get(request.params.id) ?? reply.code(404).send({ message: 'order not found' }),
    );
  }
}
