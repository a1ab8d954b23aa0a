import type { FastifyInstance } from 'fastify';
import type { AuditStats } from './audit/entry.js';
import type { EndpointSource } from './endpoints/discovery.js';
import { RouteTable } from './endpoints/operation-ids.js';
import type { KitState } from './enums.js';
import { HealthChecksBuilder } from './health/builder.js';
import { shutdownKit } from './health/lifecycle.js';
import type { AuditCloseControl, KitLifecycle } from './health/state.js';

export type { AuditCloseControl } from './health/state.js';
import { KitError, invalidOption } from './errors.js';
import type { ResolvedKitOptions, WarmupTask } from './options.js';
import type { KitServices } from './services.js';

/**
 * The audit trail as the running layer exposes it (`app.kit.audit`).
 *
 * @example
 * ```ts
 * if (app.kit.audit.enabled) {
 *   await app.kit.audit.flush();
 *   app.log.info(app.kit.audit.stats(), 'audit trail flushed');
 * }
 * ```
 */
export interface KitAudit {
  /** True when `configureAuditTrail` was called. */
  readonly enabled: boolean;
  /** Queue and sink counters. */
  stats(): AuditStats;
  /**
   * Writes every entry queued so far (asynchronous mode) or waits for pending custom-sink writes
   * (synchronous mode, at most `writeTimeoutMs`); resolves at once when there are none.
   */
  flush(): Promise<void>;
}

/**
 * The running layer, `app.kit` (also returned by `addKit`).
 *
 * @example
 * ```ts
 * const kit = addKit(app);
 * kit.services.register({ clock: asValue(() => Date.now()) });
 * await useKit(app);
 * app.log.info({ state: app.kit.state, audit: app.kit.audit.stats() }, 'kit ready');
 * ```
 */
export interface KitInstance {
  /** The validated options. */
  readonly options: ResolvedKitOptions;
  /** The service container endpoint classes, checks and sinks are built from. */
  readonly services: KitServices;
  /** The health-check builder; plugins add their checks here before `useKit` completes. */
  readonly healthChecks: HealthChecksBuilder;
  /** Audit trail counters and flush. */
  readonly audit: KitAudit;
  /** `starting` until `useKit` completes, then `ready`, then `shuttingDown`. */
  readonly state: KitState;
  /**
   * Runs the graceful shutdown as the first signal would, without exiting the process: state
   * `shuttingDown` (`/healthz` 503), `gracefulShutdown.shutdownDelayMs` of normal serving (0 when
   * not configured or not listening), then `app.close()` bounded by `drainTimeoutMs`. Repeated
   * calls return the same promise. Rejects with `KIT_ERR_DRAIN_TIMEOUT` when the drain overran.
   *
   * @example
   * ```ts
   * await app.kit.shutdown();   // e.g. from a host's own signal or admin handling
   * ```
   */
  shutdown(): Promise<void>;
  /**
   * Adds a warm-up task from a plugin, as `opt.configureWarmup` does for the host: it runs with
   * the others during `useKit`, under `warmupTimeoutMs`, before the readiness gate opens; its
   * failure fails start-up. Call it before `useKit`.
   *
   * @throws `KIT_ERR_ALREADY_USED` once `useKit` was called; `KIT_ERR_INVALID_OPTION` for a task that is not a function or a warm-up class.
   * @example
   * ```ts
   * // in a plugin's add function, between addKit and useKit
   * app.kit.addWarmup(async (signal) => { await cache.load({ signal }); });
   * ```
   */
  addWarmup(task: WarmupTask): void;
}

const auditOff: KitAudit = Object.freeze({
  enabled: false,
  stats: () => ({ enqueued: 0, written: 0, dropped: 0, failed: 0, queueDepth: 0 }),
  flush: () => Promise.resolve(),
});

/** The mutable state behind `app.kit`, handed to each capability's setup. Not public. */
export class KitRuntime implements KitInstance, KitLifecycle {
  readonly healthChecks = new HealthChecksBuilder();
  readonly routes = new RouteTable();
  state: KitState = 'starting';
  audit: KitAudit & Partial<AuditCloseControl> = auditOff;
  /** Why start-up failed, when it did: the readiness gate stays closed. */
  startupError: unknown = undefined;
  useKitCalled = false;
  /** Set by an onReady hook: useKit can no longer add routes. */
  instanceReady = false;
  /** Warm-up tasks plugins added (`addWarmup`), run after the host's own. */
  readonly warmups: WarmupTask[] = [];

  constructor(
    readonly app: FastifyInstance,
    readonly options: ResolvedKitOptions,
    readonly services: KitServices,
    readonly sources: readonly EndpointSource[] | undefined,
  ) {}

  shutdown(): Promise<void> {
    return shutdownKit(this);
  }

  addWarmup(task: WarmupTask): void {
    if (this.useKitCalled) throw new KitError('KIT_ERR_ALREADY_USED', 'app.kit.addWarmup(task) was called after useKit(app): add warm-up tasks before it.');
    if (typeof task !== 'function') throw invalidOption('app.kit.addWarmup(task)', task, 'a function (signal) => Promise<void>, or a class with a warmup(signal) method');
    this.warmups.push(task);
  }
}
