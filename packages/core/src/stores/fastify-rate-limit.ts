// A store for @fastify/rate-limit backed by Kit's `rateLimitStore`. Typed structurally: @kit/core
// neither imports nor requires @fastify/rate-limit (hosts that use it have it).
import { KitError, show } from '../shared/errors.js';
import type { KitServices } from '../shared/services.js';
import { KitStoreNames } from './memory.js';
import type { IRateLimitStore, RateLimitAlgorithm } from './types.js';

/**
 * Options of {@link kitRateLimitStore}.
 *
 * @example
 * ```ts
 * const options: KitRateLimitStoreOptions = { algorithm: 'sliding-window', keyPrefix: 'api:' };
 * ```
 */
export interface KitRateLimitStoreOptions {
  /** Default `fixed-window`, as @fastify/rate-limit's own stores count. */
  algorithm?: RateLimitAlgorithm;
  /** Prepended to every key the plugin hands over (default `rate-limit:`), so several limiters can share one store. */
  keyPrefix?: string;
}

/**
 * What @fastify/rate-limit expects of a store (its `FastifyRateLimitStore`): what
 * {@link kitRateLimitStore}'s class builds.
 *
 * @example
 * ```ts
 * const store: RateLimitPluginStore = new (kitRateLimitStore(app))({ timeWindow: 60_000 });
 * ```
 */
export interface RateLimitPluginStore {
  incr(
    key: string,
    callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
    timeWindow: number,
    max: number,
  ): void;
  read(
    key: string,
    callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
    timeWindow: number,
    max: number,
  ): void;
  child(routeOptions: object): RateLimitPluginStore;
}

/**
 * The class handed to @fastify/rate-limit's `store` option; the plugin builds it with its options.
 *
 * @example
 * ```ts
 * const Store: RateLimitPluginStoreClass = kitRateLimitStore(app);
 * await app.register(rateLimit, { max: 100, timeWindow: 60_000, store: Store });
 * ```
 */
export type RateLimitPluginStoreClass = new (options: object) => RateLimitPluginStore;

/**
 * Where the store comes from: a Fastify instance with Kit (resolved at first use), or a store.
 *
 * @example
 * ```ts
 * const fromKit: RateLimitStoreSource = app;                         // app.kit.services' rateLimitStore
 * const direct: RateLimitStoreSource = new MemoryRateLimitStore();
 * ```
 */
export type RateLimitStoreSource =
  IRateLimitStore | { readonly kit: { readonly services: KitServices } };

type PluginOptions = {
  continueExceeding?: unknown;
  exponentialBackoff?: unknown;
  ban?: unknown;
  routeInfo?: { method?: unknown; url?: unknown };
};

// The plugin's options that count requests beyond the limit, which Kit's store never does (a
// refused call counts nothing, so the limit holds atomically across instances): refused at start-up.
function refuseUncountable(options: PluginOptions): void {
  for (const name of ['continueExceeding', 'exponentialBackoff'] as const) {
    if (options[name] === true) {
      throw new KitError(
        'KIT_ERR_INVALID_OPTION',
        `@fastify/rate-limit option ${name} = true is not supported by kitRateLimitStore: Kit's store counts no request beyond the limit. Leave it off, or use the plugin's own store.`,
      );
    }
  }
  if (typeof options.ban === 'number' && options.ban > 0) {
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      `@fastify/rate-limit option ban = ${show(options.ban)} is not supported by kitRateLimitStore: Kit's store counts no request beyond the limit, so only ban: 0 (403 from the first refused request) can work.`,
    );
  }
}

/**
 * A store for [`@fastify/rate-limit`](https://github.com/fastify/fastify-rate-limit) that counts in
 * Kit's `rateLimitStore`: the in-memory store, or Redis with `@kit/store-redis`, where one atomic
 * step checks and counts, so every instance sharing the store admits at most `max` requests per
 * window in total. The plugin keeps its own options, headers (`x-ratelimit-*`, or the draft
 * `ratelimit-*` with `enableDraftSpec`), `keyGenerator`, `allowList`, per-route `config.rateLimit`
 * and its 429 error (a problem-details answer with `opt.problemDetails`).
 *
 * The store is resolved from `app.kit.services` at the first request, so `addKitStore` may come
 * after the plugin's registration. When the store fails (Redis down), the plugin's `skipOnError`
 * decides: `false` (default) answers 503, `true` admits the request. `continueExceeding`,
 * `exponentialBackoff` and `ban` > 0 count requests beyond the limit and fail start-up with
 * `KIT_ERR_INVALID_OPTION`.
 *
 * @param source The Fastify instance with Kit (its `rateLimitStore` is resolved at the first request), or a store.
 * @throws {KitError} `KIT_ERR_INVALID_OPTION` for a `keyPrefix` that is not a string or an unknown algorithm; the class throws it too for plugin options Kit cannot honour (`continueExceeding`, `exponentialBackoff`, `ban` > 0).
 * @example
 * ```ts
 * import rateLimit from '@fastify/rate-limit';
 *
 * export class PaymentsEndpoint implements IKitEndpoint {
 *   async addRoutes(app: FastifyInstance) {
 *     await app.register(rateLimit, { global: false, enableDraftSpec: true, store: kitRateLimitStore(app) });
 *     app.post('', { config: { rateLimit: { max: 20, timeWindow: 60_000 } } }, async () => ({ ok: true }));
 *   }
 * }
 * ```
 */
export function kitRateLimitStore(
  source: RateLimitStoreSource,
  options: KitRateLimitStoreOptions = {},
): RateLimitPluginStoreClass {
  const algorithm = options.algorithm ?? 'fixed-window';
  if (algorithm !== 'fixed-window' && algorithm !== 'sliding-window') {
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      `kitRateLimitStore option algorithm = ${show(algorithm)}: expected "fixed-window" or "sliding-window".`,
    );
  }
  const rootPrefix = options.keyPrefix ?? 'rate-limit:';
  if (typeof rootPrefix !== 'string')
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      `kitRateLimitStore option keyPrefix = ${show(rootPrefix)}: expected a string.`,
    );
  let resolved: IRateLimitStore | undefined;
  const store = (): IRateLimitStore =>
    (resolved ??=
      'consume' in source
        ? source
        : source.kit.services.resolve<IRateLimitStore>(KitStoreNames.rateLimit));

  function count(
    key: string,
    cost: 0 | 1,
    windowMs: number,
    max: number,
    callback: Parameters<RateLimitPluginStore['incr']>[1],
  ): void {
    // max 0 refuses everything; the store only takes positive limits.
    if (max < 1) {
      callback(null, { current: cost, ttl: windowMs });
      return;
    }
    store()
      .consume(key, { limit: max, windowMs, algorithm, cost })
      .then(
        (r) => {
          // A refused call counted nothing; the plugin reads current > max as "exceeded".
          const current = r.allowed ? r.limit - r.remaining : r.limit + 1;
          const ttl = r.allowed ? Math.max(0, r.resetAt - Date.now()) : r.retryAfterMs;
          return { current, ttl };
        },
        (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
      )
      .then((outcome) => (outcome instanceof Error ? callback(outcome) : callback(null, outcome)))
      .catch(() => undefined); // a callback that throws must not become an unhandled rejection
  }

  class KitRateLimitPluginStore implements RateLimitPluginStore {
    readonly #prefix: string;

    constructor(pluginOptions: object, prefix = rootPrefix) {
      refuseUncountable(pluginOptions as PluginOptions);
      this.#prefix = prefix;
    }

    incr(
      key: string,
      callback: Parameters<RateLimitPluginStore['incr']>[1],
      timeWindow: number,
      max: number,
    ): void {
      count(`${this.#prefix}${key}`, 1, timeWindow, max, callback);
    }

    read(
      key: string,
      callback: Parameters<RateLimitPluginStore['read']>[1],
      timeWindow: number,
      max: number,
    ): void {
      count(`${this.#prefix}${key}`, 0, timeWindow, max, callback);
    }

    /** A route with its own `config.rateLimit` counts apart from the others, as the plugin's stores do. */
    child(routeOptions: object): RateLimitPluginStore {
      const info = (routeOptions as PluginOptions).routeInfo;
      const route =
        typeof info?.url === 'string'
          ? `${Array.isArray(info.method) ? info.method.join(',') : String(info.method)}:${info.url}:`
          : '';
      return new KitRateLimitPluginStore(routeOptions, `${this.#prefix}${route}`);
    }
  }
  return KitRateLimitPluginStore;
}
