import type { RouteOptions } from 'fastify';
import { coreErrors } from '../shared/errors.js';

/**
 * A route path as written inside `addRoutes`, made relative: no leading or trailing `/`, and
 * `{id}` written as Fastify's `:id`. `''` is the group root.
 */
export function relativeRoutePath(routePath: string): string {
  return toFastifyParams(routePath.replace(/^\/+|\/+$/g, ''));
}

/** `{id}` written as Fastify's `:id`. */
export function toFastifyParams(path: string): string {
  return path.replace(/\{([A-Za-z_$][\w$]*)\}/g, ':$1');
}

/** `items/:id` -> `items_id`; parameters by bare name, `/` and `-` as `_`, anything not URL-safe dropped. */
function slug(relativePath: string): string {
  return relativePath
    .replace(/:([A-Za-z_$][\w$]*)(\([^)]*\))?/g, '$1')
    .replace(/\*/g, 'wildcard')
    .replace(/[^A-Za-z0-9_.@]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '');
}

/**
 * `{group}_{METHOD}_{relativePath}`, or `{group}_{METHOD}` for the group root.
 *
 * @example
 * ```ts
 * operationIdFor('user', 'GET', 'items/:id'); // 'user_GET_items_id'
 * ```
 */
export function operationIdFor(group: string, method: string, relativePath: string): string {
  const rest = slug(relativePath);
  return rest ? `${group}_${method.toUpperCase()}_${rest}` : `${group}_${method.toUpperCase()}`;
}

interface Generated {
  readonly group: string;
  readonly relativePath: string;
}

function methodsOf(route: RouteOptions): string[] {
  return Array.isArray(route.method) ? route.method : [route.method];
}

/**
 * Every route registered after `addKit`, so operationIds can be checked once all are known: the
 * onRoute hook sees a route before group hooks have named it, so the check runs in `useKit`.
 */
export class RouteTable {
  readonly #routes: RouteOptions[] = [];
  readonly #multiMethod = new Map<string, Generated>();

  track(route: RouteOptions): void {
    this.#routes.push(route);
  }

  /**
   * A placeholder id for a route with several methods: swagger copies one schema.operationId to
   * every method, so the document gives each its own id from this. Braces keep it from ever
   * equalling an id a host would write.
   */
  multiMethodId(group: string, relativePath: string): string {
    const id = `{kit-multi-method-${this.#multiMethod.size}}`;
    this.#multiMethod.set(id, { group, relativePath });
    return id;
  }

  /** The id an operation of `method` ends up with in the document. */
  operationIdOf(operationId: string, method: string): string {
    const generated = this.#multiMethod.get(operationId);
    return generated
      ? operationIdFor(generated.group, method, generated.relativePath)
      : operationId;
  }

  /** Throws `KIT_ERR_DUPLICATE_OPERATION_ID` naming both routes when two operations share an id. */
  assertUniqueOperationIds(): void {
    const seen = new Map<string, string>();
    for (const route of this.#routes) {
      const schema = route.schema as { operationId?: unknown; hide?: unknown } | undefined;
      if (typeof schema?.operationId !== 'string' || schema.hide === true) continue;
      for (const method of methodsOf(route)) {
        if (method === 'HEAD') continue; // HEAD routes are left out of the document
        const id = this.operationIdOf(schema.operationId, method);
        const where = `${method} ${route.url}`;
        const first = seen.get(id);
        if (first !== undefined && first !== where) {
          throw coreErrors.error('KIT_ERR_DUPLICATE_OPERATION_ID', { id, first, second: where });
        }
        seen.set(id, where);
      }
    }
  }
}
