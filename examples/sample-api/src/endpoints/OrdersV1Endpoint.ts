import type { FastifyInstance } from 'fastify';
import type { IKitEndpoint } from '@kit/core';
import type { OrderRepository } from '../services/orders.js';

/** Version 1 of the orders API: /api/orders@1/... (the V1 marker becomes @1). */
export class OrdersV1Endpoint implements IKitEndpoint {
  readonly #orders: OrderRepository;

  constructor({ orderRepository }: { orderRepository: OrderRepository }) {
    this.#orders = orderRepository;
  }

  addRoutes(app: FastifyInstance): void {
    // v1 shows only ids and totals, as the first clients expect.
    app.get('', { schema: { summary: 'List orders (v1)' } }, async () =>
      this.#orders.list().map((o) => ({ id: o.id, total: o.totalCents / 100 })),
    );
  }
}
