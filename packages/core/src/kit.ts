import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyTypeProvider,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerBase,
} from 'fastify';
import { AuditTrail, installAuditTrail } from './audit/hooks.js';
import { installJwt } from './auth/authenticate.js';
import type { EndpointSource } from './endpoints/discovery.js';
import { registerEndpointGroups } from './endpoints/mapping.js';
import { installRouteHooks } from './endpoints/route-hooks.js';
import { KitError } from './errors.js';
import { registerOpenApi } from './openapi/document.js';
import { KitOption, resolveOptions } from './options.js';
import { KitRuntime, type KitInstance } from './runtime.js';
import { createServices, resolveEagerSingletons, validateServices } from './services.js';
import { runWarmups } from './warmup.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The running Kit layer, decorated by `addKit`. */
    kit: KitInstance;
  }
}

/** The configure callback of `addKit`. */
export type KitConfigure = (opt: KitOption) => void;

/**
 * A host's Fastify instance, whatever its server, logger or type provider: Fastify's instance
 * type is invariant in them, so `addKit(app)` must be generic to accept `loggerInstance: pino()`.
 */
export type HostInstance<
  S extends RawServerBase = RawServerBase,
  L extends FastifyBaseLogger = FastifyBaseLogger,
  T extends FastifyTypeProvider = FastifyTypeProvider,
> = FastifyInstance<S, RawRequestDefaultExpression<S>, RawReplyDefaultExpression<S>, L, T>;

function runtimeOf(app: FastifyInstance): KitRuntime {
  const kit = (app as { kit?: unknown }).kit;
  if (!(kit instanceof KitRuntime)) {
    throw new KitError('KIT_ERR_NOT_ADDED', 'useKit(app) was called on an instance without Kit: call addKit(app, ...) first.');
  }
  return kit;
}

/**
 * Registers Kit on a Fastify instance (spec `AddKit`): reads and validates the options, creates
 * the service container and decorates `app.kit`. Throws `KIT_ERR_INVALID_OPTION` at once on bad
 * configuration. Routes are mapped by `useKit`.
 *
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
export function addKit<S extends RawServerBase, L extends FastifyBaseLogger, T extends FastifyTypeProvider>(
  app: HostInstance<S, L, T>,
  configure?: KitConfigure,
): KitInstance;
export function addKit<S extends RawServerBase, L extends FastifyBaseLogger, T extends FastifyTypeProvider>(
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
  if (app.hasDecorator('kit')) throw new KitError('KIT_ERR_ALREADY_ADDED', 'addKit(app) was called twice on the same Fastify instance.');
  const sources = Array.isArray(sourcesOrConfigure) ? (sourcesOrConfigure as readonly EndpointSource[]) : undefined;
  const configure = typeof sourcesOrConfigure === 'function' ? sourcesOrConfigure : maybeConfigure;
  if (sourcesOrConfigure !== undefined && !sources && !configure) {
    throw new KitError('KIT_ERR_INVALID_OPTION', 'addKit(app, sources?, configure?): sources must be an array and configure a function.');
  }
  if (configure !== undefined && typeof configure !== 'function') {
    throw new KitError('KIT_ERR_INVALID_OPTION', 'addKit(app, sources, configure): configure must be a function.');
  }

  // 1. Options: the host's callback, then validation; bad configuration stops here.
  const opt = new KitOption();
  configure?.(opt);
  const options = resolveOptions(opt);

  // 2. The running layer and its container.
  const kit = new KitRuntime(app, options, options.container ?? createServices(), sources);
  app.decorate('kit', kit as KitInstance);

  // 3. Root hooks that must see every route added from now on.
  installRouteHooks(app, kit.routes);

  // 4. The host's health checks.
  options.healthChecksConfigure?.(kit.healthChecks);

  // 5. Token validation: app.kitAuthenticate (throws on use without configureJwt), request.user,
  //    the jwt check, and bearer security on guarded routes in the OpenAPI document.
  installJwt(app, options.jwt, kit.healthChecks);

  // 6. The audit trail: correlation ids become request ids (setGenReqId, before any plugin
  //    context exists), one entry per request from a root hook, the queue flushed on close.
  if (options.auditTrail) kit.audit = installAuditTrail(app, options.auditTrail, options.auditSinkFactory, kit.services);
  return kit;
}

/**
 * Wires everything (spec `UseKit`) and opens the readiness gate when done. The order is fixed:
 * OpenAPI document, endpoint groups, plugin loading, operationId check, DI validation, eager
 * singletons, warm-up, gate. Everything that adds routes happens before the first `await`, so a
 * host may `listen()` before this promise settles and watch the start-up state. On failure the
 * gate stays closed and the promise rejects with the cause.
 *
 * @example
 * ```ts
 * const ready = useKit(app);   // routes are registered now
 * await app.listen({ port: 3000 });
 * await ready;                 // warm-up done, /healthz turns 200
 * ```
 */
export async function useKit<S extends RawServerBase, L extends FastifyBaseLogger, T extends FastifyTypeProvider>(
  host: HostInstance<S, L, T>,
): Promise<void> {
  const app = host as unknown as FastifyInstance;
  const kit = runtimeOf(app);
  if (kit.useKitCalled) throw new KitError('KIT_ERR_ALREADY_USED', 'useKit(app) was called twice on the same Fastify instance.');
  kit.useKitCalled = true;
  const { options } = kit;
  try {
    // 1. OpenAPI first: swagger collects routes as they are added.
    registerOpenApi(app, options, kit.routes);
    // 2. One encapsulated plugin per endpoint group.
    registerEndpointGroups(app, kit.sources, options, options.apiPrefix, kit.services, kit.routes);
    // 3. Load the plugin tree: discovery, classes built from the container, routes named.
    await app.after();
    // 4. Every operationId in the document is unique.
    kit.routes.assertUniqueOperationIds();
    // 5. DI validation, then eager singletons.
    validateServices(kit.services);
    resolveEagerSingletons(kit.services, options.eagerSingletons);
    //    The audit sink is built from the container now, so a missing dependency fails start-up.
    if (kit.audit instanceof AuditTrail) kit.audit.start();
    // 6. Warm-up tasks, in parallel, under warmupTimeoutMs.
    await runWarmups(options.warmups, kit.services, options.warmupTimeoutMs);
    // 7. The readiness gate opens.
    kit.healthChecks.seal();
    kit.state = 'ready';
  } catch (err) {
    kit.startupError = err;
    throw err;
  }
}
