// @kit/core's error catalogue: every code core throws. The table in docs/grouping.md ("Errors")
// is generated from it (docs/test/error-catalogue.test.ts fails when they differ, and when a
// source file throws a code no catalogue declares).
import { errorCatalogue } from './kit-error.js';

/**
 * Every error code of `@kit/core`: its HTTP status (when the error answers a request), its
 * message template (when every place that throws it says the same thing) and when it happens.
 *
 * @example
 * ```ts
 * const { status } = coreErrors.codes.KIT_ERR_STORE_UNAVAILABLE;   // 503
 * ```
 */
export const coreErrors = errorCatalogue({
  // Configuration: addKit, its configure callbacks and useKit.
  KIT_ERR_INVALID_OPTION: {
    when: 'an option is of the wrong type or out of range (a configure callback that returns a promise, a warm-up class without `warmup()`, a pattern RegExp with the `g` or `y` flag); the message names the option and the value',
  },
  KIT_ERR_UNKNOWN_OPTION: {
    message: 'Unknown Kit option {option} = {value}: {hint}',
    when: 'an option name Kit does not know (`opt.apiPrefx`, `g.shutdownDelay`): the message names the closest known one',
  },
  KIT_ERR_CONFIGURE_FAILED: {
    message:
      'Kit option {option} = {callback} threw {thrown}. Fix the callback; the original error is the cause.',
    when: 'a configure callback or `auditSinkFactory` threw; the message names the option and the (masked) error, the error is the `cause`',
  },
  KIT_ERR_ALREADY_ADDED: {
    message: 'addKit(app) was called twice on the same Fastify instance.',
    when: '`addKit` called twice on one instance',
  },
  KIT_ERR_ALREADY_USED: {
    when: '`useKit` called twice on one instance, or after `ready()`/`listen()`',
  },
  KIT_ERR_NOT_ADDED: {
    when: '`useKit`, `addKitStore` or `addKitAutoCrud` on an instance without `addKit`',
  },
  KIT_ERR_USE_KIT_MISSING: {
    message:
      'addKit(app) was called but useKit(app) was not, so no endpoint group, probe or document route exists. Call `await useKit(app)` after addKit(app, ...) and before app.ready() or app.listen().',
    when: '`ready()`/`listen()` on an instance with `addKit` but no `useKit`',
  },
  KIT_ERR_DEPENDENCY: {
    when: 'a registration or constructor dependency cannot be resolved; the message names it and who needs it',
  },
  KIT_ERR_WARMUP_TIMEOUT: {
    message:
      'Warm-up did not finish within warmupTimeoutMs ({timeoutMs} ms). Raise opt.warmupTimeoutMs or make the tasks faster.',
    when: 'warm-up exceeded `warmupTimeoutMs`',
  },
  KIT_ERR_METRICS_UNAVAILABLE: {
    message: 'opt.configureMetrics() needs the prom-client package: npm install prom-client',
    when: '`configureMetrics()` without the `prom-client` package installed',
  },

  // Endpoint grouping and the OpenAPI document.
  KIT_ERR_ENDPOINT_SOURCE: {
    when: 'a source is not a directory, URL, class or namespace, or a module fails to import',
  },
  KIT_ERR_CLASS_NAME: {
    when: 'a class name was changed by a bundler (`_Users`, `a`, `UsersEndpoint2`) or gives no URL segment',
  },
  KIT_ERR_INVALID_GROUP: {
    when: "`@EndpointGroup`'s name or `security` option is invalid, or it is repeated on a class",
  },
  KIT_ERR_INVALID_TAG: {
    message: '@KitTag({tag}): a tag must be a non-empty string.',
    when: '`@KitTag` with an empty tag',
  },
  KIT_ERR_INVALID_ROUTE: {
    when: "`@KitMethod`'s path or method, or `KitRouteContributor`'s argument, is invalid",
  },
  KIT_ERR_DUPLICATE_OPERATION_ID: {
    message:
      "operationId '{id}' is used by both {first} and {second}. Set a distinct schema.operationId on one of them.",
    when: 'two operations share an operationId',
  },
  KIT_ERR_SECURITY_SCHEME: {
    message:
      'Security scheme "{name}" is declared differently by {first} and by {second}: give one of them another name, or the same definition.',
    when: 'one security scheme name with two definitions',
  },
  KIT_ERR_SCHEMA_ID: {
    message:
      'Two different schemas use $id "{id}" ({first} and {second}): the OpenAPI document can name only one. Rename one of them.',
    when: 'one schema `$id` with two definitions',
  },
  KIT_ERR_NOT_FOUND_HANDLER: {
    message:
      'opt.problemDetails answers unknown routes with a 404 problem, but this instance already has a not-found handler: remove app.setNotFoundHandler(...) or set opt.problemDetails = false.',
    when: '`opt.problemDetails` is on and the instance already has a not-found handler',
  },

  // Health and shutdown.
  KIT_ERR_DUPLICATE_HEALTH_CHECK: {
    when: 'a health check name is repeated (`jwt` is the name `configureJwt` adds)',
  },
  KIT_ERR_HEALTH_SEALED: {
    message:
      "Health check '{name}' was added after useKit() built the health checks; add checks in healthChecksConfigure or from a plugin registered before useKit().",
    when: 'a health check is added after start-up',
  },
  KIT_ERR_HEALTH_CHECK: {
    message: "Health check '{name}' ({check}) could not be built: {reason}",
    when: 'a health check class could not be built at start-up',
  },
  KIT_ERR_HEALTH_CHECK_TIMEOUT: {
    message: "Health check '{name}' timed out after {timeoutMs} ms",
    when: 'a check ran past its timeout: it is unhealthy, with this error as its exception (logged, shown only at `Full`; see Health)',
  },
  KIT_ERR_DRAIN_TIMEOUT: {
    message:
      'In-flight requests did not finish within gracefulShutdown.drainTimeoutMs ({drainTimeoutMs} ms); the remaining connections were closed.{flush}',
    when: 'graceful shutdown: in-flight requests did not finish within `drainTimeoutMs` (see Health)',
  },

  // Audit trail.
  KIT_ERR_AUDIT_WRITE_TIMEOUT: {
    when: 'an audit sink call exceeded `writeTimeoutMs`; its entries are counted `failed`',
  },
  KIT_ERR_AUDIT_FLUSH_TIMEOUT: {
    when: 'graceful shutdown: the audit flush did not finish within `drainTimeoutMs`; the abandoned entries are counted `failed` (see Audit trail)',
  },

  // JWT.
  KIT_ERR_JWT_NOT_CONFIGURED: {
    when: '`app.kitAuthenticate` used without `configureJwt` (see JWT)',
  },

  // Stores.
  KIT_ERR_STORE_UNAVAILABLE: {
    status: 503,
    when: 'a store call while the store cannot be reached or does not answer in time; `StoreUnavailableError` (see Stores)',
  },
  KIT_ERR_STORE_INVALID_ARGUMENT: {
    message: 'Invalid store argument {what} = {value}: expected {expected}.',
    when: 'a store call with an invalid key, duration, option or non-JSON value',
  },
  KIT_ERR_SAGA_CONFLICT: {
    status: 409,
    when: 'a saga write with a stale or missing version; `SagaConflictError`',
  },
});

declare module './kit-error.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- declaration merging adds core's codes
  interface KitErrorCodes extends Record<keyof typeof coreErrors.codes, true> {}
}
