import { asValue } from 'awilix';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyTypeProvider,
  RawServerBase,
  RouteOptions,
} from 'fastify';
import { onPhase } from '@kit/core/extend';
import {
  KitError,
  KitStoreNames,
  type HostInstance,
  type IIdempotencyStore,
  type KitServices,
  type PlannedEndpoint,
  type RouteContributorContext,
} from '@kit/core';
import { autoCrudErrors } from './errors.js';
import { allows, CrudOperations } from './operations.js';
import { cursorCodec, type CursorCodec } from './routes/cursor.js';
import type { ResolvedAuthorization } from './authorization.js';
import type { Entity, EntityInput, EntityRow } from './entity.js';
import { DatabaseHealthCheck } from './health.js';
import type { PGlite } from '@electric-sql/pglite';
import {
  parseConnectionString,
  pgliteInstanceTarget,
  type ConnectionTarget,
} from './mapper/engines/shared/connection-string.js';
import { Database, type DatabaseLog } from './mapper/database.js';
import type { Engine, EngineKind } from './mapper/sql/engine.js';
import { migrateEngine } from './mapper/migrations/migrations.js';
import { createEngine as createEngineFor } from './mapper/engines/create.js';
import type { EntityRepository } from './repository.js';
import {
  checkReservation,
  resolveIdempotency,
  resolveOptions,
  type IdempotencyOptions,
  type KitAutoCrudOptions,
  type ResolvedAutoCrudOptions,
} from './options.js';
import { crudRoutes } from './routes/routes.js';
import { batchPatchSchema, inputSchema, patchSchema, rowSchema } from './routes/schemas.js';
import { acceptMergePatch } from './routes/body.js';
import { createValidation, type CrudValidation } from './routes/validation.js';
import { includePaths, readIncludes, relationProperties } from './routes/includes.js';
import type { IncludePlan, RelatedSource } from './mapper/reads/includes.js';
import { buildRelations, includeRelations, reachable, type RelationRegistry } from './relations.js';
import { compileNested, NestedRelations, nestedInputSchema } from './routes/nested-create.js';
import { Outbox, OutboxHealthCheck } from './outbox/outbox.js';
import { prepareOutbox } from './mapper/outbox/outbox-table.js';
import type { ChangeHandler, OutboxStats } from './outbox/types.js';
import { ChangeHistory } from './mapper/history/history.js';

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

/** A class's own settings, as the runtime receives them (`undefined`: the global option applies). */
export interface AutoCrudClassSettings {
  readonly operations: number;
  readonly idempotency: boolean | IdempotencyOptions | undefined;
  readonly requireIfMatch: boolean | undefined;
  /** The class's authorization rules, checked; absent: none. */
  readonly authorization?: ResolvedAuthorization;
}

/** What `@AutoCrud`'s route contributor asks of the app's AutoCrud database. */
interface AutoCrudContributor {
  routesFor(
    group: FastifyInstance,
    context: RouteContributorContext,
    entity: Entity,
    settings: AutoCrudClassSettings,
  ): RouteOptions[];
}

// The AutoCrud database of each Kit app, by the app's container (the container @AutoCrud's
// contributor receives): the seam between the decorator and addKitAutoCrud.
const runtimes = new WeakMap<KitServices, AutoCrudContributor>();

/**
 * The AutoCrud database `addKitAutoCrud` set up for the app whose container is `services`, for
 * `@AutoCrud`'s contributor. Throws `KIT_ERR_AUTOCRUD_NOT_ADDED` naming the class when there is
 * none, or when another copy of `@kit/autocrud` registered it.
 */
export function autoCrudFor(services: KitServices, className: string): AutoCrudContributor {
  const runtime = runtimes.get(services);
  if (runtime) return runtime;
  const elsewhere = services.hasRegistration(KIT_AUTOCRUD)
    ? ` One is registered, by another copy of @kit/autocrud: import AutoCrud and addKitAutoCrud from the same copy (npm ls @kit/autocrud).`
    : '';
  throw autoCrudErrors.error('KIT_ERR_AUTOCRUD_NOT_ADDED', { className, elsewhere });
}

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

class AutoCrudRuntime implements KitAutoCrud, AutoCrudContributor {
  readonly #validation: CrudValidation = createValidation();
  /** Every entity served, by entity: its children are linked once all are known (`linkRelations`). */
  readonly #served = new Map<Entity, Served>();
  /** Component names in the document, by entity: two entities may not share one. */
  readonly #components = new Map<string, Entity>();
  readonly #cursors: CursorCodec;
  #warnedCursors = false;
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
    return planned && 'nodes' in planned ? planned.nodes : [];
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
        ? { idempotency: { ...idempotency, store: idempotencyStore(context, entity) } }
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

/**
 * A PGlite instance the host made, passed to `addKitAutoCrud` instead of a connection string.
 * Typed by shape, not by PGlite's class: PGlite's own declarations need `@types/emscripten`,
 * which it does not depend on, so naming its class here would break `skipLibCheck: false`
 * builds of every host; and two copies of PGlite may be installed.
 *
 * @example
 * ```ts
 * import { PGlite } from '@electric-sql/pglite';
 * const db = new PGlite('./data');
 * addKitAutoCrud(app, db);           // the host closes db itself
 * ```
 */
export interface PGliteInstance {
  query(...args: never[]): Promise<unknown>;
  readonly waitReady: Promise<void>;
  close(): Promise<void>;
}

/** A PGlite instance the host made (duck-typed: two copies of PGlite may be installed). */
function isPGlite(value: unknown): value is PGliteInstance {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as PGliteInstance).query === 'function' &&
    'waitReady' in value
  );
}

function targetOf(url: string | URL | PGliteInstance): ConnectionTarget {
  if (isPGlite(url)) return pgliteInstanceTarget();
  return parseConnectionString(url instanceof URL ? url.href : url);
}

function createEngine(
  url: string | URL | PGliteInstance,
  options: ResolvedAutoCrudOptions,
  log: FastifyBaseLogger,
): Engine {
  return createEngineFor(targetOf(url), isPGlite(url) ? (url as unknown as PGlite) : undefined, {
    poolSize: options.poolSize,
    connectTimeoutMs: options.connectTimeoutMs,
    acquireTimeoutMs: options.acquireTimeoutMs,
    statementTimeoutMs: options.statementTimeoutMs,
    onIdleError: (reason) =>
      log.debug(
        { reason },
        'AutoCrud: a PostgreSQL connection failed outside a statement and was dropped',
      ),
    onStarted: (facts) => log.info(facts, 'AutoCrud: PGlite started in its worker thread'),
  });
}

/**
 * Registers the AutoCrud database (call it between `addKit` and `useKit`): `@AutoCrud` classes
 * get their routes from it, the `database` health check (tag `ready`) is added by itself, and the
 * {@link KitAutoCrud} handle is registered as `kitAutoCrud`. The engine comes from `url`:
 * `postgres://…`, `pglite:` / `pglite:<dir>` (embedded, no server), `sqlite::memory:` /
 * `sqlite:<file>` (Node >= 22.13), or a `PGlite` instance the host made (and closes itself). During `app.ready()` the tables are checked (or created with
 * `createTables`): a missing table or column fails start-up naming it. A PostgreSQL server that
 * cannot be reached does not: start-up waits up to `connectTimeoutMs`, then the routes answer 503
 * with `Retry-After` and the check is unhealthy until it answers. Closed as a `release` step
 * of the app's shutdown, after the audit trail's flush.
 *
 * @param url The connection string (`postgres://…`, `pglite:`, `pglite:<dir>`, `sqlite::memory:`, `sqlite:<file>`), or a PGlite instance the host made and closes.
 * @throws {KitError} `KIT_ERR_NOT_ADDED` before `addKit`, `KIT_ERR_AUTOCRUD_ALREADY_ADDED` on a second call, `KIT_ERR_AUTOCRUD_TOO_LATE` after `useKit`, `KIT_ERR_INVALID_OPTION` for a bad option or connection string, `KIT_ERR_AUTOCRUD_SQLITE_UNSUPPORTED` for `sqlite:` on a Node without `node:sqlite`, `KIT_ERR_DUPLICATE_HEALTH_CHECK` when its check's name is taken.
 * @example
 * ```ts
 * const app = Fastify({ logger: true });
 * addKit(app, [new URL('./endpoints/', import.meta.url)]);
 * addKitAutoCrud(app, process.env.DATABASE_URL ?? 'pglite:', { createTables: true });
 * await useKit(app);
 * await app.listen({ port: 3000 });
 * ```
 */
export function addKitAutoCrud<
  S extends RawServerBase,
  L extends FastifyBaseLogger,
  T extends FastifyTypeProvider,
>(
  host: HostInstance<S, L, T>,
  url: string | URL | PGliteInstance,
  options: KitAutoCrudOptions = {},
): KitAutoCrud {
  const app = host as unknown as FastifyInstance;
  if (!app.hasDecorator('kit')) {
    throw new KitError(
      'KIT_ERR_NOT_ADDED',
      'addKitAutoCrud(app, url) was called on an instance without Kit: call addKit(app, ...) first.',
    );
  }
  if (app.kit.services.hasRegistration(KIT_AUTOCRUD)) {
    throw autoCrudErrors.error('KIT_ERR_AUTOCRUD_ALREADY_ADDED');
  }
  if (app.kit.state !== 'starting') {
    throw autoCrudErrors.error('KIT_ERR_AUTOCRUD_TOO_LATE');
  }
  const resolved = resolveOptions(options);
  const log = app.log.child({ kit: 'autocrud' });
  const engine = createEngine(url, resolved, log);
  const migrations = resolved.migrations;
  const migrate =
    migrations &&
    (async () => {
      const { applied } = await migrateEngine(engine, migrations.dir, migrations.lockTimeoutMs);
      log.info(
        { applied, migrationsDir: migrations.dir },
        applied.length > 0
          ? `AutoCrud applied ${applied.length} migration(s)`
          : 'AutoCrud migrations: none to apply',
      );
    });
  const database = new Database(
    engine,
    resolved.createTables,
    log as DatabaseLog,
    {
      acquireTimeoutMs: resolved.acquireTimeoutMs,
      statementTimeoutMs: resolved.statementTimeoutMs,
    },
    migrate,
  );
  const outbox =
    resolved.outbox &&
    new Outbox(
      (query, signal) => database.run(query, signal),
      engine.dialect,
      resolved.outbox,
      log,
    );
  const runtime = new AutoCrudRuntime(database, targetOf(url).redacted, resolved, log, outbox);
  try {
    app.kit.healthChecks.addCheck(
      resolved.healthCheck.name,
      new DatabaseHealthCheck({ kitAutoCrud: runtime }),
      {
        tags: resolved.healthCheck.tags,
        timeoutMs: resolved.healthCheck.timeoutMs,
      },
    );
    if (outbox)
      app.kit.healthChecks.addCheck('outbox', new OutboxHealthCheck(outbox), {
        tags: ['outbox'],
        timeoutMs: resolved.healthCheck.timeoutMs,
      });
  } catch (err) {
    void engine.close();
    throw err;
  }
  app.kit.services.register({ [KIT_AUTOCRUD]: asValue(runtime) });
  runtimes.set(app.kit.services, runtime);
  // A `ready` step: every @AutoCrud class has made its routes by now, so a parent's create learns its children.
  onPhase(app, 'ready', 'autocrud relations', () => runtime.linkRelations());

  // The database opens (PGlite starts, the tables are checked) as a warm-up of useKit: a host that
  // listens before useKit settles serves /livez at once and /healthz 503 `startup` meanwhile, and
  // a database that cannot open, or tables that do not fit, fail start-up. PGlite's first start
  // can take long on a loaded machine: past 80% of warmupTimeoutMs start-up goes on with a
  // warning rather than failing, calls wait for that first start, and the check reports it.
  const budgetMs = Math.floor(app.kit.options.warmupTimeoutMs * 0.8);
  app.kit.addWarmup(async () => {
    // The budget's timer first: opening does synchronous work (a worker thread, the lock) before its first await.
    let timer: NodeJS.Timeout | undefined;
    const slow = new Promise<'slow'>((resolve) => (timer = setTimeout(resolve, budgetMs, 'slow')));
    const started = database.start();
    const outcome = await Promise.race([started, slow]).finally(() => clearTimeout(timer));
    if (outcome === 'slow') {
      log.warn(
        { database: runtime.url, waitedMs: budgetMs },
        'AutoCrud database still starting; serving anyway: its routes wait for it, and the check reports it',
      );
      started.then(
        (ok) => log.info({ ready: ok }, 'AutoCrud database start finished'),
        (err: unknown) =>
          log.error({ err }, 'AutoCrud database could not start; its routes answer 503'),
      );
    } else if (!outcome) {
      log.warn(
        { database: runtime.url },
        'AutoCrud database not reachable at start-up; serving anyway: its routes answer 503 and the check is unhealthy until it is',
      );
    }
  });
  if (outbox) {
    database.addTables(prepareOutbox);
    // After the history's layer, on every entity made before and after: every write of every entity.
    database.use(outbox.layer);
    onPhase(app, 'ready', 'autocrud outbox', () => outbox.start());
    // A `flush` step: after the drain (no request writes any more), before the database closes.
    // What is left stays in kit_outbox for the next instance.
    onPhase(app, 'flush', 'autocrud outbox', () => outbox.dispatcher.stop());
  }
  // A `release` step: after the `flush` steps (the audit trail, an outbox), which may still write to it.
  onPhase(app, 'release', 'autocrud database', () => database.close());
  return runtime;
}
