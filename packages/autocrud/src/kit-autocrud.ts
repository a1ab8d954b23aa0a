// What the app holds of AutoCrud: the `kitAutoCrud` handle a host resolves from the container
// (its name and its interface), and what `@AutoCrud`'s route contributor asks of it (a class's own
// settings, the routes of one entity). The runtime (runtime.ts) implements both; the plugin
// (plugin.ts) makes it.
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { RouteContributorContext } from '@kit/core';
import type { ResolvedAuthorization } from './authorization.js';
import type { Entity, EntityInput, EntityRow } from './entity.js';
import type { EngineKind } from './mapper/sql/engine.js';
import type { IncludePlan } from './mapper/reads/includes.js';
import type { EntityRepository } from './repository.js';
import type { IdempotencyOptions } from './options.js';
import type { ChangeHandler, OutboxStats } from './outbox/types.js';

/**
 * The container name `addKitAutoCrud` registers the {@link KitAutoCrud} handle under.
 *
 * @example
 * ```ts
 * const crud = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD);   // 'kitAutoCrud'
 * ```
 */
export const KIT_AUTOCRUD = 'kitAutoCrud';

/**
 * The running AutoCrud database, as `addKitAutoCrud` returns it and the container holds it.
 *
 * @example
 * ```ts
 * const crud = addKitAutoCrud(app, 'pglite:');
 * app.get('/api/stats/cheap-products', async () => {
 *   const { total } = await crud.repository(Product).list({ filters: [{ field: 'price', op: 'lt', value: 10 }], sort: [], offset: 0, limit: 1 });
 *   return { total };
 * });
 * ```
 */
export interface KitAutoCrud {
  /** The engine the connection string picked. */
  readonly engine: EngineKind;
  /** The connection string with its password replaced by `***`. */
  readonly url: string;
  /** True while the database answers and every entity's table fits. */
  readonly available: boolean;
  /** The mapper for an entity (the one the generated routes use), for hand-written routes and jobs. */
  repository<E extends Entity>(entity: E): EntityRepository<EntityRow<E>, EntityInput<E>>;
  /**
   * The include plan of `paths` on `entity`, the paths as `include=` names them (`'customer'`,
   * `'lines.product'`), for a hand-written read's `ReadOptions.include`: the relations the
   * generated routes include, each one-to-many at most 100 rows per row. Unlike a request's, the
   * plan is read under no caller's authorization rules, as every repository call. Known once
   * `useKit` has built the routes.
   *
   * @throws {KitError} `KIT_ERR_INVALID_ARGUMENT` for a path that is not one of the entity's relations (or before `useKit`).
   * @example
   * ```ts
   * const order = await crud.repository(Order).get(1, { include: crud.includePlan(Order, ['customer', 'lines.product']) });
   * ```
   */
  includePlan<E extends Entity>(entity: E, paths: readonly string[]): readonly IncludePlan[];
  /** `SELECT 1`; resolves with the round trip in ms, rejects with `KIT_ERR_DATABASE_UNAVAILABLE` (or `KIT_ERR_AUTOCRUD_SCHEMA`). */
  ping(signal?: AbortSignal): Promise<number>;
  /**
   * Subscribes `handler` to `entity`'s committed changes (the outbox must be on: `outbox` of
   * `addKitAutoCrud`). It is called on the one instance that dispatches, once per change and
   * at least once (`message.id` tells a repeat), in commit order per row, retried with backoff
   * when it throws, and never on a request's path. Register the same subscribers on every
   * instance, under the same names: any of them may be the one that dispatches.
   *
   * @throws {KitError} `KIT_ERR_AUTOCRUD_OUTBOX_OFF` when the outbox is off; `KIT_ERR_INVALID_ARGUMENT` for a name already used.
   * @example
   * ```ts
   * crud.onChange(Product, async (message) => {
   *   await searchIndex.upsert(String(message.key), message.after, { idempotencyKey: message.id });
   * }, { name: 'search-index' });
   * ```
   */
  onChange<E extends Entity>(
    entity: E,
    handler: ChangeHandler,
    options?: { readonly name?: string },
  ): void;
  /** The outbox dispatcher's counters on this instance and the last backlog read; undefined when the outbox is off. */
  outboxStats(): OutboxStats | undefined;
  /** Closes the database (idempotent); `addKitAutoCrud` calls it as a `release` step of the app's shutdown. */
  close(): Promise<void>;
}

/**
 * A class's own settings, as the runtime receives them (`undefined`: the global option applies).
 *
 * @example
 * ```ts
 * const settings: AutoCrudClassSettings = { operations: CrudOperations.All, idempotency: undefined, requireIfMatch: undefined };
 * ```
 */
export interface AutoCrudClassSettings {
  readonly operations: number;
  readonly idempotency: boolean | IdempotencyOptions | undefined;
  readonly requireIfMatch: boolean | undefined;
  /** The class's authorization rules, checked; absent: none. */
  readonly authorization?: ResolvedAuthorization;
}

/**
 * What `@AutoCrud`'s route contributor asks of the app's AutoCrud database.
 *
 * @example
 * ```ts
 * const routes = autoCrudFor(context.services, context.className).routesFor(group, context, Product, settings);
 * ```
 */
export interface AutoCrudContributor {
  routesFor(
    group: FastifyInstance,
    context: RouteContributorContext,
    entity: Entity,
    settings: AutoCrudClassSettings,
  ): RouteOptions[];
}
