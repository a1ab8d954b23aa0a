import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyTypeProvider,
  RawServerBase,
} from 'fastify';
import type { Cluster } from 'ioredis';
import {
  HealthCheckResult,
  StoreUnavailableError,
  type HealthCheckContext,
  type IHealthCheck,
  type HostInstance,
} from '@kit/core';
import { redisStoreErrors } from './errors.js';
import { untilAborted } from './wait.js';
import { KIT_REDIS_STORE, type KitRedisStore } from './plugin.js';

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * A Cluster as the stores see it: every master the client routes to is asked `CLUSTER INFO`. A
 * master that does not answer, or answers with a state other than `ok` (a restarted master
 * refuses commands for its first two seconds), does not serve its keys. Addresses go into
 * `data` only, which the report shows at `Full` detail alone.
 */
async function clusterHealth(cluster: Cluster, signal: AbortSignal): Promise<HealthCheckResult> {
  const started = performance.now();
  const timedOut = 'no reply before the check timed out';
  // The client re-reads the slot map on its own only when a MOVED reply says it changed. A fresh
  // map lets the check see a failover's new master, or a master back from a restart, before
  // any store call happens to hit its slots.
  await untilAborted(
    new Promise<void>((resolve) => cluster.refreshSlotsCache(() => resolve())),
    signal,
    timedOut,
  ).catch(() => undefined);
  const masters = [
    ...new Set(
      cluster.slots
        .map((owners) => owners?.[0])
        .filter((key): key is string => typeof key === 'string'),
    ),
  ].sort();
  const nodes = new Map(
    cluster
      .nodes('all')
      .map((node) => [`${node.options.host ?? ''}:${String(node.options.port)}`, node]),
  );
  const states = await Promise.all(
    masters.map(async (key) => {
      const node = nodes.get(key);
      if (!node) return undefined;
      try {
        const info = String(await untilAborted(node.cluster('INFO'), signal, timedOut));
        return /cluster_state:(\w+)/.exec(info)?.[1] ?? 'unknown';
      } catch {
        return undefined;
      }
    }),
  );
  const serving = states.filter((state) => state === 'ok').length;
  const clusterState =
    serving > 0 ? 'ok' : (states.find((state) => state !== undefined) ?? 'unreachable');
  const data = {
    clusterState,
    masters: masters.length,
    mastersServing: serving,
    unreachable: masters.filter((_, i) => states[i] === undefined),
    notServing: masters.filter((_, i) => states[i] !== undefined && states[i] !== 'ok'),
    latencyMs: Math.round((performance.now() - started) * 100) / 100,
  };
  const summary = `Redis Cluster state ${clusterState}: ${serving} of ${masters.length} masters reachable and serving`;
  if (serving === 0) return HealthCheckResult.unhealthy(summary, undefined, data);
  if (serving < masters.length)
    return HealthCheckResult.degraded(
      `${summary} (calls for keys the others serve fail)`,
      undefined,
      data,
    );
  return HealthCheckResult.healthy(summary, data);
}

/**
 * The Redis store health check. One server or a Sentinel master: PING,
 * abandoned when the check's signal aborts (its timeout); healthy with `data.latencyMs`,
 * unhealthy with the reason in a few address-free words (`not connected: connection refused`,
 * `not connected: the server refused database 99 (...)`). A Redis Cluster: `CLUSTER INFO` from
 * every master the client routes to; unhealthy when none reports `cluster_state:ok`, degraded
 * while some master does not answer or does not serve, the masters' addresses in `data` (shown
 * at `Full` detail only). Built from the container (`kitRedisStore`) when registered as a class.
 *
 * @example
 * ```ts
 * // What useKitStoreHealthCheck(app) does, by hand:
 * app.kit.healthChecks.addCheck('redis', StoreHealthCheck, { tags: ['ready'], timeoutMs: 800 });
 * ```
 */
export class StoreHealthCheck implements IHealthCheck {
  constructor(private readonly deps: { kitRedisStore: KitRedisStore }) {}

  async checkHealth({ signal }: HealthCheckContext): Promise<HealthCheckResult> {
    const store = this.deps.kitRedisStore;
    if (store.mode === 'cluster') {
      if (!store.connected) {
        return HealthCheckResult.unhealthy(
          'Redis Cluster unavailable',
          new StoreUnavailableError(
            'redis',
            `not connected: ${store.failure ?? 'connection lost'}`,
          ),
        );
      }
      return clusterHealth(store.client as Cluster, signal);
    }
    try {
      const latencyMs = await store.ping(signal);
      return HealthCheckResult.healthy('Redis answered PING', { latencyMs });
    } catch (err) {
      const reason = err instanceof StoreUnavailableError ? ` (${err.reason})` : '';
      return HealthCheckResult.unhealthy(`Redis did not answer PING${reason}`, asError(err));
    }
  }
}

/**
 * Options of {@link useKitStoreHealthCheck}.
 *
 * @example
 * ```ts
 * useKitStoreHealthCheck(app, { timeoutMs: 500 } satisfies KitStoreHealthCheckOptions);
 * ```
 */
export interface KitStoreHealthCheckOptions {
  /** The check's timeout (default 800 ms, so `/healthz` still answers within Kubernetes' default 1 s probe timeout). */
  timeoutMs?: number;
}

/**
 * Surfaces the store in `/healthz`: adds a
 * {@link StoreHealthCheck} named `redis` with tag `ready`. Call it after `addKitStore` and before
 * `useKit` completes. Without it, no store check appears.
 *
 * @throws {KitError} `KIT_ERR_STORE_NOT_ADDED` without `addKitStore`; `KIT_ERR_DUPLICATE_HEALTH_CHECK` when a check named `redis` exists.
 * @example
 * ```ts
 * addKitStore(app, process.env.REDIS_URL!);
 * useKitStoreHealthCheck(app, { timeoutMs: 500 });
 * await useKit(app);   // GET /healthz now lists checks.redis
 * ```
 */
export function useKitStoreHealthCheck<
  S extends RawServerBase,
  L extends FastifyBaseLogger,
  T extends FastifyTypeProvider,
>(host: HostInstance<S, L, T>, options: KitStoreHealthCheckOptions = {}): void {
  const app = host as unknown as FastifyInstance;
  if (!app.hasDecorator('kit') || !app.kit.services.hasRegistration(KIT_REDIS_STORE)) {
    throw redisStoreErrors.error('KIT_ERR_STORE_NOT_ADDED');
  }
  const check = new StoreHealthCheck({
    kitRedisStore: app.kit.services.resolve<KitRedisStore>(KIT_REDIS_STORE),
  });
  app.kit.healthChecks.addCheck('redis', check, {
    tags: ['ready'],
    timeoutMs: options.timeoutMs ?? 800,
  });
}
