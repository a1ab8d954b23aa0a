import type { FastifyInstance, RouteOptions } from 'fastify';
import { KitError } from '../shared/errors.js';
import { ROUTE_PATTERN } from '../shared/route-pattern.js';
import { buildService, type KitServices } from '../shared/services.js';
import { routeKey } from './contributors.js';
import { discoverEndpointClasses, type DiscoveredClass, type EndpointSource } from './discovery.js';
import { groupNameFromClass, type NamingRules } from './naming.js';
import {
  operationIdFor,
  relativeRoutePath,
  toFastifyParams,
  type RouteTable,
} from './operation-ids.js';
import {
  groupRequirements,
  markGroupSecurity,
  mergeSecuritySchemes,
  SECURITY_SCHEMES_MARK,
  type SecuritySchemeObject,
} from '../shared/security-schemes.js';
import type { EndpointClass, IKitEndpoint, PlannedEndpoint } from './types.js';

/** One route group: its name (URL segment and default tag), URL prefix, tags and classes. */
interface GroupPlan {
  readonly name: string;
  readonly prefix: string;
  /** `@KitTag` tags merged across the classes in declaration order; empty means `[name]`. */
  readonly tags: string[];
  readonly classes: DiscoveredClass[];
  /** Security schemes declared with `@EndpointGroup(name, { security })`, merged; `undefined` when none declared any. */
  security?: Record<string, SecuritySchemeObject>;
}

/** Groups classes by explicit `@EndpointGroup` name or by the name derived from the class name. */
function planGroups(
  classes: readonly DiscoveredClass[],
  rules: NamingRules,
  apiPrefix: string,
): GroupPlan[] {
  const groups = new Map<string, GroupPlan>();
  const schemeOwners = new Map<string, { where: string; json: string }>();
  for (const found of classes) {
    const { cls, meta } = found;
    const name = meta.group ?? groupNameFromClass(meta.sourceName ?? cls.name, rules);
    let group = groups.get(name);
    if (!group) {
      group = {
        name,
        prefix: apiPrefix ? `/${apiPrefix}/${name}` : `/${name}`,
        tags: [],
        classes: [],
      };
      groups.set(name, group);
    }
    group.classes.push(found);
    for (const tag of meta.tags) if (!group.tags.includes(tag)) group.tags.push(tag);
    if (meta.security)
      mergeSecuritySchemes(
        (group.security ??= {}),
        meta.security,
        `class ${meta.sourceName ?? cls.name} (group ${name})`,
        schemeOwners,
      );
  }
  return [...groups.values()];
}

const warnedLegacy = new WeakSet<EndpointClass>();

function warnLegacy(cls: EndpointClass, name: string): void {
  if (warnedLegacy.has(cls)) return;
  warnedLegacy.add(cls);
  process.emitWarning(
    `@KitEndpoint class ${name} uses the attribute-based endpoint style, deprecated since @kit/core 0.1.0 and to be removed in @kit/core 0.2.0. Implement IKitEndpoint (addRoutes(app)) instead.`,
    { type: 'DeprecationWarning', code: 'KIT_DEP_KIT_ENDPOINT' },
  );
}

type SchemaWithIds = { operationId?: string; tags?: string[] } & Record<string, unknown>;

/**
 * Rewrites a group's routes: relative paths under the prefix, `{id}` params, tags and operationId.
 * Returns the path relative to the group.
 */
function nameRoute(route: RouteOptions, group: GroupPlan, table: RouteTable): string {
  const given = (route as RouteOptions & { routePath?: string }).routePath ?? '';
  // A plugin registered inside addRoutes adds its own prefix below the group's.
  const prefix = (route as RouteOptions & { prefix?: string }).prefix ?? group.prefix;
  const own = relativeRoutePath(given);
  const relative = [relativeRoutePath(prefix.slice(group.prefix.length)), own]
    .filter((p) => p !== '')
    .join('/');
  // Inside a prefixed context Fastify joins 'profile' as '/api/userprofile'; the root ('' and '/') is right already.
  if (own !== '') route.url = `${prefix}/${toFastifyParams(given.replace(/^\/+/, ''))}`;
  (route as RouteOptions & { path?: string }).path = route.url;
  // Fastify's config.url was computed before this hook: keep the pattern the route really has.
  route.config = Object.assign({ ...route.config }, { [ROUTE_PATTERN]: route.url });

  const schema: SchemaWithIds = { ...(route.schema as SchemaWithIds | undefined) };
  // A hand-set schema.operationId (or config.operationId, copied by the root hook) wins.
  if (typeof schema.operationId !== 'string' || schema.operationId === '') {
    schema.operationId =
      Array.isArray(route.method) && route.method.length > 1
        ? table.multiMethodId(group.name, relative)
        : operationIdFor(
            group.name,
            Array.isArray(route.method) ? (route.method[0] as string) : route.method,
            relative,
          );
  }
  schema.tags ??= group.tags.length > 0 ? [...group.tags] : [group.name];
  if (group.security) {
    // The schemes travel to the document with the operation; the requirement only where the host set none.
    schema[SECURITY_SCHEMES_MARK] = group.security;
    if (schema.security === undefined) {
      schema.security = groupRequirements(group.security);
      markGroupSecurity(route);
    }
  }
  route.schema = schema;
  return relative;
}

function methodsOf(route: Pick<RouteOptions, 'method'>): string[] {
  return (Array.isArray(route.method) ? route.method : [route.method]) as string[];
}

/** A route a contributor describes, with the class it came from. */
interface ContributedRoute {
  readonly route: RouteOptions;
  /** Its method-and-path keys (see `routeKey`). */
  readonly keys: readonly string[];
}

/**
 * Runs the group's route contributors, before its `addRoutes`, so that a hand-written route
 * replacing a contributed one can keep that route's guard (see {@link guardReplacements}).
 */
async function collectContributedRoutes(
  ctx: FastifyInstance,
  group: GroupPlan,
  services: KitServices,
  endpoints: readonly PlannedEndpoint[],
): Promise<ContributedRoute[]> {
  const routes: ContributedRoute[] = [];
  for (const { cls, meta } of group.classes) {
    if (meta.contributors.length === 0) continue;
    const className = meta.sourceName ?? cls.name;
    for (const contribute of meta.contributors) {
      for (const route of await contribute(ctx, {
        className,
        group: group.name,
        prefix: group.prefix,
        services,
        endpoints,
      })) {
        const relative = relativeRoutePath(route.url);
        routes.push({ route, keys: methodsOf(route).map((method) => routeKey(method, relative)) });
      }
    }
  }
  return routes;
}

/**
 * Registers the contributed routes, leaving out every method the group's hand-written routes
 * already serve at that path: a hand-written route wins. Runs after all the group's `addRoutes`
 * (and the plugins they registered), so "already" covers the whole group whatever the class order.
 */
function addContributedRoutes(
  ctx: FastifyInstance,
  contributed: readonly ContributedRoute[],
  declared: ReadonlySet<string>,
): void {
  for (const { route } of contributed) {
    const relative = relativeRoutePath(route.url);
    const free = methodsOf(route).filter((method) => !declared.has(routeKey(method, relative)));
    if (free.length === 0) continue;
    ctx.route(free.length === methodsOf(route).length ? route : { ...route, method: free });
  }
}

type Hook =
  NonNullable<RouteOptions['onRequest']> extends infer H
    ? H extends readonly (infer F)[]
      ? F
      : H
    : never;

function hooksOf(value: RouteOptions['onRequest']): Hook[] {
  return value === undefined ? [] : Array.isArray(value) ? [...(value as Hook[])] : [value as Hook];
}

/**
 * The guard a hand-written route keeps when it replaces a contributed route: the contributed
 * route's `onRequest` hooks (an AutoCrud group's `app.kitAuthenticate` under
 * requireAuthorization), run before the route's own. A route opts out with
 * `config: { kitPublic: true }`. By method-and-path key.
 */
function guardReplacements(
  contributed: readonly ContributedRoute[],
): (route: RouteOptions, keys: readonly string[]) => void {
  const guards = new Map<string, Hook[]>();
  for (const { route, keys } of contributed) {
    const hooks = hooksOf(route.onRequest);
    if (hooks.length > 0) for (const key of keys) guards.set(key, hooks);
  }
  return (route, keys) => {
    if (
      guards.size === 0 ||
      (route.config as { kitPublic?: unknown } | undefined)?.kitPublic === true
    )
      return;
    const own = hooksOf(route.onRequest);
    const guard = [...new Set(keys.flatMap((key) => guards.get(key) ?? []))].filter(
      (hook) => !own.includes(hook),
    );
    if (guard.length > 0) route.onRequest = [...guard, ...own];
  };
}

async function addClassRoutes(
  ctx: FastifyInstance,
  { cls, meta }: DiscoveredClass,
  services: KitServices,
): Promise<void> {
  const className = meta.sourceName ?? cls.name;
  const instance = buildService(services, cls, className) as Partial<IKitEndpoint> &
    Record<string | symbol, unknown>;
  if (meta.legacy) {
    warnLegacy(cls, className);
    for (const route of meta.legacyRoutes) {
      const method = instance[route.key];
      if (typeof method !== 'function') {
        throw new KitError(
          'KIT_ERR_INVALID_ROUTE',
          `@KitMethod ${className}.${String(route.key)} is not a method.`,
        );
      }
      ctx.route({
        method: route.method,
        url: route.path,
        handler(request, reply) {
          return (method as (...args: unknown[]) => unknown).call(instance, request, reply);
        },
      });
    }
  }
  if (typeof instance.addRoutes === 'function') await instance.addRoutes(ctx);
}

/**
 * Registers one Fastify plugin per group, so every class of a group shares one encapsulation
 * context: a hook any of them adds applies to all the group's routes and to no other group.
 */
export function registerEndpointGroups(
  app: FastifyInstance,
  sources: readonly EndpointSource[] | undefined,
  rules: NamingRules,
  apiPrefix: string,
  services: KitServices,
  table: RouteTable,
): void {
  app.register(async function kitEndpoints(root) {
    const groups = planGroups(await discoverEndpointClasses(sources), rules, apiPrefix);
    // Every class with its group, for contributors whose routes depend on other classes.
    const endpoints: readonly PlannedEndpoint[] = Object.freeze(
      groups.flatMap((group) =>
        group.classes.map(({ cls, meta }) =>
          Object.freeze({
            cls,
            className: meta.sourceName ?? cls.name,
            group: group.name,
            prefix: group.prefix,
          }),
        ),
      ),
    );
    for (const group of groups) {
      const plugin = async function kitGroup(ctx: FastifyInstance): Promise<void> {
        const declared = new Set<string>();
        const contributed = await collectContributedRoutes(ctx, group, services, endpoints);
        const keepGuard = guardReplacements(contributed);
        let handWritten = true;
        ctx.addHook('onRoute', (route) => {
          const relative = nameRoute(route, group, table);
          const keys = methodsOf(route).map((method) => routeKey(method, relative));
          if (handWritten) keepGuard(route, keys);
          for (const key of keys) declared.add(key);
        });
        for (const found of group.classes) await addClassRoutes(ctx, found, services);
        // Plugins registered inside addRoutes load now, so their routes count as declared too.
        await ctx.after();
        handWritten = false;
        // A copy: two contributors describing the same route is a mistake Fastify reports.
        addContributedRoutes(ctx, contributed, new Set(declared));
      };
      // A display name spares Fastify a scan of require.cache per plugin (measurable at 1,000
      // groups) and names the group in app.printPlugins().
      Object.defineProperty(plugin, Symbol.for('fastify.display-name'), {
        value: `kit-group ${group.name}`,
      });
      root.register(plugin, { prefix: group.prefix });
    }
  });
}
