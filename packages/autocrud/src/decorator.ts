import { KitError, KitRouteContributor } from '@kit/core';
import { resolveAuthorization, type AutoCrudAuthorization } from './authorization.js';
import type { Entity, EntityFieldName } from './entity.js';
import { allows, CrudOperations } from './operations.js';
import { requireIfMatchOption, resolveIdempotency, type IdempotencyOptions } from './options.js';
import { autoCrudFor, type AutoCrudClassSettings } from './plugin.js';
import { declareAutoCrud } from './relations.js';

/**
 * Options of `@AutoCrud`.
 *
 * @example
 * ```ts
 * @AutoCrud(Product, { operations: CrudOperations.All | CrudOperations.ListAll, idempotency: true, requireIfMatch: true } satisfies AutoCrudOptions)
 * export class ProductEndpoint {}
 * ```
 */
export interface AutoCrudOptions<F extends string = string> {
  /** The routes to generate, as {@link CrudOperations} flags (default `CrudOperations.All`). */
  operations?: number;
  /**
   * Exactly-once creates for this class: `POST` with `Idempotency-Key` runs at most once per key.
   * `true`, `false` or the key TTLs; default: what `addKitAutoCrud`'s `idempotency` says (off).
   */
  idempotency?: boolean | IdempotencyOptions;
  /**
   * `PUT`, `PATCH` and `DELETE` need `If-Match` (428 without); the entity must declare a `version` field.
   * Default: what `addKitAutoCrud`'s `requireIfMatch` says (false).
   */
  requireIfMatch?: boolean;
  /**
   * Who may do what to which rows and fields, by token role (see {@link AutoCrudAuthorization});
   * typed against the entity's fields, checked at once, enforced inside every generated statement.
   * Needs `opt.configureJwt`; implies the token check on every generated route (anonymous only
   * where a rule says `anonymous: true`). Default: none.
   */
  authorization?: AutoCrudAuthorization<F>;
}

/**
 * Makes an endpoint class serve an entity: its group (the class name rule or `@EndpointGroup`)
 * gets `GET /` (a filtered, sorted page), `GET /{pk}`, `POST /`, `PUT /{pk}`, `DELETE /{pk}`,
 * with `CrudOperations.ListAll` also `GET /all`, with `CrudOperations.Patch` also `PATCH /{pk}`. `addRoutes` is optional; a route it declares
 * with the same method and path replaces the generated one. Needs `addKitAutoCrud(app, url)`.
 * Throws `KIT_ERR_AUTOCRUD_ENTITY` at once when Create or Update is allowed on an entity with no
 * writable field.
 *
 * @throws {KitError} `KIT_ERR_AUTOCRUD_ENTITY` at once for an entity not made by `defineEntity`, unknown operation flags, Create/Update with no writable field, or `requireIfMatch` without a version field; `KIT_ERR_AUTOCRUD_NOT_ADDED` at `useKit` without `addKitAutoCrud`.
 * @example
 * ```ts
 * @AutoCrud(Product)                                   // /api/product, all five operations
 * export class ProductEndpoint implements IKitEndpoint {
 *   addRoutes(app: FastifyInstance) {
 *     app.get('{id}', async () => ({ hand: 'written' }));   // replaces the generated GET /{id}
 *   }
 * }
 * ```
 */
export function AutoCrud<E extends Entity>(
  entity: E,
  options: AutoCrudOptions<EntityFieldName<E>> = {},
) {
  if (typeof entity !== 'object' || entity === null || typeof entity.field !== 'function') {
    throw new KitError(
      'KIT_ERR_AUTOCRUD_ENTITY',
      '@AutoCrud(entity): pass an entity made by defineEntity({ ... }).',
    );
  }
  const operations = options.operations ?? CrudOperations.All;
  if (!Number.isInteger(operations) || operations < 1 || operations > 255) {
    throw new KitError(
      'KIT_ERR_AUTOCRUD_ENTITY',
      `@AutoCrud(${entity.name}, { operations: ${String(operations)} }): combine CrudOperations flags (List | Get | Create | Update | Delete | ListAll | Patch | History).`,
    );
  }
  if (allows(operations, CrudOperations.History) && !entity.history) {
    throw new KitError(
      'KIT_ERR_AUTOCRUD_ENTITY',
      `@AutoCrud(${entity.name}): History is allowed but the entity records no history; set defineEntity({ history: true }) or leave CrudOperations.History out.`,
    );
  }
  for (const [name, flag] of [
    ['Create', CrudOperations.Create],
    ['Update', CrudOperations.Update],
    ['Patch', CrudOperations.Patch],
  ] as const) {
    if (allows(operations, flag) && entity.writable.length === 0) {
      throw new KitError(
        'KIT_ERR_AUTOCRUD_ENTITY',
        `@AutoCrud(${entity.name}): ${name} is allowed but the entity has no writable field; list fields in defineEntity({ writable: [...] }) or leave CrudOperations.${name} out.`,
      );
    }
  }
  const where = `@AutoCrud(${entity.name}) options`;
  // Checked here, at once; resolved against the global options when the routes are made.
  resolveIdempotency(`${where}.idempotency`, options.idempotency, undefined);
  const requireIfMatch = requireIfMatchOption(`${where}.requireIfMatch`, options.requireIfMatch);
  if (requireIfMatch && entity.version === undefined) {
    throw new KitError(
      'KIT_ERR_AUTOCRUD_ENTITY',
      `${where}.requireIfMatch: entity ${entity.name} declares no version field; add one with defineEntity({ version: '<integer field>' }).`,
    );
  }
  const authorization = resolveAuthorization(
    `${where}.authorization`,
    entity,
    operations,
    options.authorization,
  );
  const settings: AutoCrudClassSettings = {
    operations,
    idempotency: options.idempotency,
    requireIfMatch,
    ...(authorization ? { authorization } : {}),
  };
  const contribute = KitRouteContributor((group, context) =>
    autoCrudFor(context.services, context.className).routesFor(group, context, entity, settings),
  );
  return (
    cls: abstract new (...args: never[]) => unknown,
    context: ClassDecoratorContext,
  ): void => {
    // Read back when the app's classes are known: the relations between the entities they serve.
    declareAutoCrud(cls, { entity, operations, ...(authorization ? { authorization } : {}) });
    contribute(cls, context);
  };
}
