/**
 * Case style of the group segment in URLs (the names are
 * pinned: docs/decisions.md, "Public names").
 *
 * @example
 * ```ts
 * addKit(app, (opt) => { opt.format = EndpointFormat.SnakeCase; }); // TestUserEndpoint -> /api/test_user
 * ```
 */
export const EndpointFormat = {
  CamelCase: 'CamelCase',
  SnakeCase: 'SnakeCase',
  ToLower: 'ToLower',
  UnChanged: 'UnChanged',
} as const;
export type EndpointFormat = (typeof EndpointFormat)[keyof typeof EndpointFormat];

/**
 * How much of each check the health report exposes.
 *
 * @example
 * ```ts
 * addKit(app, (opt) => { opt.healthCheckDetailLevel = HealthCheckDetailLevel.Description; });
 * ```
 */
export const HealthCheckDetailLevel = {
  StatusOnly: 'StatusOnly',
  Description: 'Description',
  Full: 'Full',
} as const;
export type HealthCheckDetailLevel =
  (typeof HealthCheckDetailLevel)[keyof typeof HealthCheckDetailLevel];

/**
 * Output style of audit entries (the templates are in docs/audit.md, "The four formats").
 *
 * @example
 * ```ts
 * opt.configureAuditTrail((a) => { a.logFormat = AuditTrailFormat.Compact; });
 * ```
 */
export const AuditTrailFormat = {
  Default: 'Default',
  DotnetLogger: 'DotnetLogger',
  JsonStyle: 'JsonStyle',
  Compact: 'Compact',
} as const;
export type AuditTrailFormat = (typeof AuditTrailFormat)[keyof typeof AuditTrailFormat];

/**
 * HTTP methods of deprecated `@KitMethod` routes.
 *
 * @example
 * ```ts
 * @KitMethod('items/{id}', KitHttpMethod.GET) getItem(request: FastifyRequest) { ... }
 * ```
 */
export const KitHttpMethod = {
  GET: 'GET',
  POST: 'POST',
  PUT: 'PUT',
  PATCH: 'PATCH',
  DELETE: 'DELETE',
  HEAD: 'HEAD',
  OPTIONS: 'OPTIONS',
} as const;
export type KitHttpMethod = (typeof KitHttpMethod)[keyof typeof KitHttpMethod];

/**
 * Lifecycle state of the running layer, readable as `app.kit.state`.
 *
 * @example
 * ```ts
 * if (app.kit.state === 'shuttingDown') reply.header('connection', 'close');
 * ```
 */
export type KitState = 'starting' | 'ready' | 'shuttingDown';
