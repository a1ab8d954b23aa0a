import { asValue } from 'awilix';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyTypeProvider,
  RawServerBase,
} from 'fastify';
import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import {
  KitError,
  KitStoreNames,
  type ICronJobStore,
  type IIdempotencyStore,
  type IRateLimitStore,
  type ISagaStore,
  type HostInstance,
} from '@kit/core';
import { onPhase } from '@kit/core/extend';
import { redisStoreErrors } from './errors.js';
import { RedisConnection, type StoreLogger } from './connection.js';
import {
  RedisCronJobStore,
  RedisIdempotencyStore,
  RedisRateLimitStore,
  RedisSagaStore,
} from './stores.js';
import { createClient, resolveTopology, type StoreMode, type StoreUrlInput } from './topology.js';

/** How much longer than the connect timeout start-up waits for the first attempt's outcome. */
const SETTLE_MARGIN_MS = 250;

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
  /**
   * Limit for establishing a connection; also how long start-up waits for it (default 5000). In a
   * Cluster it is also the limit for getting the slot map from one node (ioredis'
   * `slotsRefreshTimeout`, which `clusterOptions` may still set).
   */
  connectTimeoutMs?: number;
  /** Reconnect backoff starts at 50 ms and doubles up to this (default 1000), so recovery follows within it. */
  reconnectMaxDelayMs?: number;
  /** `CLIENT SETNAME` of the connection (default `kit-store`), to find it in `CLIENT LIST`. */
  connectionName?: string;
  /**
   * The URL is a seed node of a Redis Cluster (ioredis `Cluster`), as a list of URLs always is.
   * Cluster URLs take no database index: a Cluster has database 0 only.
   */
  cluster?: boolean;
  /**
   * Sentinel mode: the Sentinels to ask for the master (`redis://[:password@]host[:26379]`, all
   * with the same scheme and credentials). The store URL's host then names the master group, as
   * in `redis://:password@mymaster/0`; its credentials, database and scheme are the master's.
   */
  sentinels?: ReadonlyArray<string | URL>;
  /**
   * Further ioredis options (`tls`, `family`, `username`, `natMap`, ...); in a Cluster, the
   * options of each node connection. Kit sets and keeps `enableOfflineQueue: false`,
   * `maxRetriesPerRequest: 0`, `autoResendUnfulfilledCommands: false`, `commandTimeout`,
   * `connectTimeout`, `retryStrategy` (and `sentinelRetryStrategy`) and `connectionName` from the
   * options above; what the URL says (host, credentials, database) wins over these.
   */
  redisOptions?: RedisOptions;
  /**
   * Further ioredis `Cluster` options (`natMap`, `scaleReads`, `slotsRefreshInterval`, ...). Kit
   * sets and keeps `enableOfflineQueue: false`, `lazyConnect: false`, `clusterRetryStrategy`, and
   * `retryDelayOnFailover: 0` and `retryDelayOnClusterDown: 0` (a command whose node was lost is
   * failed, never sent again); MOVED and ASK redirects are followed.
   */
  clusterOptions?: Omit<ClusterOptions, 'redisOptions'>;
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
  /**
   * The store URL with its password replaced by `***`: safe to print. A Cluster lists its seed
   * URLs; Sentinel mode adds the Sentinels after the master's URL.
   */
  readonly url: string;
  /** `server` (one Redis), `cluster` or `sentinel`. */
  readonly mode: StoreMode;
  /** The key prefix in use. */
  readonly keyPrefix: string;
  /**
   * The underlying ioredis client: a `Redis` (one server, or the Sentinel group's master) or a
   * `Cluster`. It has no offline queue: commands sent while disconnected fail at once. Do not
   * close it yourself; use `close()`.
   */
  readonly client: Redis | Cluster;
  /** True while store calls can be sent. */
  readonly connected: boolean;
  /**
   * Why store calls are refused right now, in a few words without an address
   * (`connection refused`, `the server refused database 99 (...)`); undefined while connected.
   */
  readonly failure: string | undefined;
  /**
   * PING round trip in milliseconds (in a Cluster: to every master, the slowest); rejects with
   * `KIT_ERR_STORE_UNAVAILABLE` when down or when `signal` aborts.
   */
  ping(signal?: AbortSignal): Promise<number>;
  /** Resolves when connected, when the first attempt failed, or after `connectTimeoutMs` plus 250 ms; true when connected. */
  waitUntilConnected(): Promise<boolean>;
  /** Closes the connection (idempotent); `addKitStore` calls it as a `release` step of the app's shutdown. */
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
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      `Invalid Kit option addKitStore options.${option} = ${String(v)}: expected a positive integer number of milliseconds.`,
    );
  }
  return v;
}

// A hash tag left open in the prefix ("kit{") would make Redis hash two keys of one record to
// different Cluster slots; one closed around nothing ("kit{}") is ignored by Redis, which is
// just as surprising. A whole tag ("{orders}:") is fine: it puts every key in one slot.
function keyPrefixOf(value: unknown): string {
  const prefix = value ?? 'kit:';
  if (typeof prefix !== 'string' || prefix.length > 256) {
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      'Invalid Kit option addKitStore options.keyPrefix: expected a string of at most 256 characters.',
    );
  }
  const open = prefix.indexOf('{');
  if (open !== -1 && prefix.indexOf('}', open) <= open + 1) {
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      `Invalid Kit option addKitStore options.keyPrefix = ${JSON.stringify(prefix)}: a "{" must open a whole Redis Cluster hash tag ("{orders}:"), or leave braces out.`,
    );
  }
  return prefix;
}

/**
 * Connects the four Redis stores without Fastify (workers, scripts, tests). In a Fastify service
 * use `addKitStore`, which also registers them and closes the connection with the app. `url` is
 * one server's URL, or a list of Redis Cluster seed URLs; see {@link KitStoreOptions} for
 * `cluster` and `sentinels`.
 *
 * @example
 * ```ts
 * const stores = createRedisStores('redis://:secret@localhost:6379/0', { keyPrefix: 'billing:' });
 * await stores.waitUntilConnected();
 * const r = await stores.rateLimit.consume('ip:10.0.0.1', { limit: 5, windowMs: 1000 });
 * await stores.close();
 * ```
 */
export function createRedisStores(
  url: StoreUrlInput,
  options: KitStoreOptions = {},
): KitRedisStore {
  const parsed = resolveTopology(url, options);
  const keyPrefix = keyPrefixOf(options.keyPrefix);
  const commandTimeoutMs = positive('commandTimeoutMs', options.commandTimeoutMs, 2000);
  const connectTimeoutMs = positive('connectTimeoutMs', options.connectTimeoutMs, 5000);
  const reconnectMaxDelayMs = positive('reconnectMaxDelayMs', options.reconnectMaxDelayMs, 1000);
  const client = createClient(parsed, {
    commandTimeoutMs,
    connectTimeoutMs,
    reconnectMaxDelayMs,
    connectionName: options.connectionName ?? 'kit-store',
    redisOptions: options.redisOptions ?? {},
    clusterOptions: options.clusterOptions ?? {},
  });
  const connection = new RedisConnection(
    parsed.topology,
    client,
    { commandTimeoutMs, connectTimeoutMs, reconnectMaxDelayMs },
    options.logger,
  );
  const store: KitRedisStore = {
    idempotency: new RedisIdempotencyStore(connection, keyPrefix),
    rateLimit: new RedisRateLimitStore(connection, keyPrefix),
    saga: new RedisSagaStore(connection, keyPrefix),
    cronJob: new RedisCronJobStore(connection, keyPrefix),
    url: parsed.topology.redacted,
    mode: parsed.topology.mode,
    keyPrefix,
    client,
    get connected() {
      return connection.ready;
    },
    get failure() {
      return connection.failure;
    },
    ping: (signal) => connection.ping(signal),
    // The client's own connect timer and this wait would both be connectTimeoutMs: on a loaded
    // machine the wait could end first and report 'connecting' instead of the first attempt's
    // outcome (a fresh-clone CI run on Node 26 saw it). The margin lets the attempt's error land.
    waitUntilConnected: () => connection.settle(connectTimeoutMs + SETTLE_MARGIN_MS),
    close: () => connection.close(),
  };
  connections.set(store, connection);
  return store;
}

// Each store's connection, for what is built on a store from outside this file (stream-target.ts).
const connections = new WeakMap<KitRedisStore, RedisConnection>();

/** The connection of a store `createRedisStores` made. */
export function connectionOf(store: KitRedisStore): RedisConnection {
  const connection = connections.get(store);
  if (!connection)
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      'Invalid Kit option redisStreamTarget(store): expected a store made by createRedisStores or addKitStore of this copy of @kit/store-redis.',
    );
  return connection;
}

/**
 * Registers the Redis stores: `idempotencyStore`,
 * `rateLimitStore`, `sagaStore` and `cronJobStore` in `app.kit.services` now point at Redis, and
 * the {@link KitRedisStore} itself is registered as `kitRedisStore`. Start-up (`app.ready()` /
 * `listen()`) waits up to `connectTimeoutMs` for the connection but does not fail when Redis is
 * down: store calls fail with `KIT_ERR_STORE_UNAVAILABLE` until it is up. The connection closes
 * as the app closes (a `release` shutdown step, after the audit flush). No health check is added: call `useKitStoreHealthCheck(app)` for that.
 * The password in `url` is never logged or put into errors. `url` is one server's URL, or a list
 * of Redis Cluster seed URLs; with `options.sentinels`, the master group of a Sentinel setup.
 *
 * @param url `redis://` or `rediss://` URL with an optional database index, the seed URLs of a Cluster, or a Sentinel URL (see docs/stores.md).
 * @throws {KitError} `KIT_ERR_NOT_ADDED` before `addKit`, `KIT_ERR_STORE_ALREADY_ADDED` on a second call, `KIT_ERR_STORE_TOO_LATE` after `useKit`, `KIT_ERR_INVALID_OPTION` for a URL or option it cannot use (the URL never echoed).
 * @example
 * ```ts
 * const app = Fastify({ logger: true });
 * addKit(app, [new URL('./endpoints/', import.meta.url)]);
 * addKitStore(app, process.env.REDIS_URL!, { keyPrefix: 'orders:' });
 * useKitStoreHealthCheck(app);
 * await useKit(app);
 *
 * // A Redis Cluster (any reachable seeds; the client discovers the rest):
 * addKitStore(app, ['redis://:secret@10.0.0.1:6379', 'redis://:secret@10.0.0.2:6379']);
 * // The master named "orders" of a Sentinel setup, database 2:
 * addKitStore(app, 'redis://:secret@orders/2', { sentinels: ['redis://10.0.0.1:26379', 'redis://10.0.0.2:26379'] });
 * ```
 */
export function addKitStore<
  S extends RawServerBase,
  L extends FastifyBaseLogger,
  T extends FastifyTypeProvider,
>(host: HostInstance<S, L, T>, url: StoreUrlInput, options: KitStoreOptions = {}): KitRedisStore {
  const app = host as unknown as FastifyInstance;
  if (!app.hasDecorator('kit')) {
    throw new KitError(
      'KIT_ERR_NOT_ADDED',
      'addKitStore(app, url) was called on an instance without Kit: call addKit(app, ...) first.',
    );
  }
  if (app.kit.services.hasRegistration(KIT_REDIS_STORE)) {
    throw redisStoreErrors.error('KIT_ERR_STORE_ALREADY_ADDED');
  }
  if (app.kit.state !== 'starting') {
    throw redisStoreErrors.error('KIT_ERR_STORE_TOO_LATE');
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
  // A `ready` step: the server listens once the first connection is made or given up on.
  onPhase(app, 'ready', 'redis store connection', async () => {
    if (!(await store.waitUntilConnected())) {
      logger.warn(
        { redis: store.url, failure: store.failure },
        'Redis store not usable at start-up; serving anyway, store calls fail with KIT_ERR_STORE_UNAVAILABLE until it is',
      );
    }
  });
  // A `release` step: after the audit trail's flush, which a sink writing to Redis still needs.
  onPhase(app, 'release', 'redis store', () => store.close());
  return store;
}
