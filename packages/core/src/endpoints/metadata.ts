// What Kit's class decorators record on an endpoint class, and the one function that reads it.
// Discovery reads a class's metadata once and hands it on with the class: grouping, route mapping
// and the route contributors all use that one reading.
import type { KitHttpMethod } from '../shared/enums.js';
import type { SecuritySchemeObject } from '../shared/security-schemes.js';
import type { RouteContributor } from './types.js';

// Node 20 has no Symbol.metadata; TypeScript's and esbuild's decorator helpers only attach
// metadata when it exists, so it must be defined before any decorated class is evaluated, that is,
// here, in the module every Kit decorator imports. Symbol.for matches esbuild's own fallback.
(Symbol as { metadata?: symbol }).metadata ??= Symbol.for('Symbol.metadata');

// Registered symbols: a class decorated through one copy of @kit/core (src and dist, or two
// versions in one tree) is still read by another.
export const GROUP = Symbol.for('kit.endpoint.group');
export const TAGS = Symbol.for('kit.endpoint.tags');
export const LEGACY = Symbol.for('kit.endpoint.legacy');
export const NAME = Symbol.for('kit.endpoint.className');
export const ROUTES = Symbol.for('kit.endpoint.routes');
export const SECURITY = Symbol.for('kit.endpoint.security');
export const CONTRIBUTORS = Symbol.for('kit.endpoint.routeContributors');

/** A decorator context's metadata object. */
export type Metadata = Record<PropertyKey, unknown>;

/** A route declared with the deprecated `@KitMethod`. */
export interface LegacyRoute {
  readonly path: string;
  readonly method: KitHttpMethod;
  readonly key: string | symbol;
}

/** What the decorators recorded on a class. */
export interface EndpointMetadata {
  /** The class name as written in source (from the decorator context, immune to bundler renaming). */
  readonly sourceName: string | undefined;
  readonly group: string | undefined;
  readonly tags: readonly string[];
  readonly legacy: boolean;
  readonly legacyRoutes: readonly LegacyRoute[];
  /** The `security` option of `@EndpointGroup`, when given. */
  readonly security: Readonly<Record<string, SecuritySchemeObject>> | undefined;
  /** The route contributors attached with `@KitRouteContributor` (or a decorator built on it), in declaration order. */
  readonly contributors: readonly RouteContributor[];
}

/** The value under `key` that the class itself declared (not one inherited from its base class's metadata). */
export function own<T>(metadata: Metadata, key: symbol): T | undefined {
  return Object.prototype.hasOwnProperty.call(metadata, key) ? (metadata[key] as T) : undefined;
}

/** Records the class's source name (immune to bundler renaming) for group naming. */
export function rememberName(context: ClassDecoratorContext): void {
  if (context.name) context.metadata[NAME] = context.name;
}

/** Reads what Kit decorators recorded on `cls` (its own declarations, not its base class's). */
export function readEndpointMetadata(
  cls: abstract new (...args: never[]) => unknown,
): EndpointMetadata {
  const metadata = ((cls as { [Symbol.metadata]?: Metadata | null })[Symbol.metadata] ??
    {}) as Metadata;
  return {
    sourceName: own<string>(metadata, NAME),
    group: own<string>(metadata, GROUP),
    tags: own<string[]>(metadata, TAGS) ?? [],
    legacy: own<boolean>(metadata, LEGACY) === true,
    legacyRoutes: own<LegacyRoute[]>(metadata, ROUTES) ?? [],
    security: own<Readonly<Record<string, SecuritySchemeObject>>>(metadata, SECURITY),
    contributors: own<RouteContributor[]>(metadata, CONTRIBUTORS) ?? [],
  };
}
