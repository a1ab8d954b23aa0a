// The public surface of @kit/store-redis, and nothing else.
export {
  addKitStore,
  createRedisStores,
  KIT_REDIS_STORE,
  type KitStoreOptions,
  type KitRedisStore,
} from './plugin.js';
export {
  useKitStoreHealthCheck,
  StoreHealthCheck,
  type KitStoreHealthCheckOptions,
} from './health.js';
export type { StoreMode, StoreUrlInput } from './topology.js';
export type { StoreLogger } from './connection.js';
export {
  RedisIdempotencyStore,
  RedisRateLimitStore,
  RedisSagaStore,
  RedisCronJobStore,
} from './stores.js';
export { redactStoreUrl } from './url.js';
export {
  redisStreamTarget,
  type RedisStreamTarget,
  type RedisStreamTargetOptions,
  type StreamMessage,
} from './stream-target.js';
export { redisStoreErrors } from './errors.js';
