/** An order, as version 2 of the API shows it. */
export interface Order {
  id: string;
  userId: string;
  items: Array<{ sku: string; quantity: number }>;
  totalCents: number;
  status: 'open' | 'paid' | 'shipped';
}

/** In-memory order store. */
export class OrderRepository {
  readonly #orders: Order[] = [
    {
      id: '100',
      userId: '1',
      items: [{ sku: 'BOOK-1', quantity: 2 }],
      totalCents: 4200,
      status: 'paid',
    },
    {
      id: '101',
      userId: '2',
      items: [{ sku: 'PEN-9', quantity: 10 }],
      totalCents: 1500,
      status: 'open',
    },
  ];

  list(): Order[] {
    return this.#orders;
  }

  get(id: string): Order | undefined {
    return this.#orders.find((o) => o.id === id);
  }
}
