// The public surface of @kit/store-redis, and nothing else.
export {
  addKitStore,
  useKitStoreHealthCheck,
  createRedisStores,
  StoreHealthCheck,
  KIT_REDIS_STORE,
  type KitStoreOptions,
  type KitStoreHealthCheckOptions,
  type KitRedisStore,
} from './plugin.js';
export type { StoreLogger } from './connection.js';
export { RedisIdempotencyStore, RedisRateLimitStore, RedisSagaStore, RedisCronJobStore } from './stores.js';
export { redactStoreUrl } from './url.js';
