// The repository as a host holds it: the mapper's EntityRepository without its constructor. A
// host gets one from the runtime (`crud.repository(Entity)`), never by `new`: the constructor
// takes the mapper's engine, runner and executor, which are not part of the surface.
import type { EntityRepository as MapperRepository, Row } from './mapper/repository.js';

/**
 * The SQL side of one entity: list, get, create, update and delete, as the generated routes use
 * it, for hand-written routes and jobs. Knows nothing of HTTP; every value is a bound parameter
 * and every identifier one of the entity's declared columns. Made by the runtime:
 * `crud.repository(Entity)`.
 *
 * @example
 * ```ts
 * const products = app.kit.services.resolve<KitAutoCrud>('kitAutoCrud').repository(Product);
 * const cheap = await products.list({ filters: [{ field: 'price', op: 'lt', value: 10 }], sort: [], offset: 0, limit: 20 });
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the class's members, its constructor left out
export interface EntityRepository<
  R extends object = Row,
  I extends object = Readonly<Record<string, unknown>>,
> extends MapperRepository<R, I> {}
