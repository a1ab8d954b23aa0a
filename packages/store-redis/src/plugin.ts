import { asValue } from 'awilix';
import type { FastifyBaseLogger, FastifyInstance, FastifyTypeProvider, RawServerBase } from 'fastify';
import type { Redis, RedisOptions } from 'ioredis';
import {
  HealthCheckResult,
  KitError,
  KitStoreNames,
  type HealthCheckContext,
  type ICronJobStore,
  type IHealthCheck,
  type IIdempotencyStore,
  type IRateLimitStore,
  type ISagaStore,
  type HostInstance,
} from '@kit/core';
import { RedisConnection, type StoreLogger } from './connection.js';
import { RedisCronJobStore, RedisIdempotencyStore, RedisRateLimitStore, RedisSagaStore } from './stores.js';
import { parseStoreUrl } from './url.js';

/**
 * Options of `addKitStore` and `createRedisStores`.
 *
 * @example
 * ```ts
 * addKitStore(app, process.env.REDIS_URL!, {
 *   keyPrefix: 'billing:',
 *   commandTimeoutMs: 500,
 *   redisOptions: { tls: { servername: 'redis.internal' } },
 * } satisfies KitStoreOptions);
 * ```
 */
export interface KitStoreOptions {
  /** Prepended to every key Kit writes (default `kit:`), so several services can share a database. */
  keyPrefix?: string;
  /** A store call without a reply after this long fails with `KIT_ERR_STORE_UNAVAILABLE` (default 2000). */
  commandTimeoutMs?: number;
  /** Limit for establishing a connection; also how long start-up waits for it (default 5000). */
  connectTimeoutMs?: number;
  /** Reconnect backoff starts at 50 ms and doubles up to this (default 1000), so recovery follows within it. */
  reconnectMaxDelayMs?: number;
  /** `CLIENT SETNAME` of the connection (default `kit-store`), to find it in `CLIENT LIST`. */
  connectionName?: string;
  /**
   * Further ioredis options (`tls`, `family`, `username`, ...). Kit sets and keeps
   * `enableOfflineQueue: false`, `maxRetriesPerRequest: 0`, `autoResendUnfulfilledCommands: false`,
   * `commandTimeout`, `connectTimeout`, `retryStrategy` and `connectionName` from the options above.
   */
  redisOptions?: RedisOptions;
  /** Where connection events are logged (`addKitStore` uses `app.log`). Messages are redacted. */
  logger?: StoreLogger;
}

/**
 * The four Redis stores on one connection, as `createRedisStores` and `addKitStore` return them.
 *
 * @example
 * ```ts
 * const stores = addKitStore(app, process.env.REDIS_URL!);
 * app.log.info({ redis: stores.url, prefix: stores.keyPrefix }, 'Redis stores registered');
 * ```
 */
export interface KitRedisStore {
  readonly idempotency: IIdempotencyStore;
  readonly rateLimit: IRateLimitStore;
  readonly saga: ISagaStore;
  readonly cronJob: ICronJobStore;
  /** The store URL with its password replaced by `***`: safe to print. */
  readonly url: string;
  /** The key prefix in use. */
  readonly keyPrefix: string;
  /**
   * The underlying ioredis client. It has no offline queue: commands sent while disconnected
   * fail at once. Do not close it yourself; use `close()`.
   */
  readonly client: Redis;
  /** True while the connection is up. */
  readonly connected: boolean;
  /** PING round trip in milliseconds; rejects with `KIT_ERR_STORE_UNAVAILABLE` when down or when `signal` aborts. */
  ping(signal?: AbortSignal): Promise<number>;
  /** Resolves when connected, when the first attempt failed, or after `connectTimeoutMs`; true when connected. */
  waitUntilConnected(): Promise<boolean>;
  /** Closes the connection (idempotent); `addKitStore` calls it in `onClose`. */
  close(): Promise<void>;
}

/**
 * The container name `addKitStore` registers the {@link KitRedisStore} under.
 *
 * @example
 * ```ts
 * const store = app.kit.services.resolve<KitRedisStore>(KIT_REDIS_STORE);   // 'kitRedisStore'
 * ```
 */
export const KIT_REDIS_STORE = 'kitRedisStore';

function positive(option: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 1) {
    throw new KitError('KIT_ERR_INVALID_OPTION', `Invalid Kit option addKitStore options.${option} = ${String(v)}: expected a positive integer number of milliseconds.`);
  }
  return v;
}

/**
 * Connects the four Redis stores without Fastify (workers, scripts, tests). In a Fastify service
 * use `addKitStore`, which also registers them and closes the connection with the app.
 *
 * @example
 * ```ts
 * const stores = createRedisStores('redis://:secret@localhost:6379/0', { keyPrefix: 'billing:' });
 * await stores.waitUntilConnected();
 * const r = await stores.rateLimit.consume('ip:10.0.0.1', { limit: 5, windowMs: 1000 });
 * await stores.close();
 * ```
 */
export function createRedisStores(url: string | URL, options: KitStoreOptions = {}): KitRedisStore {
  const parsed = parseStoreUrl(url);
  const keyPrefix = options.keyPrefix ?? 'kit:';
  if (typeof keyPrefix !== 'string' || keyPrefix.length > 256) {
    throw new KitError('KIT_ERR_INVALID_OPTION', 'Invalid Kit option addKitStore options.keyPrefix: expected a string of at most 256 characters.');
  }
  const connectTimeoutMs = positive('connectTimeoutMs', options.connectTimeoutMs, 5000);
  const connection = new RedisConnection(
    parsed,
    {
      commandTimeoutMs: positive('commandTimeoutMs', options.commandTimeoutMs, 2000),
      connectTimeoutMs,
      reconnectMaxDelayMs: positive('reconnectMaxDelayMs', options.reconnectMaxDelayMs, 1000),
      connectionName: options.connectionName ?? 'kit-store',
      redisOptions: options.redisOptions ?? {},
    },
    options.logger,
  );
  return {
    idempotency: new RedisIdempotencyStore(connection, keyPrefix),
    rateLimit: new RedisRateLimitStore(connection, keyPrefix),
    saga: new RedisSagaStore(connection, keyPrefix),
    cronJob: new RedisCronJobStore(connection, keyPrefix),
    url: parsed.redacted,
    keyPrefix,
    client: connection.client,
    get connected() {
      return connection.ready;
    },
    ping: (signal) => connection.ping(signal),
    waitUntilConnected: () => connection.settle(connectTimeoutMs),
    close: () => connection.close(),
  };
}

/**
 * Registers the Redis stores (spec `AddKitStore(connectionString)`): `idempotencyStore`,
 * `rateLimitStore`, `sagaStore` and `cronJobStore` in `app.kit.services` now point at Redis, and
 * the {@link KitRedisStore} itself is registered as `kitRedisStore`. Start-up (`app.ready()` /
 * `listen()`) waits up to `connectTimeoutMs` for the connection but does not fail when Redis is
 * down: store calls fail with `KIT_ERR_STORE_UNAVAILABLE` until it is up. The connection closes
 * in `onClose`. No health check is added: call `useKitStoreHealthCheck(app)` for that.
 * The password in `url` is never logged or put into errors.
 *
 * @example
 * ```ts
 * const app = Fastify({ logger: true });
 * addKit(app, [new URL('./endpoints/', import.meta.url)]);
 * addKitStore(app, process.env.REDIS_URL!, { keyPrefix: 'orders:' });
 * useKitStoreHealthCheck(app);
 * await useKit(app);
 * ```
 */
export function addKitStore<S extends RawServerBase, L extends FastifyBaseLogger, T extends FastifyTypeProvider>(
  host: HostInstance<S, L, T>,
  url: string | URL,
  options: KitStoreOptions = {},
): KitRedisStore {
  const app = host as unknown as FastifyInstance;
  if (!app.hasDecorator('kit')) {
    throw new KitError('KIT_ERR_NOT_ADDED', 'addKitStore(app, url) was called on an instance without Kit: call addKit(app, ...) first.');
  }
  if (app.kit.services.hasRegistration(KIT_REDIS_STORE)) {
    throw new KitError('KIT_ERR_STORE_ALREADY_ADDED', 'addKitStore(app, url) was called twice on the same Fastify instance.');
  }
  if (app.kit.state !== 'starting') {
    throw new KitError('KIT_ERR_STORE_TOO_LATE', 'addKitStore(app, url) was called after useKit(app) completed; call it between addKit and useKit.');
  }
  const logger = options.logger ?? app.log.child({ kit: 'store-redis' });
  const store = createRedisStores(url, { ...options, logger });
  app.kit.services.register({
    [KitStoreNames.idempotency]: asValue(store.idempotency),
    [KitStoreNames.rateLimit]: asValue(store.rateLimit),
    [KitStoreNames.saga]: asValue(store.saga),
    [KitStoreNames.cronJob]: asValue(store.cronJob),
    [KIT_REDIS_STORE]: asValue(store),
  });
  app.addHook('onReady', async () => {
    if (!(await store.waitUntilConnected())) {
      logger.warn({ redis: store.url }, 'Redis store not reachable at start-up; serving anyway, store calls fail with KIT_ERR_STORE_UNAVAILABLE until it is');
    }
  });
  app.addHook('onClose', async () => {
    await store.close();
  });
  return store;
}

/**
 * The Redis store health check (spec `StoreHealthCheck`): PING, abandoned when the check's
 * signal aborts (its timeout). Healthy with `data.latencyMs`; unhealthy with a generic
 * description and an exception that names no address or credential. Built from the container
 * (`kitRedisStore`) when registered as a class.
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
    try {
      const latencyMs = await this.deps.kitRedisStore.ping(signal);
      return HealthCheckResult.healthy('Redis answered PING', { latencyMs });
    } catch (err) {
      return HealthCheckResult.unhealthy('Redis did not answer PING', err instanceof Error ? err : new Error(String(err)));
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
 * Surfaces the store in `/healthz` (spec `UseKitStoreHealthCheck()`): adds a
 * {@link StoreHealthCheck} named `redis` with tag `ready`. Call it after `addKitStore` and before
 * `useKit` completes. Without it, no store check appears.
 *
 * @example
 * ```ts
 * addKitStore(app, process.env.REDIS_URL!);
 * useKitStoreHealthCheck(app, { timeoutMs: 500 });
 * await useKit(app);   // GET /healthz now lists checks.redis
 * ```
 */
export function useKitStoreHealthCheck<S extends RawServerBase, L extends FastifyBaseLogger, T extends FastifyTypeProvider>(
  host: HostInstance<S, L, T>,
  options: KitStoreHealthCheckOptions = {},
): void {
  const app = host as unknown as FastifyInstance;
  if (!app.hasDecorator('kit') || !app.kit.services.hasRegistration(KIT_REDIS_STORE)) {
    throw new KitError('KIT_ERR_STORE_NOT_ADDED', 'useKitStoreHealthCheck(app) needs addKitStore(app, url) first.');
  }
  const check = new StoreHealthCheck({ kitRedisStore: app.kit.services.resolve<KitRedisStore>(KIT_REDIS_STORE) });
  app.kit.healthChecks.addCheck('redis', check, { tags: ['ready'], timeoutMs: options.timeoutMs ?? 800 });
}
