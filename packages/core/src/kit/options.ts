import { InjectionMode } from 'awilix';
import { AuditTrailOptions, validateAuditTrailOptions } from '../audit/options.js';
import type { IAuditSink } from '../audit/entry.js';
import { validateJwtOptions, type JwtOptions } from '../auth/options.js';
import { EndpointFormat, HealthCheckDetailLevel } from '../shared/enums.js';
import { assertKnownOptions, callConfigure, invalidOption, isClass } from '../shared/errors.js';
import { checkDistinctPaths, checkPath, compile, oneOf, PATH } from '../shared/option-checks.js';
import type { HealthChecksBuilder } from '../health/builder.js';
import { LIVENESS_PATH } from '../health/constants.js';
import {
  GracefulShutdownOptions,
  validateGracefulShutdownOptions,
} from '../lifecycle/shutdown-options.js';
import type { UptimeClock } from '../health/uptime.js';
import { MetricsOptions, validateMetricsOptions } from '../metrics/options.js';
import type { KitServices, ServiceClass } from '../shared/services.js';

/**
 * A warm-up task class: built from the container, its `warmup` runs before the readiness gate opens.
 *
 * @example
 * ```ts
 * class SearchIndexWarmup implements IWarmup {
 *   constructor(private readonly deps: { search: SearchClient }) {}
 *   warmup(signal: AbortSignal) { return this.deps.search.loadIndex({ signal }); }
 * }
 * addKit(app, (opt) => opt.configureWarmup(SearchIndexWarmup));
 * ```
 */
export interface IWarmup {
  warmup(signal: AbortSignal): void | Promise<void>;
}

/**
 * A warm-up task: a function, or a class implementing `IWarmup` built from the container.
 *
 * @example
 * ```ts
 * const primeCache: WarmupTask = async (signal) => { await cache.prime({ signal }); };
 * ```
 */
export type WarmupTask = ((signal: AbortSignal) => void | Promise<void>) | ServiceClass<IWarmup>;

/**
 * Title, version and description of the OpenAPI document.
 *
 * @example
 * ```ts
 * addKit(app, (opt) => { opt.openApiInfo = { title: 'Orders API', description: 'Orders and returns' }; });
 * ```
 */
export interface OpenApiInfo {
  title?: string;
  version?: string;
  description?: string;
}

// Lets resolveOptions read the private state of a KitOption without making it public.
let readPrivate: (o: KitOption) => {
  audit: { action?: (options: AuditTrailOptions) => void } | undefined;
  jwt: JwtOptions | undefined;
  shutdown: { action?: (options: GracefulShutdownOptions) => void } | undefined;
  metrics: { action?: (options: MetricsOptions) => void } | undefined;
  warmups: WarmupTask[];
};

function checkAction<T>(option: string, action: T, example: string): T {
  if (action !== undefined && typeof action !== 'function')
    throw invalidOption(option, action, `a function such as ${example}, or nothing`);
  return action;
}

/**
 * Kit configuration, handed to the configure callback of `addKit`.
 *
 * @example
 * ```ts
 * addKit(app, (opt) => {
 *   opt.format = EndpointFormat.SnakeCase;
 *   opt.apiPrefix = 'api';
 *   opt.configureAuditTrail((a) => { a.asyncWrite = true; });
 *   opt.configureJwt('https://login.example.com/tenant', ['api://orders']);
 * });
 * ```
 */
export class KitOption {
  /** Case style of the group segment in URLs. */
  format: EndpointFormat = EndpointFormat.CamelCase;
  /** First URL segment of all grouped routes (`''` for none; `'api/v1'` for two). */
  apiPrefix = 'api';
  /** Suffix stripped from class names (case-insensitive when given as a string). */
  groupNameSuffixPattern: string | RegExp = '(Endpoint|Service|Controller)$';
  /** Version marker in class names. */
  versionFormatPattern: string | RegExp = 'V(\\d+)';
  /** Replacement of the version marker in group names (`V1` becomes `@1`). */
  versionFormatReplacement = '@$1';
  /** When false, neither `/healthz` nor `/livez` is mapped. */
  enableHealthChecks = true;
  /** Path of the health report. */
  healthCheckPath = '/healthz';
  /** Registers custom checks. */
  healthChecksConfigure?: (builder: HealthChecksBuilder) => unknown;
  /** Detail of the health report; default `Full` when `NODE_ENV=development`, else `StatusOnly`. */
  healthCheckDetailLevel?: HealthCheckDetailLevel;
  /** Supplies the audit sink; receives the service container. Default: `LoggingAuditSink`. */
  auditSinkFactory?: (services: KitServices) => IAuditSink;
  /** `version` of the health report and of the OpenAPI document; default: the host's package.json version. */
  applicationVersion?: string;
  /** Milliseconds since process start, for the health report's `uptime`; default `process.uptime()`. Inject a fixed clock in tests. */
  uptimeClock?: UptimeClock;
  /** Path of the OpenAPI 3.1 document, or `false` for none (which also turns the UI off). */
  openApiPath: string | false = '/openapi.json';
  /** Path of the reference UI, or `false` for none. */
  docsPath: string | false = '/docs';
  /** Title, version and description of the OpenAPI document. */
  openApiInfo: OpenApiInfo = {};
  /** An awilix container of the host's to use instead of a new one. */
  container?: KitServices;
  /** Registrations instantiated during `useKit`, before the readiness gate opens. */
  eagerSingletons: string[] = [];
  /** Limit for all warm-up tasks together. */
  warmupTimeoutMs = 30_000;
  /**
   * Errors of every endpoint-group route (validation, thrown by handlers or hooks) and the 404 of
   * unknown routes answer RFC 9457 problem details (`application/problem+json`, with the
   * correlation id), 5xx without the error's message; the OpenAPI document declares them. `false`
   * keeps Fastify's default error body.
   */
  problemDetails = true;

  #audit: { action?: (options: AuditTrailOptions) => void } | undefined;
  #jwt: JwtOptions | undefined;
  #shutdown: { action?: (options: GracefulShutdownOptions) => void } | undefined;
  #metrics: { action?: (options: MetricsOptions) => void } | undefined;
  readonly #warmups: WarmupTask[] = [];

  /** Turns the audit trail on, with defaults or adjusted by `action`. */
  configureAuditTrail(action?: (options: AuditTrailOptions) => void): this {
    this.#audit = {
      action: checkAction('configureAuditTrail(action)', action, '(a) => { a.asyncWrite = true; }'),
    };
    return this;
  }

  /**
   * Validates Bearer tokens issued by `authority` for one of `audiences`, and adds the `jwt` health check.
   * @param authority The issuer URL; its `/.well-known/openid-configuration` names the JWKS.
   * @param audiences A token must carry one of them in `aud`.
   * @throws {KitError} `KIT_ERR_INVALID_OPTION` for an authority that is not an absolute http(s) URL without credentials, query or fragment, or an empty audience list.
   */
  configureJwt(authority: string, audiences: readonly string[]): this {
    this.#jwt = validateJwtOptions(authority, audiences);
    return this;
  }

  /** Handles SIGTERM/SIGINT: readiness turns 503, requests drain, the audit trail flushes, the process exits 0. */
  configureGracefulShutdown(action?: (options: GracefulShutdownOptions) => void): this {
    this.#shutdown = {
      action: checkAction(
        'configureGracefulShutdown(action)',
        action,
        '(g) => { g.drainTimeoutMs = 10_000; }',
      ),
    };
    return this;
  }

  /**
   * Turns metrics on (off by default): the audit counters and the health check results as
   * Prometheus metrics, served at `/metrics` or put into the host's prom-client registry. Needs
   * the `prom-client` package.
   */
  configureMetrics(action?: (options: MetricsOptions) => void): this {
    this.#metrics = {
      action: checkAction(
        'configureMetrics(action)',
        action,
        '(m) => { m.path = "/internal/metrics"; }',
      ),
    };
    return this;
  }

  /**
   * Adds a warm-up task; all run in parallel during `useKit` under `warmupTimeoutMs`.
   * @throws {KitError} `KIT_ERR_INVALID_OPTION` when `task` is neither a function nor a class with a `warmup(signal)` method.
   */
  configureWarmup(task: WarmupTask): this {
    // A class is built from the container and must have warmup(); calling one as a function throws.
    const isWarmupClass =
      typeof (task as { prototype?: Partial<IWarmup> } | undefined)?.prototype?.warmup ===
      'function';
    if (typeof task !== 'function' || (isClass(task) && !isWarmupClass)) {
      throw invalidOption(
        'configureWarmup(task)',
        task,
        'a function (signal) => Promise<void>, or a class with a warmup(signal) method',
      );
    }
    this.#warmups.push(task);
    return this;
  }

  static {
    readPrivate = (o) => ({
      audit: o.#audit,
      jwt: o.#jwt,
      shutdown: o.#shutdown,
      metrics: o.#metrics,
      warmups: [...o.#warmups],
    });
  }
}

/**
 * The validated, frozen configuration the running layer reads (`app.kit.options`).
 *
 * @example
 * ```ts
 * const { apiPrefix, healthCheckPath } = app.kit.options;
 * ```
 */
export interface ResolvedKitOptions {
  readonly format: EndpointFormat;
  /** Without leading or trailing `/`; `''` when there is no prefix. */
  readonly apiPrefix: string;
  readonly groupNameSuffixPattern: RegExp;
  readonly versionFormatPattern: RegExp;
  readonly versionFormatReplacement: string;
  readonly enableHealthChecks: boolean;
  readonly healthCheckPath: string;
  readonly healthChecksConfigure: ((builder: HealthChecksBuilder) => unknown) | undefined;
  readonly healthCheckDetailLevel: HealthCheckDetailLevel;
  readonly auditTrail: Readonly<AuditTrailOptions> | undefined;
  readonly auditSinkFactory: ((services: KitServices) => IAuditSink) | undefined;
  readonly jwt: JwtOptions | undefined;
  readonly gracefulShutdown: Readonly<GracefulShutdownOptions> | undefined;
  readonly metrics: Readonly<MetricsOptions> | undefined;
  readonly applicationVersion: string | undefined;
  readonly uptimeClock: UptimeClock | undefined;
  readonly openApiPath: string | false;
  readonly docsPath: string | false;
  readonly openApiInfo: Readonly<OpenApiInfo>;
  readonly container: KitServices | undefined;
  readonly eagerSingletons: readonly string[];
  readonly warmups: readonly WarmupTask[];
  readonly warmupTimeoutMs: number;
  readonly problemDetails: boolean;
}

/** Validates a configured `KitOption`; every failure is `KIT_ERR_INVALID_OPTION` naming the option and value. */
export function resolveOptions(opt: KitOption): ResolvedKitOptions {
  assertKnownOptions(opt, new KitOption());
  const hidden = readPrivate(opt);
  const format = oneOf('format', opt.format, EndpointFormat);

  if (typeof opt.apiPrefix !== 'string')
    throw invalidOption('apiPrefix', opt.apiPrefix, 'a string such as "api"');
  const apiPrefix = opt.apiPrefix.replace(/^\/+|\/+$/g, '');
  if (apiPrefix !== '' && !PATH.test(`/${apiPrefix}`)) {
    throw invalidOption('apiPrefix', opt.apiPrefix, 'URL path segments such as "api" or "api/v1"');
  }

  const groupNameSuffixPattern = compile('groupNameSuffixPattern', opt.groupNameSuffixPattern, 'i');
  const versionFormatPattern = compile('versionFormatPattern', opt.versionFormatPattern, '');
  if (typeof opt.versionFormatReplacement !== 'string') {
    throw invalidOption(
      'versionFormatReplacement',
      opt.versionFormatReplacement,
      'a replacement string such as "@$1"',
    );
  }

  if (typeof opt.enableHealthChecks !== 'boolean')
    throw invalidOption('enableHealthChecks', opt.enableHealthChecks, 'true or false');
  const healthCheckPath = checkPath('healthCheckPath', opt.healthCheckPath);
  if (healthCheckPath === LIVENESS_PATH)
    throw invalidOption('healthCheckPath', healthCheckPath, `a path other than "${LIVENESS_PATH}"`);
  const healthCheckDetailLevel =
    opt.healthCheckDetailLevel === undefined
      ? process.env.NODE_ENV === 'development'
        ? HealthCheckDetailLevel.Full
        : HealthCheckDetailLevel.StatusOnly
      : oneOf('healthCheckDetailLevel', opt.healthCheckDetailLevel, HealthCheckDetailLevel);

  for (const key of ['healthChecksConfigure', 'auditSinkFactory', 'uptimeClock'] as const) {
    if (opt[key] !== undefined && typeof opt[key] !== 'function')
      throw invalidOption(key, opt[key], 'a function');
  }
  if (
    opt.applicationVersion !== undefined &&
    (typeof opt.applicationVersion !== 'string' || opt.applicationVersion === '')
  ) {
    throw invalidOption('applicationVersion', opt.applicationVersion, 'a non-empty string');
  }

  const openApiPath = opt.openApiPath === false ? false : checkPath('openApiPath', opt.openApiPath);
  const docsPath =
    opt.docsPath === false || openApiPath === false ? false : checkPath('docsPath', opt.docsPath);
  if (typeof opt.openApiInfo !== 'object' || opt.openApiInfo === null)
    throw invalidOption('openApiInfo', opt.openApiInfo, 'an object');

  if (
    opt.container !== undefined &&
    (typeof opt.container !== 'object' || typeof opt.container?.build !== 'function')
  ) {
    throw invalidOption('container', opt.container, 'an awilix container');
  }
  // Kit's classes destructure the cradle in their constructors, which needs PROXY injection.
  const injectionMode = opt.container?.options?.injectionMode;
  if (injectionMode !== undefined && injectionMode !== InjectionMode.PROXY) {
    throw invalidOption(
      'container',
      `a container in ${injectionMode} injection mode`,
      'a container created with injectionMode: InjectionMode.PROXY',
    );
  }
  let metrics: MetricsOptions | undefined;
  if (hidden.metrics) {
    metrics = new MetricsOptions();
    if (hidden.metrics.action)
      callConfigure('configureMetrics(action)', hidden.metrics.action, metrics);
    assertKnownOptions(metrics, new MetricsOptions(), 'metrics.');
    if (metrics.path !== false) checkPath('metrics.path', metrics.path);
    validateMetricsOptions(metrics);
    Object.freeze(metrics);
  }
  const metricsPath = metrics?.path === false ? undefined : metrics?.path;
  const probePaths = [healthCheckPath, LIVENESS_PATH, openApiPath, docsPath, metricsPath].filter(
    (p): p is string => typeof p === 'string',
  );
  checkDistinctPaths(probePaths, healthCheckPath, metricsPath);
  if (
    !Array.isArray(opt.eagerSingletons) ||
    opt.eagerSingletons.some((n) => typeof n !== 'string' || n === '')
  ) {
    throw invalidOption('eagerSingletons', opt.eagerSingletons, 'an array of registration names');
  }
  if (
    !Number.isFinite(opt.warmupTimeoutMs) ||
    opt.warmupTimeoutMs < 1 ||
    opt.warmupTimeoutMs > 2_147_483_647
  ) {
    throw invalidOption(
      'warmupTimeoutMs',
      opt.warmupTimeoutMs,
      'a number of milliseconds from 1 to 2147483647',
    );
  }

  if (typeof opt.problemDetails !== 'boolean')
    throw invalidOption('problemDetails', opt.problemDetails, 'true or false');

  let auditTrail: AuditTrailOptions | undefined;
  if (hidden.audit) {
    // The audit leaves Kit's own infrastructure paths alone by default: the same list as above.
    auditTrail = new AuditTrailOptions(probePaths);
    if (hidden.audit.action)
      callConfigure('configureAuditTrail(action)', hidden.audit.action, auditTrail);
    assertKnownOptions(auditTrail, new AuditTrailOptions([]), 'auditTrail.');
    validateAuditTrailOptions(auditTrail);
    Object.freeze(auditTrail);
  }

  let gracefulShutdown: GracefulShutdownOptions | undefined;
  if (hidden.shutdown) {
    gracefulShutdown = new GracefulShutdownOptions();
    if (hidden.shutdown.action)
      callConfigure('configureGracefulShutdown(action)', hidden.shutdown.action, gracefulShutdown);
    assertKnownOptions(gracefulShutdown, new GracefulShutdownOptions(), 'gracefulShutdown.');
    validateGracefulShutdownOptions(gracefulShutdown);
    Object.freeze(gracefulShutdown);
  }

  return Object.freeze({
    format,
    apiPrefix,
    groupNameSuffixPattern,
    versionFormatPattern,
    versionFormatReplacement: opt.versionFormatReplacement,
    enableHealthChecks: opt.enableHealthChecks,
    healthCheckPath,
    healthChecksConfigure: opt.healthChecksConfigure,
    healthCheckDetailLevel,
    auditTrail,
    auditSinkFactory: opt.auditSinkFactory,
    jwt: hidden.jwt,
    gracefulShutdown,
    metrics,
    applicationVersion: opt.applicationVersion,
    uptimeClock: opt.uptimeClock,
    openApiPath,
    docsPath,
    openApiInfo: { ...opt.openApiInfo },
    container: opt.container,
    eagerSingletons: [...opt.eagerSingletons],
    warmups: hidden.warmups,
    warmupTimeoutMs: opt.warmupTimeoutMs,
    problemDetails: opt.problemDetails,
  });
}
