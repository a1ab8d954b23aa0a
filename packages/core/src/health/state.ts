import type { FastifyInstance } from 'fastify';
import type { ShutdownSteps } from '../lifecycle/shutdown-steps.js';
import type { HealthCheckDetailLevel, KitState } from '../shared/enums.js';
import type { GracefulShutdownOptions } from './shutdown-options.js';
import type { UptimeClock } from './uptime.js';

/**
 * What the probes and the shutdown sequence read of Kit's options (`ResolvedKitOptions` is one):
 * declared here, so that health, a floor below the composition layer, does not import it.
 */
export interface HealthSettings {
  readonly enableHealthChecks: boolean;
  readonly healthCheckPath: string;
  readonly healthCheckDetailLevel: HealthCheckDetailLevel;
  readonly applicationVersion: string | undefined;
  readonly uptimeClock: UptimeClock | undefined;
  readonly gracefulShutdown: Readonly<GracefulShutdownOptions> | undefined;
}

/**
 * What the probes and the shutdown sequence read and write of the running layer. `KitRuntime`
 * implements it; the health modules depend on this shape, not on the runtime, so the runtime can
 * call down into them without an import circle.
 */
export interface KitLifecycle {
  readonly app: FastifyInstance;
  readonly options: HealthSettings;
  state: KitState;
  /** Why start-up failed, when it did: the readiness gate stays closed. */
  startupError: unknown;
  /** The app's shutdown steps (the audit flush, the database's close...), run in their documented order as it closes. */
  readonly shutdownSteps: ShutdownSteps;
}
