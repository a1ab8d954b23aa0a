import { coreErrors, KitError } from '../shared/errors.js';
import { KitHttpMethod } from '../shared/enums.js';
import { validateSecuritySchemes, type SecuritySchemeObject } from '../shared/security-schemes.js';
import {
  GROUP,
  LEGACY,
  own,
  rememberName,
  ROUTES,
  SECURITY,
  TAGS,
  type LegacyRoute,
  type Metadata,
} from './metadata.js';

/**
 * Options of `@EndpointGroup`.
 *
 * @example
 * ```ts
 * const options: EndpointGroupOptions = { security: { adminKey: { type: 'apiKey', in: 'header', name: 'x-admin-key' } } };
 * ```
 */
export interface EndpointGroupOptions {
  /**
   * How the group's routes are guarded, for the OpenAPI document: named security schemes that go
   * into `components.securitySchemes`; every route of the group requires one of them (a route's
   * own `schema.security` wins). `{}` declares the group public. Kit cannot see what a hook of
   * yours checks: this is how the document learns it.
   */
  security?: Record<string, SecuritySchemeObject>;
}

/**
 * Puts the class into the named group: every class with the same name
 * shares the URL prefix, the OpenAPI tag and the hooks any of them adds. The name is used as given.
 * `options.security` documents how the group's routes are guarded (see {@link EndpointGroupOptions});
 * the schemes of all classes of a group are merged.
 *
 * @example
 * ```ts
 * @EndpointGroup('admin', { security: { adminKey: { type: 'apiKey', in: 'header', name: 'x-admin-key' } } })
 * export class AdminUsersEndpoint implements IKitEndpoint {
 *   addRoutes(app: FastifyInstance) {
 *     app.addHook('onRequest', requireAdminKey);       // the guard itself is yours
 *     app.get('users', listUsers);                     // GET /api/admin/users, security: [{ adminKey: [] }]
 *   }
 * }
 * ```
 */
export function EndpointGroup(name: string, options?: EndpointGroupOptions) {
  if (
    typeof name !== 'string' ||
    !/^[A-Za-z0-9._~@-]+$/.test(name) ||
    name === '.' ||
    name === '..'
  ) {
    throw new KitError(
      'KIT_ERR_INVALID_GROUP',
      `@EndpointGroup(${JSON.stringify(name)}): a group name must be one URL segment of letters, digits, ".", "_", "~", "@" or "-".`,
    );
  }
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new KitError(
      'KIT_ERR_INVALID_GROUP',
      `@EndpointGroup('${name}', options): options must be an object such as { security: { ... } }.`,
    );
  }
  const security =
    options?.security === undefined
      ? undefined
      : validateSecuritySchemes(`@EndpointGroup('${name}', { security })`, options.security);
  return (
    _cls: abstract new (...args: never[]) => unknown,
    context: ClassDecoratorContext,
  ): void => {
    if (own(context.metadata as Metadata, GROUP) !== undefined) {
      throw new KitError(
        'KIT_ERR_INVALID_GROUP',
        `@EndpointGroup is not repeatable (class ${String(context.name)}).`,
      );
    }
    context.metadata[GROUP] = name;
    if (security !== undefined) context.metadata[SECURITY] = security;
    rememberName(context);
  };
}

/**
 * Sets the OpenAPI tags of every route of the class, replacing the default tag
 * (the group name). Repeatable; tags keep declaration order.
 *
 * @example
 * ```ts
 * @KitTag('Orders') @KitTag('Public')
 * export class OrdersEndpoint implements IKitEndpoint { ... }     // tags: ['Orders', 'Public']
 * ```
 */
export function KitTag(tag: string) {
  if (typeof tag !== 'string' || tag.trim() === '') {
    throw coreErrors.error('KIT_ERR_INVALID_TAG', { tag: JSON.stringify(tag) });
  }
  return (
    _cls: abstract new (...args: never[]) => unknown,
    context: ClassDecoratorContext,
  ): void => {
    const metadata = context.metadata as Metadata;
    // Class decorators apply bottom-up; prepending keeps the list in the order they are written.
    const tags = own<string[]>(metadata, TAGS) ?? [];
    metadata[TAGS] = [tag, ...tags.filter((t) => t !== tag)];
    rememberName(context);
  };
}

/**
 * Marks an old-style, attribute-based endpoint class.
 *
 * @deprecated Since @kit/core 0.1.0, removal announced for @kit/core 0.2.0 (see docs/decisions.md, "Versions"): implement `IKitEndpoint` instead.
 * @example
 * ```ts
 * @KitEndpoint()
 * export class LegacyReportsEndpoint {
 *   @KitMethod('daily/{day}', KitHttpMethod.GET)
 *   daily(request: FastifyRequest) { return { day: (request.params as { day: string }).day }; }
 * }
 * ```
 */
export function KitEndpoint() {
  return (
    _cls: abstract new (...args: never[]) => unknown,
    context: ClassDecoratorContext,
  ): void => {
    context.metadata[LEGACY] = true;
    rememberName(context);
  };
}

/**
 * Marks a method of a `@KitEndpoint()` class as a route; the method is called
 * with `(request, reply)`. The path is relative to the group and may use `{param}` or `:param`.
 *
 * @deprecated Since @kit/core 0.1.0, removal announced for @kit/core 0.2.0 (see docs/decisions.md, "Versions"): implement `IKitEndpoint` instead.
 * @example
 * ```ts
 * @KitMethod('items/{id}', KitHttpMethod.DELETE)
 * remove(request: FastifyRequest, reply: FastifyReply) { reply.code(204).send(); }
 * ```
 */
export function KitMethod(path: string, method: KitHttpMethod) {
  if (typeof path !== 'string') {
    throw new KitError(
      'KIT_ERR_INVALID_ROUTE',
      `@KitMethod(${JSON.stringify(path)}): the path must be a string.`,
    );
  }
  if (!Object.values(KitHttpMethod).includes(method)) {
    throw new KitError(
      'KIT_ERR_INVALID_ROUTE',
      `@KitMethod('${path}', ${JSON.stringify(method)}): the method must be one of ${Object.values(KitHttpMethod).join(', ')}.`,
    );
  }
  return (_fn: (...args: never[]) => unknown, context: ClassMethodDecoratorContext): void => {
    if (context.static || context.private) {
      throw new KitError(
        'KIT_ERR_INVALID_ROUTE',
        `@KitMethod on ${String(context.name)}: only public instance methods can be routes.`,
      );
    }
    const metadata = context.metadata as Metadata;
    const routes = own<LegacyRoute[]>(metadata, ROUTES) ?? [];
    metadata[ROUTES] = [...routes, { path, method, key: context.name }];
  };
}
