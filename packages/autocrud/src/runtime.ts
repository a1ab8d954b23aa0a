// The running AutoCrud database of one app: the `kitAutoCrud` handle a host calls (repositories,
// include plans, change subscriptions) and the route contributor `@AutoCrud` asks for an entity's
// routes, which checks the class's settings, adds the entity's component schemas and links the
// nested creates once every class is known.
import type { FastifyBaseLogger, FastifyInstance, RouteOptions } from 'fastify';
import {
  KitError,
  KitStoreNames,
  MemoryIdempotencyStore,
  type IIdempotencyStore,
  type PlannedEndpoint,
  type RouteContributorContext,
} from '@kit/core';
import { autoCrudErrors } from './errors.js';
import { allows, CrudOperations } from './operations.js';
import { cursorCodec, type CursorCodec } from './routes/cursor.js';
import type { ResolvedAuthorization } from './authorization.js';
import type { Entity, EntityInput, EntityRow } from './entity.js';
import type { Database } from './mapper/database.js';
import type { EngineKind } from './mapper/sql/engine.js';
import type { EntityRepository } from './repository.js';
import { checkReservation, resolveIdempotency, type ResolvedAutoCrudOptions } from './options.js';
import { crudRoutes } from './routes/routes.js';
import { batchPatchSchema, inputSchema, patchSchema, rowSchema } from './routes/schemas.js';
import { acceptMergePatch } from './routes/body.js';
import { createValidation, type CrudValidation } from './routes/validation.js';
import { includePaths, readIncludes, relationProperties } from './routes/includes.js';
import { asPlans, type IncludePlan, type RelatedSource } from './mapper/reads/includes.js';
import { buildRelations, includeRelations, reachable, type RelationRegistry } from './relations.js';
import { compileNested, NestedRelations, nestedInputSchema } from './routes/nested-create.js';
import type { Outbox } from './outbox/outbox.js';
import type { ChangeHandler, OutboxStats } from './outbox/types.js';
import { ChangeHistory } from './mapper/history/history.js';
import type { AutoCrudClassSettings, AutoCrudContributor, KitAutoCrud } from './kit-autocrud.js';

/** Kit's idempotency store (memory by default, Redis with @kit/store-redis), from the container. */
function idempotencyStore(context: RouteContributorContext, entity: Entity): IIdempotencyStore {
  if (!context.services.hasRegistration(KitStoreNames.idempotency)) {
    throw new KitError(
      'KIT_ERR_AUTOCRUD_ENTITY',
      `Idempotent creates of ${entity.name} (${context.className}) need Kit's '${KitStoreNames.idempotency}', and none is registered: register an IIdempotencyStore under that name, or turn idempotency off for this class.`,
    );
  }
  return context.services.resolve<IIdempotencyStore>(KitStoreNames.idempotency);
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** An entity an @AutoCrud class serves, as the relations between them are linked. */
interface Served {
  readonly operations: number;
  readonly className: string;
  readonly nested: NestedRelations;
  readonly authorization?: ResolvedAuthorization;
}

/**
 * The app's AutoCrud database as the host and `@AutoCrud` use it (made by `addKitAutoCrud`).
 *
 * @example
 * ```ts
 * const runtime = new AutoCrudRuntime(database, target.redacted, resolved, log, outbox);
 * ```
 */
export class AutoCrudRuntime implements KitAutoCrud, AutoCrudContributor {
  readonly #validation: CrudValidation = createValidation();
  /** Every entity served, by entity: its children are linked once all are known (`linkRelations`). */
  readonly #served = new Map<Entity, Served>();
  /** Component names in the document, by entity: two entities may not share one. */
  readonly #components = new Map<string, Entity>();
  readonly #cursors: CursorCodec;
  #warnedCursors = false;
  #warnedIdempotency = false;
  #relations: { endpoints: readonly PlannedEndpoint[]; registry: RelationRegistry } | undefined;

  constructor(
    readonly database: Database,
    readonly url: string,
    private readonly options: ResolvedAutoCrudOptions,
    private readonly log: FastifyBaseLogger,
    readonly outbox: Outbox | undefined,
  ) {
    this.#cursors = cursorCodec(options.cursorSecret);
  }

  onChange<E extends Entity>(
    entity: E,
    handler: ChangeHandler,
    options?: { readonly name?: string },
  ): void {
    if (!this.outbox) {
      throw autoCrudErrors.error('KIT_ERR_AUTOCRUD_OUTBOX_OFF', { entity: entity.name });
    }
    this.outbox.onChange(entity, handler, options?.name);
  }

  outboxStats(): OutboxStats | undefined {
    return this.outbox?.stats();
  }

  /** The app's relations, built once from its plan of endpoint classes (the same array for every contributor of the app). */
  #relationsOf(endpoints: readonly PlannedEndpoint[]): RelationRegistry {
    if (this.#relations?.endpoints !== endpoints)
      this.#relations = { endpoints, registry: buildRelations(endpoints) };
    return this.#relations.registry;
  }

  get engine(): EngineKind {
    return this.database.engine.kind;
  }

  get available(): boolean {
    return this.database.available;
  }

  repository<E extends Entity>(entity: E): EntityRepository<EntityRow<E>, EntityInput<E>> {
    return this.database.repository<EntityRow<E>, EntityInput<E>>(entity);
  }

  includePlan<E extends Entity>(entity: E, paths: readonly string[]): readonly IncludePlan[] {
    // The routes' own planning (routes/includes.ts) over the relations the app's endpoint plan
    // declared, so that a hand-written read includes exactly what `include=` would.
    const registry = this.#relations?.registry;
    const known = registry
      ? includePaths(
          entity,
          includeRelations(
            registry,
            (other) => this.database.register(other) as unknown as RelatedSource,
          ),
        )
      : [];
    const unknown = paths.filter((p) => !known.some((k) => k.path === p));
    if (unknown.length > 0) {
      const accepted =
        known.length > 0
          ? known.map((k) => k.path).join(', ')
          : registry
            ? 'none'
            : 'none yet: the relations are known once useKit has built the routes';
      throw new KitError(
        'KIT_ERR_INVALID_ARGUMENT',
        `includePlan(${entity.name}, …): ${unknown.map((p) => JSON.stringify(p)).join(', ')} is not a relation path of ${entity.name} (accepted: ${accepted}).`,
      );
    }
    const planned = paths.length > 0 ? readIncludes(known, { include: paths }) : undefined;
    return planned && 'nodes' in planned ? asPlans(planned.nodes) : [];
  }

  ping(signal?: AbortSignal): Promise<number> {
    return this.database.ping(signal);
  }

  close(): Promise<void> {
    return this.database.close();
  }

  routesFor(
    group: FastifyInstance,
    context: RouteContributorContext,
    entity: Entity,
    settings: AutoCrudClassSettings,
  ): RouteOptions[] {
    const { operations } = settings;
    const requireIfMatch = settings.requireIfMatch ?? this.options.requireIfMatch;
    if (
      requireIfMatch &&
      entity.version === undefined &&
      [CrudOperations.Update, CrudOperations.Patch, CrudOperations.Delete].some((flag) =>
        allows(operations, flag),
      )
    ) {
      throw new KitError(
        'KIT_ERR_AUTOCRUD_ENTITY',
        `addKitAutoCrud options.requireIfMatch is on, but entity ${entity.name} (${context.className}) declares no version field: add one with defineEntity({ version: '<integer field>' }), or pass requireIfMatch: false to its @AutoCrud.`,
      );
    }
    const idempotency = resolveIdempotency(
      `@AutoCrud(${entity.name}) options.idempotency`,
      settings.idempotency,
      this.options.idempotency,
    );
    checkReservation(`@AutoCrud(${entity.name}) options.idempotency`, idempotency, this.options);
    const repository = this.database.register(entity);
    const nested = this.#served.get(entity)?.nested ?? new NestedRelations(entity);
    this.#served.set(entity, {
      operations,
      className: context.className,
      nested,
      ...(settings.authorization ? { authorization: settings.authorization } : {}),
    });
    const registry = this.#relationsOf(context.endpoints);
    const relationsOf = includeRelations(
      registry,
      (other) => this.database.register(other) as unknown as RelatedSource,
    );
    // The row components of every entity this one's answers may hold through includes, so that the group resolves their references.
    const related = [...reachable(entity, registry)].map(
      (other) =>
        [rowSchema(other, relationProperties(registry.of(other).values())), other] as const,
    );
    const own = [
      rowSchema(entity, relationProperties(registry.of(entity).values())),
      inputSchema(entity),
      ...(allows(operations, CrudOperations.Patch)
        ? [patchSchema(entity), batchPatchSchema(entity)]
        : []),
    ].map((schema) => [schema, entity] as const);
    // The history route's rows: Kit's own entity, one component however many entities serve it.
    if (allows(operations, CrudOperations.History))
      own.push([rowSchema(ChangeHistory), ChangeHistory] as const);
    if (allows(operations, CrudOperations.Patch)) acceptMergePatch(group);
    for (const [schema, of] of [...own, ...related] as Array<
      readonly [{ $id: string } & Record<string, unknown>, Entity]
    >) {
      const owner = this.#components.get(schema.$id);
      if (owner && owner !== of) {
        throw new KitError(
          'KIT_ERR_AUTOCRUD_ENTITY',
          `Two entities use the component schema name '${schema.$id}' (${context.className} and another @AutoCrud class); give one of them another name.`,
        );
      }
      this.#components.set(schema.$id, of);
      const existing: unknown = group.getSchema(schema.$id);
      if (existing === undefined) group.addSchema(schema);
      else if (!sameJson(existing, schema)) {
        throw new KitError(
          'KIT_ERR_AUTOCRUD_ENTITY',
          `A schema with $id '${schema.$id}' is already added to the app, with other content; give entity ${entity.name} another name.`,
        );
      }
      this.#validation.addSchema(schema);
    }
    if (!this.options.requireAuthorization && !settings.authorization) {
      this.log.warn(
        { class: context.className, prefix: context.prefix },
        `AutoCrud routes of ${context.className} (${context.prefix}) require no authentication: anyone who reaches the service can change ${entity.table}. Pass requireAuthorization: true to addKitAutoCrud to require a bearer token.`,
      );
    }
    if (
      allows(operations, CrudOperations.List) &&
      this.options.cursorSecret === undefined &&
      this.database.engine.servesInstances &&
      !this.#warnedCursors
    ) {
      this.#warnedCursors = true;
      this.log.warn(
        { class: context.className },
        'AutoCrud list cursors are signed with a key of this process: a cursor from one instance is refused by another. Pass cursorSecret (the same on every instance) to addKitAutoCrud when more than one instance serves the API.',
      );
    }
    return crudRoutes({
      entity,
      operations,
      limits: this.options.limits,
      repository,
      validation: this.#validation,
      prefix: context.prefix,
      cursors: this.#cursors,
      requireIfMatch,
      relations: relationsOf,
      repositoryOf: (other) => this.database.register(other),
      nested,
      ...(idempotency && allows(operations, CrudOperations.Create)
        ? { idempotency: { ...idempotency, store: this.#idempotencyStore(context, entity) } }
        : {}),
      // Authorization rules need the token check (reading kitAuthenticate fails start-up without configureJwt).
      ...(this.options.requireAuthorization || settings.authorization
        ? { authenticate: group.kitAuthenticate }
        : {}),
      ...(settings.authorization ? { authorization: settings.authorization } : {}),
      tokenCheck: () => group.kitAuthenticate,
    });
  }

  /**
   * The idempotency store of an entity's creates. Once per app, on an engine several instances
   * serve, start-up warns when it is Kit's in-memory store: each instance then keeps keys of its
   * own, and a retry another instance receives creates the row again.
   */
  #idempotencyStore(context: RouteContributorContext, entity: Entity): IIdempotencyStore {
    const store = idempotencyStore(context, entity);
    if (
      store instanceof MemoryIdempotencyStore &&
      this.database.engine.servesInstances &&
      !this.#warnedIdempotency
    ) {
      this.#warnedIdempotency = true;
      this.log.warn(
        { class: context.className, store: KitStoreNames.idempotency },
        `AutoCrud idempotency keys are kept in this process's memory (MemoryIdempotencyStore): a retried create that reaches another instance runs again. Register a shared '${KitStoreNames.idempotency}' (addKitStore from @kit/store-redis) when more than one instance serves the API.`,
      );
    }
    return store;
  }

  /**
   * Gives each served entity's create the one-to-many relations it may carry: every served child
   * whose class allows Create and whose `references` name the entity (the relation's `many`).
   * Run when the app is ready, once every @AutoCrud class is known; a relation name that is
   * already a field or another relation of the parent fails start-up naming both.
   */
  linkRelations(): void {
    for (const [child, { operations, className, authorization }] of this.#served) {
      if (!allows(operations, CrudOperations.Create)) continue;
      for (const reference of child.references) {
        const parent = this.#served.get(reference.target());
        if (!parent || !allows(parent.operations, CrudOperations.Create)) continue;
        const clash = parent.nested.entity.field(reference.many)
          ? 'a field'
          : parent.nested.carried({ [reference.many]: true }).length > 0
            ? 'another relation'
            : undefined;
        if (clash) {
          throw new KitError(
            'KIT_ERR_AUTOCRUD_ENTITY',
            `${child.name}.${reference.field} (${className}) names its one-to-many relation '${reference.many}' on ${parent.nested.entity.name}, which is already ${clash} of ${parent.nested.entity.name}; set references: { ${reference.field}: { entity, many: '<name>' } }.`,
          );
        }
        const schema = nestedInputSchema(child, reference.field);
        parent.nested.add({
          name: reference.many,
          entity: child,
          field: reference.field,
          repository: this.database.repository(child),
          validate: compileNested(this.#validation.compiler, schema),
          ...(authorization ? { authorization } : {}),
        });
      }
    }
  }
}
