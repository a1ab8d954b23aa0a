// `addKitAutoCrud`: registers the app's AutoCrud database between `addKit` and `useKit`, its
// health checks, the handle in the container, and its steps in the app's lifecycle (relations
// linked at ready, the outbox flushed, the database released). The handle's interface is in
// kit-autocrud.ts, what it does in runtime.ts, where the database is in connection.ts.
import { asValue } from 'awilix';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyTypeProvider,
  RawServerBase,
} from 'fastify';
import { onPhase } from '@kit/core/extend';
import { KitError, type HostInstance, type KitServices } from '@kit/core';
import { autoCrudErrors } from './errors.js';
import { DatabaseHealthCheck } from './health.js';
import { Database, type DatabaseLog } from './mapper/database.js';
import { migrateEngine } from './mapper/migrations/migrations.js';
import { resolveOptions, type KitAutoCrudOptions } from './options.js';
import { Outbox, OutboxHealthCheck } from './outbox/outbox.js';
import { prepareOutbox } from './mapper/outbox/outbox-table.js';
import { createEngine, targetOf, type PGliteInstance } from './connection.js';
import { KIT_AUTOCRUD, type AutoCrudContributor, type KitAutoCrud } from './kit-autocrud.js';
import { AutoCrudRuntime } from './runtime.js';

export { KIT_AUTOCRUD, type AutoCrudClassSettings, type KitAutoCrud } from './kit-autocrud.js';
export type { PGliteInstance } from './connection.js';

// The AutoCrud database of each Kit app, by the app's container (the container @AutoCrud's
// contributor receives): the seam between the decorator and addKitAutoCrud.
const runtimes = new WeakMap<KitServices, AutoCrudContributor>();

/**
 * The AutoCrud database `addKitAutoCrud` set up for the app whose container is `services`, for
 * `@AutoCrud`'s contributor. Throws `KIT_ERR_AUTOCRUD_NOT_ADDED` naming the class when there is
 * none, or when another copy of `@kit/autocrud` registered it.
 *
 * @example
 * ```ts
 * const routes = autoCrudFor(context.services, context.className).routesFor(group, context, Product, settings);
 * ```
 */
export function autoCrudFor(services: KitServices, className: string): AutoCrudContributor {
  const runtime = runtimes.get(services);
  if (runtime) return runtime;
  const elsewhere = services.hasRegistration(KIT_AUTOCRUD)
    ? ` One is registered, by another copy of @kit/autocrud: import AutoCrud and addKitAutoCrud from the same copy (npm ls @kit/autocrud).`
    : '';
  throw autoCrudErrors.error('KIT_ERR_AUTOCRUD_NOT_ADDED', { className, elsewhere });
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
