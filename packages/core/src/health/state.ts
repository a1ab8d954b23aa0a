import type { FastifyInstance } from 'fastify';
import type { KitState } from '../enums.js';
import type { ResolvedKitOptions } from '../options.js';

/**
 * What the probes and the shutdown sequence read and write of the running layer. `KitRuntime`
 * implements it; the health modules depend on this shape, not on the runtime, so the runtime can
 * call down into them without an import circle.
 */
export interface KitLifecycle {
  readonly app: FastifyInstance;
  readonly options: ResolvedKitOptions;
  state: KitState;
  /** Why start-up failed, when it did: the readiness gate stays closed. */
  startupError: unknown;
}
