import type { FastifyInstance } from 'fastify';
import type { KitState } from '../shared/enums.js';
import type { ResolvedKitOptions } from '../kit/options.js';

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
  /** The audit trail, as far as closing the app may ask of its flush. */
  readonly audit: Partial<AuditCloseControl>;
}
/**
 * What graceful shutdown may ask of the audit trail's flush when the app closes. Not public.
 */
export interface AuditCloseControl {
  /**
   * When the flush on close is still running: gives it up, counts the entries not yet written as
   * `failed`, and returns the error that says so; otherwise `undefined`.
   */
  abandonCloseFlush(drainTimeoutMs: number): Error | undefined;
}

