// Where the stores' Redis lives (one server, a Cluster, or a master found through Sentinel) and
// the ioredis client for it, always with Kit's fail-fast settings.
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { KitError } from '@kit/core';
import { parseStoreUrl, type StoreUrl } from './url.js';

/**
 * How `addKitStore` reaches Redis: one server, a Redis Cluster, or the master of a Sentinel group.
 *
 * @example
 * ```ts
 * const mode: StoreMode = addKitStore(app, process.env.REDIS_URL ?? 'redis://127.0.0.1:6379').mode;
 * ```
 */
export type StoreMode = 'server' | 'cluster' | 'sentinel';

/** What the URL(s) and options describe, validated. */
export interface Topology {
  readonly mode: StoreMode;
  /** For logs: every URL with its password replaced by `***`. */
  readonly redacted: string;
  /** Every literal secret of every URL, to scrub from what is printed. */
  readonly secrets: readonly string[];
  /** The server's address in `server` mode (for the TLS diagnosis), else undefined. */
  readonly server: { readonly host: string; readonly port: number } | undefined;
  /** The database index asked for (not in `cluster` mode). */
  readonly db: number | undefined;
  /** The master group's name in `sentinel` mode. */
  readonly masterName: string | undefined;
}

/** The settings Kit owns; every client it builds gets them. */
interface ClientSettings {
  readonly commandTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly reconnectMaxDelayMs: number;
  readonly connectionName: string;
  readonly redisOptions: RedisOptions;
  readonly clusterOptions: Omit<ClusterOptions, 'redisOptions'>;
}

/**
 * The URL argument of `addKitStore`: one URL, or the seed nodes of a Redis Cluster.
 *
 * @example
 * ```ts
 * const seeds: StoreUrlInput = ['redis://10.0.0.1:7000', 'redis://10.0.0.2:7000'];
 * addKitStore(app, seeds, { cluster: true });
 * ```
 */
export type StoreUrlInput = string | URL | ReadonlyArray<string | URL>;

function invalid(why: string): KitError {
  return new KitError('KIT_ERR_INVALID_OPTION', `Invalid Kit option addKitStore(app, url): ${why}`);
}

/** Throws unless every URL uses the same scheme and credentials (one client setting serves them all). */
function sameAccess(urls: readonly StoreUrl[], what: string): void {
  const [first] = urls;
  for (const u of urls) {
    if (u.tls !== first?.tls)
      throw invalid(`${what} mix redis:// and rediss://; use one scheme for all.`);
    if (u.username !== first.username || u.password !== first.password) {
      throw invalid(
        `${what} carry different credentials; ioredis uses one user and password for all of them (the values are not shown).`,
      );
    }
  }
}

function plainAddress(u: StoreUrl, what: string, example: string): void {
  if (Object.keys(u.query).length > 0)
    throw invalid(
      `${what} take no query parameters (${Object.keys(u.query).join(', ')}); pass further ioredis options in options.redisOptions.`,
    );
  if (u.db !== undefined) throw invalid(`${what} take no database index: ${example}`);
}

interface Parsed {
  readonly topology: Topology;
  readonly urls: { readonly main: readonly StoreUrl[]; readonly sentinels: readonly StoreUrl[] };
}

/**
 * Validates the URL(s) and the topology options: one URL is one server; a list of URLs (or
 * `cluster: true`) are Cluster seed nodes; `sentinels` makes the URL's host the master group name.
 */
export function resolveTopology(
  input: StoreUrlInput,
  options: { cluster?: boolean; sentinels?: ReadonlyArray<string | URL> },
): Parsed {
  const list = typeof input === 'string' || input instanceof URL ? [input] : input;
  if (!Array.isArray(list) || list.length === 0)
    throw invalid('expected a redis:// URL or a non-empty list of Redis Cluster seed URLs.');
  const isList = !(typeof input === 'string' || input instanceof URL);
  if (options.cluster !== undefined && typeof options.cluster !== 'boolean')
    throw invalid('options.cluster must be true or false.');
  if (isList && options.cluster === false)
    throw invalid(
      'a list of URLs is a list of Redis Cluster seed nodes, but options.cluster is false.',
    );
  const main = list.map((u, i) =>
    parseStoreUrl(u, isList ? `addKitStore(app, url[${i}])` : 'addKitStore(app, url)'),
  );
  const mode: StoreMode =
    options.sentinels !== undefined
      ? 'sentinel'
      : isList || options.cluster === true
        ? 'cluster'
        : 'server';

  if (mode === 'sentinel') {
    if (isList || options.cluster === true)
      throw invalid(
        'options.sentinels and a Redis Cluster exclude each other: Sentinel watches one master, a Cluster fails over by itself.',
      );
    if (!Array.isArray(options.sentinels) || options.sentinels.length === 0) {
      throw new KitError(
        'KIT_ERR_INVALID_OPTION',
        'Invalid Kit option addKitStore options.sentinels: expected a non-empty list of Sentinel URLs such as "redis://10.0.0.1:26379".',
      );
    }
    const sentinels = options.sentinels.map((u, i) =>
      parseStoreUrl(u, `addKitStore options.sentinels[${i}]`),
    );
    sentinels.forEach((s) => plainAddress(s, 'Sentinel URLs', 'redis://[:password@]host[:26379]'));
    sameAccess(sentinels, 'the Sentinel URLs');
    const master = main[0] as StoreUrl;
    if (master.port !== undefined) {
      throw invalid(
        'with options.sentinels, the URL names the master group by its host, as in redis://:password@mymaster/0; it has a port, which makes no sense there.',
      );
    }
    return {
      topology: {
        mode,
        redacted: `${master.redacted} (sentinels ${sentinels.map((s) => s.redacted).join(', ')})`,
        secrets: [...new Set([...master.secrets, ...sentinels.flatMap((s) => s.secrets)])].sort(
          (a, b) => b.length - a.length,
        ),
        server: undefined,
        db: master.db,
        masterName: master.host,
      },
      urls: { main, sentinels },
    };
  }
  if (mode === 'cluster') {
    main.forEach((u) =>
      plainAddress(
        u,
        'Redis Cluster URLs',
        'a Redis Cluster has database 0 only; remove the /N path.',
      ),
    );
    sameAccess(main, 'the Redis Cluster seed URLs');
  }
  const first = main[0] as StoreUrl;
  return {
    topology: {
      mode,
      redacted: main.map((u) => u.redacted).join(', '),
      secrets: [...new Set(main.flatMap((u) => u.secrets))].sort((a, b) => b.length - a.length),
      server: mode === 'server' ? { host: first.host, port: first.port ?? 6379 } : undefined,
      db: first.db,
      masterName: undefined,
    },
    urls: { main, sentinels: [] },
  };
}

/** The credentials, database and TLS of a URL as ioredis options (set ones only). */
function access(u: StoreUrl, tls: RedisOptions['tls']): RedisOptions {
  return {
    ...(u.username === undefined ? {} : { username: u.username }),
    ...(u.password === undefined ? {} : { password: u.password }),
    ...(u.tls ? { tls: tls ?? {} } : {}),
  };
}

/**
 * Builds the client. Kit's fail-fast settings win over `redisOptions`/`clusterOptions`: no
 * offline queue, no retry or automatic resend of a command whose connection dropped (in a
 * Cluster: no retry after a node was lost or the cluster was down; MOVED/ASK redirects, which
 * the server answers without running the command, are still followed), a per-command timeout,
 * and a capped reconnect backoff.
 */
export function createClient(parsed: Parsed, settings: ClientSettings): Redis | Cluster {
  const { topology, urls } = parsed;
  // 50, 100, 200, ... ms, capped: a restarted Redis is picked up within the cap.
  const retry = (times: number) =>
    Math.min(50 * 2 ** Math.min(times - 1, 16), settings.reconnectMaxDelayMs);
  const failFast = {
    connectionName: settings.connectionName,
    connectTimeout: settings.connectTimeoutMs,
    commandTimeout: settings.commandTimeoutMs,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
  } satisfies RedisOptions;
  const user = settings.redisOptions;

  if (topology.mode === 'cluster') {
    const first = urls.main[0] as StoreUrl;
    return new Cluster(
      urls.main.map((u) => ({ host: u.host, port: u.port ?? 6379 })),
      {
        // Getting the slot map (a connection of its own to a node, then CLUSTER SLOTS) is part of
        // connecting: ioredis' own limit for it is 1 s per node, which a loaded host can exceed
        // while connectTimeoutMs would still allow it, and then every seed counts as unreachable.
        slotsRefreshTimeout: settings.connectTimeoutMs,
        ...settings.clusterOptions,
        redisOptions: { ...user, ...access(first, user.tls), ...failFast },
        enableOfflineQueue: false,
        lazyConnect: false,
        clusterRetryStrategy: retry,
        retryDelayOnFailover: 0,
        retryDelayOnClusterDown: 0,
      },
    );
  }
  const master = urls.main[0] as StoreUrl;
  const common = {
    ...user,
    ...master.query,
    ...access(master, user.tls),
    ...(master.db === undefined ? {} : { db: master.db }),
  };
  const kit = {
    ...failFast,
    enableOfflineQueue: false,
    lazyConnect: false,
    retryStrategy: retry,
  } satisfies RedisOptions;
  if (topology.mode === 'server') {
    return new Redis({ ...common, host: master.host, port: master.port ?? 6379, ...kit });
  }
  const sentinel = urls.sentinels[0] as StoreUrl;
  return new Redis({
    ...common,
    name: master.host,
    sentinels: urls.sentinels.map((s) => ({ host: s.host, port: s.port ?? 26379 })),
    ...(sentinel.username === undefined ? {} : { sentinelUsername: sentinel.username }),
    ...(sentinel.password === undefined ? {} : { sentinelPassword: sentinel.password }),
    ...(sentinel.tls ? { sentinelTLS: user.sentinelTLS ?? {} } : {}),
    enableTLSForSentinelMode: master.tls,
    sentinelRetryStrategy: retry,
    sentinelCommandTimeout: settings.commandTimeoutMs,
    // ioredis' failover detector disconnects on +switch-master; if that message arrives while
    // the client is asking a Sentinel for the master (it does that on every reconnect attempt
    // while the old master is down), ioredis 6.0 ends the client for good. Off: a dead master
    // closes the connection and the reconnect asks the Sentinels anyway, and a master demoted
    // while the connection stays up answers writes with READONLY, on which the client
    // reconnects (the command is failed, not resent) and asks the Sentinels again.
    failoverDetector: false,
    reconnectOnError: (err: Error) => err.message.startsWith('READONLY'),
    ...kit,
  });
}
