/**
 * Status of one check or of the whole report.
 *
 * @example
 * ```ts
 * const status: HealthStatus = latencyMs > 500 ? 'degraded' : 'healthy';
 * ```
 */
export type HealthStatus = 'healthy' | 'degraded' | 'unhealthy';

/**
 * The outcome of one health check. Build it with
 * `HealthCheckResult.healthy/degraded/unhealthy`.
 *
 * @example
 * ```ts
 * const result: HealthCheckResult = HealthCheckResult.degraded('replica lagging', { lagMs: 1200 });
 * ```
 */
export interface HealthCheckResult {
  readonly status: HealthStatus;
  /** Shown at detail levels `Description` and `Full`. Never put secrets or addresses here. */
  readonly description?: string;
  /** Shown at `Full` only. */
  readonly data?: Readonly<Record<string, unknown>>;
  /** Shown (its message) at `Full` only. */
  readonly exception?: Error;
}

/**
 * Factories for check results.
 *
 * @example
 * ```ts
 * hc.addCheck('db', async () => (await db.ping())
 *   ? HealthCheckResult.healthy('db reachable')
 *   : HealthCheckResult.unhealthy('db unreachable'));
 * ```
 */
export const HealthCheckResult = {
  /** The check passes. */
  healthy(description?: string, data?: Record<string, unknown>): HealthCheckResult {
    return { status: 'healthy', description, data };
  },
  /** The check works but below par; the report stays HTTP 200. */
  degraded(
    description?: string,
    exception?: Error,
    data?: Record<string, unknown>,
  ): HealthCheckResult {
    return { status: 'degraded', description, exception, data };
  },
  /** The check fails; the report answers HTTP 503. */
  unhealthy(
    description?: string,
    exception?: Error,
    data?: Record<string, unknown>,
  ): HealthCheckResult {
    return { status: 'unhealthy', description, exception, data };
  },
} as const;

/**
 * What a running check receives.
 *
 * @example
 * ```ts
 * hc.addCheck('search', async ({ signal }: HealthCheckContext) => {
 *   await fetch(searchUrl, { signal });
 *   return HealthCheckResult.healthy();
 * });
 * ```
 */
export interface HealthCheckContext {
  /** The check's registered name. */
  readonly name: string;
  /** The check's tags. */
  readonly tags: readonly string[];
  /** Aborted when the check's timeout passes; the report does not wait for the check past it. */
  readonly signal: AbortSignal;
}

/**
 * A health check as a class. Classes registered with `addCheck` are built
 * from the Kit service container, so the constructor receives its dependencies.
 *
 * @example
 * ```ts
 * class CacheHealthCheck implements IHealthCheck {
 *   constructor(private readonly deps: { cache: Cache }) {}
 *   async checkHealth({ signal }: HealthCheckContext) {
 *     await this.deps.cache.ping({ signal });
 *     return HealthCheckResult.healthy();
 *   }
 * }
 * ```
 */
export interface IHealthCheck {
  checkHealth(context: HealthCheckContext): HealthCheckResult | Promise<HealthCheckResult>;
}
