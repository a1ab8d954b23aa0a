import { coreErrors, KitError, invalidOption, show } from '../shared/errors.js';
import type { ServiceClass } from '../shared/services.js';
import { DEFAULT_CHECK_TIMEOUT_MS } from './constants.js';
import type { HealthCheckContext, HealthCheckResult, IHealthCheck } from './result.js';

/**
 * A check written as a function.
 *
 * @example
 * ```ts
 * const diskCheck: HealthCheckFunction = async () => HealthCheckResult.healthy('disk ok');
 * ```
 */
export type HealthCheckFunction = (
  context: HealthCheckContext,
) => HealthCheckResult | Promise<HealthCheckResult>;

/**
 * A check class Kit builds from the service container. The constructor receives the awilix cradle
 * and may type it as it needs (`constructor({ pool }: { pool: Pool })`): the parameter is typed
 * `never` here so that any such constructor is accepted, which `Record<string, unknown>` would not
 * be under `strictFunctionTypes`.
 *
 * @example
 * ```ts
 * class PoolHealthCheck implements IHealthCheck {
 *   readonly #pool: Pool;
 *   constructor({ pool }: { pool: Pool }) { this.#pool = pool; }  // resolved when Kit builds it
 *   async checkHealth() { await this.#pool.query('select 1'); return HealthCheckResult.healthy(); }
 * }
 * const cls: HealthCheckClass = PoolHealthCheck;
 * ```
 */
export type HealthCheckClass = new (cradle: never) => IHealthCheck;

/**
 * Anything `addCheck` accepts: a function, an `IHealthCheck` instance, or a class built from the container.
 *
 * @example
 * ```ts
 * const sources: HealthCheckSource[] = [async () => HealthCheckResult.healthy(), new PingCheck(), CacheHealthCheck];
 * ```
 */
export type HealthCheckSource =
  HealthCheckFunction | IHealthCheck | HealthCheckClass | ServiceClass<IHealthCheck>;

/**
 * Per-check options.
 *
 * @example
 * ```ts
 * hc.addCheck('db', dbCheck, { tags: ['ready'], timeoutMs: 1000 } satisfies HealthCheckOptions);
 * ```
 */
export interface HealthCheckOptions {
  /** Tags for `/healthz?tag=...` filtering. */
  tags?: readonly string[];
  /** Per-check timeout in milliseconds (default 800, inside a kubelet's default 1 s probe timeout). */
  timeoutMs?: number;
}

/**
 * A registered check, as the runner sees it.
 *
 * @example
 * ```ts
 * const names = app.kit.healthChecks.registrations().map((r: HealthCheckRegistration) => r.name);
 * ```
 */
export interface HealthCheckRegistration {
  readonly name: string;
  readonly tags: readonly string[];
  readonly timeoutMs: number;
  /** Either a ready check, or a class still to be built from the container at `useKit`. */
  readonly check: IHealthCheck | ServiceClass<IHealthCheck>;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

// Typed as ServiceClass for the container: the cradle is what the constructor receives at run time.
function isCheckClass(value: unknown): value is ServiceClass<IHealthCheck> {
  return (
    typeof value === 'function' &&
    typeof (value.prototype as Partial<IHealthCheck> | undefined)?.checkHealth === 'function'
  );
}

/**
 * Collects health checks. Reached through `opt.healthChecksConfigure`
 * for the host and through `app.kit.healthChecks` for plugins.
 *
 * @example
 * ```ts
 * addKit(app, (opt) => {
 *   opt.healthChecksConfigure = (hc) => hc
 *     .addCheck('db', async () => HealthCheckResult.healthy('db reachable'))
 *     .addCheck('cache', CacheHealthCheck, { tags: ['ready'], timeoutMs: 1000 });
 * });
 * ```
 */
export class HealthChecksBuilder {
  readonly #checks = new Map<string, HealthCheckRegistration>();
  #sealed = false;

  /**
   * Registers a check under a unique name. Throws `KIT_ERR_DUPLICATE_HEALTH_CHECK` on a repeated name.
   * @param check A function, an `IHealthCheck` instance, or a class built from the container during `useKit`.
   * @throws {KitError} `KIT_ERR_DUPLICATE_HEALTH_CHECK` for a name already registered, `KIT_ERR_HEALTH_SEALED` after `useKit` built the checks, `KIT_ERR_INVALID_OPTION` for bad tags or timeout.
   */
  addCheck(name: string, check: HealthCheckSource, options: HealthCheckOptions = {}): this {
    if (this.#sealed) {
      throw coreErrors.error('KIT_ERR_HEALTH_SEALED', { name });
    }
    if (typeof name !== 'string' || !NAME.test(name)) {
      throw invalidOption(
        'addCheck(name)',
        name,
        'a name of 1-64 letters, digits, ".", "_", ":" or "-"',
      );
    }
    if (this.#checks.has(name)) {
      throw new KitError(
        'KIT_ERR_DUPLICATE_HEALTH_CHECK',
        `A health check named '${name}' is already registered; check names must be unique.`,
      );
    }
    const tags = options.tags ?? [];
    if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string' || t.length === 0)) {
      throw invalidOption(`addCheck('${name}').tags`, tags, 'an array of non-empty strings');
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 1 || timeoutMs > 2_147_483_647) {
      throw invalidOption(
        `addCheck('${name}').timeoutMs`,
        timeoutMs,
        'a number of milliseconds from 1 to 2147483647',
      );
    }
    let resolved: HealthCheckRegistration['check'];
    if (isCheckClass(check)) resolved = check;
    else if (typeof check === 'function') resolved = { checkHealth: check as HealthCheckFunction };
    else if (check && typeof (check as Partial<IHealthCheck>).checkHealth === 'function')
      resolved = check;
    else
      throw invalidOption(
        `addCheck('${name}', check)`,
        show(check),
        'a function, an object with checkHealth(), or a class implementing IHealthCheck',
      );
    this.#checks.set(name, { name, tags: [...new Set(tags)], timeoutMs, check: resolved });
    return this;
  }

  /** True when a check of that name is registered. */
  has(name: string): boolean {
    return this.#checks.has(name);
  }

  /** The registrations in the order they were added. */
  registrations(): readonly HealthCheckRegistration[] {
    return [...this.#checks.values()];
  }

  /** Called by Kit once `useKit` has built the checks: later additions would never run, so they throw. */
  seal(): void {
    this.#sealed = true;
  }
}
