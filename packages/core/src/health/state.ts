import type { FastifyInstance } from 'fastify';
import type { HealthCheckDetailLevel, KitState } from '../shared/enums.js';
import type { UptimeClock } from './uptime.js';

/**
 * What the probes read of Kit's options (`ResolvedKitOptions` is one): declared here, so that
 * health, a floor below the composition layer, does not import it.
 */
export interface HealthSettings {
  readonly enableHealthChecks: boolean;
  readonly healthCheckPath: string;
  readonly healthCheckDetailLevel: HealthCheckDetailLevel;
  readonly applicationVersion: string | undefined;
  readonly uptimeClock: UptimeClock | undefined;
}

/**
 * What the probes read of the running layer. `KitRuntime` implements it; the health modules
 * depend on this shape, not on the runtime, so the runtime can call down into them without an
 * import circle.
 */
export interface HealthState {
  readonly app: FastifyInstance;
  readonly options: HealthSettings;
  /** `shuttingDown` from the `unready` phase on. */
  readonly state: KitState;
  /** Why start-up failed, when it did: the readiness gate stays closed. */
  readonly startupError: unknown;
}
