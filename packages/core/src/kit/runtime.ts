import type { FastifyInstance } from 'fastify';
import type { KitAudit } from '../audit/entry.js';
import type { EndpointSource } from '../endpoints/discovery.js';
import { RouteTable } from '../endpoints/operation-ids.js';
import type { KitState } from '../shared/enums.js';
import { HealthChecksBuilder } from '../health/builder.js';
import type { HealthState } from '../health/state.js';
import { LifecyclePhases, type JoinablePhase, type ShutdownPhase } from '../lifecycle/phases.js';
import { shutdownKit, type ShutdownTarget } from '../lifecycle/shutdown.js';

export type { KitAudit } from '../audit/entry.js';
import { KitError, invalidOption } from '../shared/errors.js';
import type { ResolvedKitOptions, WarmupTask } from './options.js';
import type { KitServices } from '../shared/services.js';

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
   * Adds work the app does as it closes (`app.close()`, `shutdown()` or a signal), in Kit's order
   * (the shutdown phases of docs/lifecycle.md; plugins use `onPhase` from `@kit/core/extend`, the
   * same seam, which also reaches the `ready` phase):
   * `unready` steps as the shutdown begins (readiness already answers 503), `flush` steps once
   * in-flight requests have finished (they run together; the audit trail's flush is one),
   * `release` steps last (one at a time, the last added first; AutoCrud's database close is one).
   * A plugin registers here instead of adding an `onClose` hook, whose order would not be Kit's.
   * A failing step is logged and the others still run.
   *
   * @param phase `'unready'`, `'flush'` or `'release'`.
   * @param name Names the step in the log line of its failure.
   * @throws {TypeError} `phase` is none of the three.
   * @example
   * ```ts
   * const pool = new pg.Pool();
   * app.kit.onShutdown('release', 'reports pool', () => pool.end());
   * ```
   */
  onShutdown(phase: ShutdownPhase, name: string, run: () => void | Promise<void>): void;

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

const SHUTDOWN_PHASES: readonly ShutdownPhase[] = ['unready', 'flush', 'release'];

const auditOff: KitAudit = Object.freeze({
  enabled: false,
  stats: () => ({ enqueued: 0, written: 0, dropped: 0, failed: 0, queueDepth: 0 }),
  flush: () => Promise.resolve(),
});

/** The mutable state behind `app.kit`, handed to each capability's setup. Not public. */
export class KitRuntime implements KitInstance, HealthState, ShutdownTarget {
  readonly healthChecks = new HealthChecksBuilder();
  readonly routes = new RouteTable();
  state: KitState = 'starting';
  audit: KitAudit = auditOff;
  /** The steps of the phases plugins join, run by the hooks `installPhases` adds. */
  readonly phases = new LifecyclePhases();
  /** Why start-up failed, when it did: the readiness gate stays closed. */
  startupError: unknown = undefined;
  useKitCalled = false;
  /** Set in the `ready` phase: useKit can no longer add routes. */
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

  onShutdown(phase: ShutdownPhase, name: string, run: () => void | Promise<void>): void {
    if (!SHUTDOWN_PHASES.includes(phase))
      throw new TypeError(
        `Unknown shutdown phase ${JSON.stringify(phase)}: expected one of ${SHUTDOWN_PHASES.join(', ')}.`,
      );
    this.phases.add(phase, { name, run });
  }

  addWarmup(task: WarmupTask): void {
    if (this.useKitCalled)
      throw new KitError(
        'KIT_ERR_ALREADY_USED',
        'app.kit.addWarmup(task) was called after useKit(app): add warm-up tasks before it.',
      );
    if (typeof task !== 'function')
      throw invalidOption(
        'app.kit.addWarmup(task)',
        task,
        'a function (signal) => Promise<void>, or a class with a warmup(signal) method',
      );
    this.warmups.push(task);
  }
}

/**
 * `app.kit` as the runtime, or `KIT_ERR_NOT_ADDED` naming `call` when `addKit` did not run on `app`.
 *
 * @example
 * ```ts
 * const kit = runtimeOf(app, 'useKit(app)');
 * ```
 */
export function runtimeOf(app: FastifyInstance, call = 'useKit(app)'): KitRuntime {
  const kit = (app as { kit?: unknown }).kit;
  if (!(kit instanceof KitRuntime)) {
    throw new KitError(
      'KIT_ERR_NOT_ADDED',
      `${call} was called on an instance without Kit: call addKit(app, ...) first.`,
    );
  }
  return kit;
}

/**
 * The one seam through which a package joins a phase of the app's life (the table is in
 * docs/lifecycle.md) instead of adding Fastify's `onReady`, `preClose` or `onClose` hooks itself,
 * so that the whole order stays Kit's and readable in one place:
 *
 * - `ready`: Fastify's ready (`app.ready()`, `listen`), once every route exists; the steps run one
 *   at a time in the order added, and the first that throws fails `app.ready()`. Not the readiness
 *   gate: a host that listens before `useKit` settles is ready while warm-up still runs.
 * - `unready`: the shutdown begins; `/healthz` already answers 503, requests are still served.
 * - `flush`: in-flight requests have finished; queued work is written, the flush steps together.
 * - `release`: after every flush step; connections and pools close, one at a time, the last
 *   added first.
 *
 * A failing shutdown step is logged and the others still run; a step added after its phase has
 * run does not run. `warm-up` has its own entry, `app.kit.addWarmup`.
 *
 * @param app The app `addKit` ran on, or any plugin context inside it.
 * @param name Names the step in the log line of its failure.
 * @throws {KitError} `KIT_ERR_NOT_ADDED` when `addKit` did not run on `app`.
 * @throws {TypeError} `phase` is not one of the four.
 * @example
 * ```ts
 * import { onPhase } from '@kit/core/extend';
 * onPhase(app, 'ready', 'cache relations', () => cache.link());
 * onPhase(app, 'flush', 'outbox', () => outbox.stop());
 * onPhase(app, 'release', 'pool', () => pool.end());
 * ```
 */
export function onPhase(
  app: FastifyInstance,
  phase: JoinablePhase,
  name: string,
  run: () => void | Promise<void>,
): void {
  runtimeOf(app, `onPhase(app, '${String(phase)}', ...)`).phases.add(phase, { name, run });
}
