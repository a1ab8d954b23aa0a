import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyTypeProvider,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerBase,
} from 'fastify';
import type { IAuditSink } from '../audit/entry.js';
import { AuditTrail, installAuditTrail } from '../audit/hooks.js';
import { installJwt } from '../auth/authenticate.js';
import type { EndpointSource } from '../endpoints/discovery.js';
import { registerEndpointGroups } from '../endpoints/mapping.js';
import { installRouteHooks } from '../endpoints/route-hooks.js';
import { callConfigure, coreErrors, KitError } from '../shared/errors.js';
import { installPhases } from '../lifecycle/phases.js';
import { installGracefulShutdown, trackConnections } from '../lifecycle/shutdown.js';
import { redactError } from '../shared/secrets.js';
import { registerHealthRoutes } from '../health/routes.js';
import { buildHealthChecks } from '../health/runner.js';
import { registerOpenApi } from '../openapi/document.js';
import { registerMetrics } from '../metrics/install.js';
import { installProblemDetails } from '../problem/errors.js';
import { markProblemRoute } from '../problem/openapi.js';
import { KitOption, resolveOptions, type ResolvedKitOptions } from './options.js';
import { KitRuntime, runtimeOf, type KitInstance } from './runtime.js';
import {
  createServices,
  dependencyError,
  resolveEagerSingletons,
  validateServices,
} from '../shared/services.js';
import { registerMemoryStores } from '../stores/memory.js';
import { installClientErrors } from '../problem/client-errors.js';
import { runWarmups } from './warmup.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The running Kit layer, decorated by `addKit`. */
    kit: KitInstance;
  }
}

/**
 * The configure callback of `addKit`.
 *
 * @example
 * ```ts
 * const configure: KitConfigure = (opt) => { opt.apiPrefix = 'v1'; };
 * addKit(app, configure);
 * ```
 */
export type KitConfigure = (opt: KitOption) => void;

/**
 * A host's Fastify instance, whatever its server, logger or type provider: Fastify's instance
 * type is invariant in them, so `addKit(app)` must be generic to accept `loggerInstance: pino()`.
 *
 * @example
 * ```ts
 * function withKit(app: HostInstance) { addKit(app); }
 * withKit(Fastify({ loggerInstance: pino() }));
 * ```
 */
export type HostInstance<
  S extends RawServerBase = RawServerBase,
  L extends FastifyBaseLogger = FastifyBaseLogger,
  T extends FastifyTypeProvider = FastifyTypeProvider,
> = FastifyInstance<S, RawRequestDefaultExpression<S>, RawReplyDefaultExpression<S>, L, T>;

// The host's sink factory runs during useKit: what it throws names the option, not just its own
// message; a registration missing from the container keeps its precise KIT_ERR_DEPENDENCY.
function guardedSinkFactory(
  factory: ResolvedKitOptions['auditSinkFactory'],
): ResolvedKitOptions['auditSinkFactory'] {
  if (factory === undefined) return undefined;
  return (services) =>
    callConfigure('auditSinkFactory', factory, services, (err) =>
      dependencyError(err, 'auditSinkFactory'),
    ) as IAuditSink;
}

/**
 * Registers Kit on a Fastify instance: reads and validates the options, creates
 * the service container and decorates `app.kit`. Throws `KIT_ERR_INVALID_OPTION` at once on bad
 * configuration. Routes are mapped by `useKit`.
 *
 * @param sources Where the endpoint classes are: directories (path or file URL, scanned recursively), classes or module namespaces; default: the `endpoints/` folder beside the entry module.
 * @param configure Sets the options; runs synchronously, before anything is attached to `app`.
 * @throws {KitError} `KIT_ERR_INVALID_OPTION` or `KIT_ERR_UNKNOWN_OPTION` naming the option and value, `KIT_ERR_CONFIGURE_FAILED` when `configure` throws, `KIT_ERR_ALREADY_ADDED` on a second call, `KIT_ERR_DUPLICATE_HEALTH_CHECK` from `healthChecksConfigure`.
 * @example
 * ```ts
 * const app = Fastify({ logger: true });
 * addKit(app, [new URL('./endpoints/', import.meta.url)], (opt) => {
 *   opt.apiPrefix = 'api';
 *   opt.configureAuditTrail();
 * });
 * await useKit(app);
 * await app.listen({ port: 3000 });
 * ```
 */
export function addKit<
  S extends RawServerBase,
  L extends FastifyBaseLogger,
  T extends FastifyTypeProvider,
>(app: HostInstance<S, L, T>, configure?: KitConfigure): KitInstance;
export function addKit<
  S extends RawServerBase,
  L extends FastifyBaseLogger,
  T extends FastifyTypeProvider,
>(
  app: HostInstance<S, L, T>,
  sources: readonly EndpointSource[],
  configure?: KitConfigure,
): KitInstance;
export function addKit(
  host: HostInstance,
  sourcesOrConfigure?: readonly EndpointSource[] | KitConfigure,
  maybeConfigure?: KitConfigure,
): KitInstance {
  const app = host as unknown as FastifyInstance;
  if (app.hasDecorator('kit')) throw coreErrors.error('KIT_ERR_ALREADY_ADDED');
  const sources = Array.isArray(sourcesOrConfigure)
    ? (sourcesOrConfigure as readonly EndpointSource[])
    : undefined;
  const configure = typeof sourcesOrConfigure === 'function' ? sourcesOrConfigure : maybeConfigure;
  if (sourcesOrConfigure !== undefined && !sources && !configure) {
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      'addKit(app, sources?, configure?): sources must be an array and configure a function.',
    );
  }
  if (configure !== undefined && typeof configure !== 'function') {
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      'addKit(app, sources, configure): configure must be a function.',
    );
  }

  // 1. Options: the host's callback, then validation; bad configuration stops here.
  const opt = new KitOption();
  if (configure) callConfigure('addKit(app, configure)', configure, opt);
  const options = resolveOptions(opt);

  // 2. The running layer, its container and the host's health checks: a duplicate check name
  //    throws here, before anything is attached to the instance, so addKit can be retried.
  const kit = new KitRuntime(app, options, options.container ?? createServices(), sources);
  if (options.healthChecksConfigure)
    callConfigure('healthChecksConfigure', options.healthChecksConfigure, kit.healthChecks);
  app.decorate('kit', kit as KitInstance);
  //    The phases (lifecycle/phases.ts, docs/lifecycle.md) run from here on in their documented
  //    order however the app closes. Readiness is the first `unready` step, so an app closed by
  //    app.close() is shutting down too: app.kit.state tells the truth and a late probe gets 503.
  installPhases(app, kit.phases);
  trackConnections(kit);
  kit.phases.add('unready', {
    name: 'readiness',
    run: () => {
      kit.state = 'shuttingDown';
    },
  });

  // 3. Root hooks that must see every route added from now on: route tracking for the
  //    operationId check, then the OpenAPI collector.
  installRouteHooks(app, kit.routes);
  registerOpenApi(app, options, kit.routes);
  // Requests Node's parser refuses (431, 408, 400) answer problem details too (opt.problemDetails).
  if (options.problemDetails) installClientErrors(app);

  // 4. Token validation: app.kitAuthenticate (throws on use without configureJwt), request.user,
  //    the jwt check, and bearer security on guarded routes in the OpenAPI document.
  installJwt(app, options.jwt, kit.healthChecks, kit.phases);

  // 5. In-memory store defaults under KitStoreNames, unless the host's container already has them.
  registerMemoryStores(kit.services);

  // 6. The audit trail: correlation ids become request ids (setGenReqId, before any plugin
  //    context exists), one entry per request from a root hook (after the %40 hook of step 3,
  //    which must stay first), the queue written by a `flush` step when the app closes.
  if (options.auditTrail)
    kit.audit = installAuditTrail(
      app,
      options.auditTrail,
      guardedSinkFactory(options.auditSinkFactory),
      kit.services,
      kit.phases,
    );

  // 7. `ready`: useKit must run its synchronous part before the plugin tree loads; without it the
  //    server would listen with no Kit route at all and answer every request 404. Plugins added
  //    between addKit and useKit add their `ready` steps after this one, useKit its own last.
  kit.phases.add('ready', {
    name: 'useKit called',
    run: () => {
      kit.instanceReady = true;
      if (!kit.useKitCalled) throw coreErrors.error('KIT_ERR_USE_KIT_MISSING');
    },
  });
  return kit;
}

/**
 * Wires everything and opens the readiness gate when done. The order is fixed:
 * probe (and metrics) routes and shutdown handling, endpoint groups, plugin loading, operationId
 * check, DI validation, eager singletons, audit sink, metrics, health checks, warm-up, gate. Everything that adds routes happens
 * before the first `await`, so a
 * host may `listen()` before this promise settles and watch the start-up state. On failure the
 * gate stays closed and the promise rejects with the cause.
 *
 * @returns A promise that resolves when the readiness gate opens; routes exist as soon as it is returned.
 * @throws {KitError} As a rejection: `KIT_ERR_NOT_ADDED`, `KIT_ERR_ALREADY_USED`, and whatever a start-up step fails with (`KIT_ERR_DEPENDENCY`, `KIT_ERR_DUPLICATE_OPERATION_ID`, `KIT_ERR_WARMUP_TIMEOUT`, …); the gate stays closed.
 * @example
 * ```ts
 * const ready = useKit(app);   // routes are registered now
 * await app.listen({ port: 3000 });
 * await ready;                 // warm-up done, /healthz turns 200
 * ```
 */
export function useKit<
  S extends RawServerBase,
  L extends FastifyBaseLogger,
  T extends FastifyTypeProvider,
>(host: HostInstance<S, L, T>): Promise<void> {
  const app = host as unknown as FastifyInstance;
  let kit: KitRuntime;
  try {
    kit = runtimeOf(app);
    if (kit.useKitCalled)
      throw new KitError(
        'KIT_ERR_ALREADY_USED',
        'useKit(app) was called twice on the same Fastify instance.',
      );
    if (kit.instanceReady) {
      throw new KitError(
        'KIT_ERR_ALREADY_USED',
        'useKit(app) was called after app.ready() or app.listen(): call it before, so its routes and hooks can be added.',
      );
    }
  } catch (err) {
    return Promise.reject(err);
  }
  kit.useKitCalled = true;
  const run = startKit(app, kit);
  // The documented pattern listens before awaiting this promise: a failure must neither be an
  // unhandled rejection that kills the process, nor go unexplained while /healthz stays 503.
  run.catch((err: unknown) =>
    app.log.error(
      { err: redactError(err) },
      'Kit start-up failed; the readiness gate stays closed',
    ),
  );
  return run;
}

async function startKit(app: FastifyInstance, kit: KitRuntime): Promise<void> {
  const { options } = kit;
  try {
    // 1. Probe routes and shutdown handling, before the first await: a host that listens before
    //    this promise settles sees /healthz 503 `startup` while the steps below run.
    const health = registerHealthRoutes(app, kit);
    const metrics = options.metrics && registerMetrics(app, options.metrics);
    installGracefulShutdown(app, kit);
    // 2. One encapsulated plugin per endpoint group, inside one scope of Kit's whose error
    //    handler and 404 answer problem details (opt.problemDetails); the host's own root routes
    //    and error handler are left alone.
    app.register(async function kitRoutes(scope) {
      if (options.problemDetails) {
        installProblemDetails(scope);
        scope.addHook('onRoute', markProblemRoute);
      }
      registerEndpointGroups(
        scope,
        kit.sources,
        options,
        options.apiPrefix,
        kit.services,
        kit.routes,
      );
    });
    // Routes may still be added after useKit; the check runs again in the `ready` phase.
    kit.phases.add('ready', {
      name: 'unique operationIds',
      run: () => kit.routes.assertUniqueOperationIds(),
    });
    // 3. Load the plugin tree: discovery, classes built from the container, routes named.
    await app.after();
    // 4. Every operationId in the document is unique.
    kit.routes.assertUniqueOperationIds();
    // 5. DI validation, then eager singletons.
    await validateServices(kit.services);
    resolveEagerSingletons(kit.services, options.eagerSingletons);
    //    The audit sink is built from the container now, so a missing dependency fails start-up.
    if (kit.audit instanceof AuditTrail) kit.audit.start();
    // 6. Metrics (prom-client loaded, Kit's metrics defined), then the health checks: classes
    //    built from the container (a missing dependency fails here), builder sealed.
    const observe = metrics
      ? await metrics.start(kit.audit.enabled ? kit.audit : undefined)
      : undefined;
    health.useRunner(buildHealthChecks(kit.healthChecks, kit.services, app.log, observe));
    // 7. Warm-up tasks, in parallel, under warmupTimeoutMs.
    await runWarmups([...options.warmups, ...kit.warmups], kit.services, options.warmupTimeoutMs);
    // 8. The readiness gate opens, unless a shutdown began during start-up.
    if (kit.state === 'starting') kit.state = 'ready';
  } catch (err) {
    kit.startupError = err;
    throw err;
  }
}
