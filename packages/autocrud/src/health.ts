import { HealthCheckResult, type HealthCheckContext, type IHealthCheck } from '@kit/core';
import { DatabaseBusyError, SchemaMismatchError } from './mapper/errors.js';

/** What the check needs: a ping that honours the check's signal. */
interface Pingable {
  ping(signal?: AbortSignal): Promise<number>;
}

/**
 * The `database` check `addKitAutoCrud` registers by itself: `SELECT 1`, abandoned when the
 * check's signal aborts. Healthy with `data.latencyMs`; unhealthy with a generic description and
 * an exception that names no host, user or connection string. Also unhealthy while an entity's
 * table does not fit its schema. Built from the container (`kitAutoCrud`) when added as a class.
 *
 * @example
 * ```ts
 * // What addKitAutoCrud does, by hand, under another name:
 * app.kit.healthChecks.addCheck('catalog-db', DatabaseHealthCheck, { tags: ['ready'], timeoutMs: 500 });
 * ```
 */
export class DatabaseHealthCheck implements IHealthCheck {
  readonly #database: Pingable;

  constructor({ kitAutoCrud }: { kitAutoCrud: Pingable }) {
    this.#database = kitAutoCrud;
  }

  async checkHealth({ signal }: HealthCheckContext): Promise<HealthCheckResult> {
    try {
      const latencyMs = await this.#database.ping(signal);
      return HealthCheckResult.healthy('Database answered SELECT 1', { latencyMs });
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      if (err instanceof SchemaMismatchError)
        return HealthCheckResult.unhealthy('Database tables do not fit the entities', error);
      // Up but taken (an embedded engine's one session held by a long statement): busy is not down.
      if (err instanceof DatabaseBusyError)
        return HealthCheckResult.degraded(
          'Database busy: its session is held by a long statement',
          error,
        );
      return HealthCheckResult.unhealthy('Database did not answer SELECT 1', error);
    }
  }
}
