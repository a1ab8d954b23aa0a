import type { IWarmup } from '@kit/core';
import type { KitAutoCrud } from '@kit/autocrud';
import { Product } from './ProductsEndpoint.js';

const STARTERS = [
  { name: 'Espresso cup', price: 6.5 },
  { name: 'Pour-over kettle', price: 39 },
  { name: 'Bean grinder', price: 89 },
] as const;

/**
 * Warm-up: an empty catalogue gets three products, so that /api/products shows something on a
 * fresh `npm start`. A database that is not reachable yet is not a reason to stay unready.
 */
export class SeedProducts implements IWarmup {
  readonly #crud: KitAutoCrud;
  readonly #log: { warn(obj: object, msg: string): void };

  constructor({
    kitAutoCrud,
    logger,
  }: {
    kitAutoCrud: KitAutoCrud;
    logger: { warn(obj: object, msg: string): void };
  }) {
    this.#crud = kitAutoCrud;
    this.#log = logger;
  }

  async warmup(): Promise<void> {
    const products = this.#crud.repository(Product);
    try {
      if ((await products.list({ filters: [], sort: [], offset: 0, limit: 1 })).total > 0) return;
      for (const product of STARTERS) await products.create(product);
    } catch (err) {
      this.#log.warn({ err }, 'sample: products not seeded, the database is not reachable yet');
    }
  }
}
