import { randomUUID } from 'node:crypto';
import {
  SagaConflictError,
  storeArguments,
  type CronLock,
  type ICronJobStore,
  type IdempotencyCompleteOptions,
  type IdempotencyReservation,
  type IdempotencyReserveOptions,
  type IIdempotencyStore,
  type IRateLimitStore,
  type ISagaStore,
  type JsonValue,
  type RateLimitOptions,
  type RateLimitResult,
  type SagaState,
  type SagaWriteOptions,
} from '@kit/core';
import { lua, type RedisConnection } from './connection.js';

// Every script touches exactly one key (cluster-safe) and reads the time from the server
// (`TIME`), so instances with skewed clocks still agree on windows and expiries. Redis >= 5
// replicates script effects, which makes TIME in a writing script safe.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// Idempotency record: hash { s = 'p' (pending) | 'c' (completed), t = token, f = fingerprint, r = response JSON }.
const IDEM_RESERVE = lua(
  'idempotency.reserve',
  `local rec = redis.call('HMGET', KEYS[1], 's', 'f', 'r')
if not rec[1] then
  redis.call('HSET', KEYS[1], 's', 'p', 't', ARGV[1], 'f', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'reserved'}
end
if ARGV[3] ~= '' and rec[2] and rec[2] ~= '' and rec[2] ~= ARGV[3] then return {'mismatch'} end
if rec[1] == 'c' then return {'completed', rec[3]} end
return {'pending', redis.call('PTTL', KEYS[1])}`,
);

const IDEM_COMPLETE = lua(
  'idempotency.complete',
  `local rec = redis.call('HMGET', KEYS[1], 's', 't')
if rec[1] ~= 'p' or rec[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 's', 'c', 'r', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`,
);

const IDEM_RELEASE = lua(
  'idempotency.release',
  `local rec = redis.call('HMGET', KEYS[1], 's', 't')
if rec[1] ~= 'p' or rec[2] ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`,
);

// Fixed window: a counter whose PX is the window end. Returns {allowed, remaining, resetAt, retryAfterMs}.
const RATE_FIXED = lua(
  'rateLimit.fixed',
  `local limit, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
${NOW}
local ttl = redis.call('PTTL', KEYS[1])
local count = 0
if ttl > 0 then count = tonumber(redis.call('GET', KEYS[1])) or 0 end
if count + cost > limit then return {0, math.max(0, limit - count), now + ttl, ttl} end
if cost == 0 then
  if ttl > 0 then return {1, limit - count, now + ttl, 0} end
  return {1, limit, now, 0}
end
if ttl > 0 then
  redis.call('INCRBY', KEYS[1], cost)
else
  redis.call('SET', KEYS[1], cost, 'PX', ARGV[2])
  ttl = window
end
return {1, limit - count - cost, now + ttl, 0}`,
);

// Sliding log: a sorted set of units scored by the time they were counted; a unit leaves the
// window windowMs later. Members are unique per call (ARGV[4] is a fresh nonce).
const RATE_SLIDING = lua(
  'rateLimit.sliding',
  `local limit, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local allowed = 0
if count + cost <= limit then
  allowed = 1
  if cost > 0 then
    for i = 1, cost do redis.call('ZADD', KEYS[1], now, ARGV[4] .. ':' .. i) end
    count = count + cost
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
end
local resetAt, retry = now, 0
if count > 0 then
  resetAt = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]) + window
end
if allowed == 0 then
  local idx = count + cost - limit - 1
  retry = tonumber(redis.call('ZRANGE', KEYS[1], idx, idx, 'WITHSCORES')[2]) + window - now
end
return {allowed, math.max(0, limit - count), resetAt, retry}`,
);

// Saga: hash { v = version, d = data JSON, u = updatedAt }. Conflicts return {0, actual?}.
const SAGA_CREATE = lua(
  'saga.create',
  `local v = redis.call('HGET', KEYS[1], 'v')
if v then return {0, tonumber(v)} end
${NOW}
redis.call('HSET', KEYS[1], 'v', 1, 'd', ARGV[1], 'u', string.format('%.0f', now))
if ARGV[2] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {1, 1, now}`,
);

const SAGA_UPDATE = lua(
  'saga.update',
  `local v = redis.call('HGET', KEYS[1], 'v')
if not v then return {0} end
if tonumber(v) ~= tonumber(ARGV[1]) then return {0, tonumber(v)} end
${NOW}
local next = tonumber(v) + 1
redis.call('HSET', KEYS[1], 'v', next, 'd', ARGV[2], 'u', string.format('%.0f', now))
if ARGV[3] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {1, next, now}`,
);

const SAGA_DELETE = lua(
  'saga.delete',
  `local v = redis.call('HGET', KEYS[1], 'v')
if not v then return {0} end
if ARGV[1] ~= '' and tonumber(v) ~= tonumber(ARGV[1]) then return {2, tonumber(v)} end
redis.call('DEL', KEYS[1])
return {1}`,
);

// Cron lock: a string holding the owner, with PX as the lease. SET NX PX takes a free lock; the
// owner check and the change are one script so a lapsed owner can never touch a new owner's lock.
const CRON_ACQUIRE = lua(
  'cron.acquire',
  `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`,
);

const CRON_RENEW = lua(
  'cron.renew',
  `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`,
);

const CRON_RELEASE = lua(
  'cron.release',
  `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`,
);

const CRON_GET = lua(
  'cron.get',
  `local owner = redis.call('GET', KEYS[1])
if not owner then return {} end
local ttl = redis.call('PTTL', KEYS[1])
${NOW}
return {owner, now + ttl}`,
);

/** The reply of a script as a list, whatever the protocol. */
function list(reply: unknown): unknown[] {
  return Array.isArray(reply) ? reply : [];
}

function num(value: unknown): number {
  return typeof value === 'number' ? value : Number(value);
}

function parse<T extends JsonValue>(text: unknown): T {
  return JSON.parse(String(text)) as T;
}

/**
 * Redis {@link IIdempotencyStore}: one hash per key at `{prefix}idem:{key}`; reserve, complete and
 * release are Lua scripts, so first-writer-wins holds across every instance using the server.
 *
 * @example
 * ```ts
 * const { idempotency } = createRedisStores(process.env.REDIS_URL!);
 * const r = await idempotency.reserve('payments:abc', { ttlMs: 30_000 });
 * ```
 */
export class RedisIdempotencyStore implements IIdempotencyStore {
  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
  ) {}

  #key(key: string): string {
    return `${this.prefix}idem:${key}`;
  }

  async reserve(key: string, options: IdempotencyReserveOptions): Promise<IdempotencyReservation> {
    storeArguments.key('key', key);
    const ttlMs = storeArguments.ms('options.ttlMs', options?.ttlMs);
    const fingerprint = options.fingerprint === undefined ? '' : storeArguments.key('options.fingerprint', options.fingerprint);
    const token = randomUUID();
    const [outcome, value] = list(await this.connection.run(IDEM_RESERVE, [this.#key(key)], [token, ttlMs, fingerprint]));
    switch (outcome) {
      case 'reserved':
        return { outcome: 'reserved', token };
      case 'mismatch':
        return { outcome: 'mismatch' };
      case 'completed':
        return { outcome: 'completed', response: parse(value) };
      default:
        return { outcome: 'pending', retryAfterMs: Math.max(1, num(value)) };
    }
  }

  async complete(key: string, token: string, response: JsonValue, options: IdempotencyCompleteOptions): Promise<boolean> {
    storeArguments.key('key', key);
    storeArguments.key('token', token);
    const text = storeArguments.json('response', response);
    const ttlMs = storeArguments.ms('options.ttlMs', options?.ttlMs);
    return num(await this.connection.run(IDEM_COMPLETE, [this.#key(key)], [token, text, ttlMs])) === 1;
  }

  async release(key: string, token: string): Promise<boolean> {
    storeArguments.key('key', key);
    storeArguments.key('token', token);
    return num(await this.connection.run(IDEM_RELEASE, [this.#key(key)], [token])) === 1;
  }
}

/**
 * Redis {@link IRateLimitStore}: a counter at `{prefix}rl:fw:{key}` (fixed window) or a sorted
 * set at `{prefix}rl:sw:{key}` (sliding log); check-and-count is one Lua script on the server's
 * clock, so a limit is exact across every instance using the server.
 *
 * @example
 * ```ts
 * const { rateLimit } = createRedisStores(process.env.REDIS_URL!);
 * const r = await rateLimit.consume(`ip:${ip}`, { limit: 100, windowMs: 60_000 });
 * ```
 */
export class RedisRateLimitStore implements IRateLimitStore {
  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
  ) {}

  async consume(key: string, options: RateLimitOptions): Promise<RateLimitResult> {
    storeArguments.key('key', key);
    const { limit, windowMs, algorithm, cost } = storeArguments.rateLimit(options);
    const reply =
      algorithm === 'fixed-window'
        ? await this.connection.run(RATE_FIXED, [`${this.prefix}rl:fw:${key}`], [limit, windowMs, cost])
        : await this.connection.run(RATE_SLIDING, [`${this.prefix}rl:sw:${key}`], [limit, windowMs, cost, randomUUID()]);
    const [allowed, remaining, resetAt, retryAfterMs] = list(reply).map(num);
    return { allowed: allowed === 1, limit, remaining: remaining ?? 0, resetAt: resetAt ?? 0, retryAfterMs: retryAfterMs ?? 0 };
  }

  async reset(key: string): Promise<void> {
    storeArguments.key('key', key);
    // Two single-key DELs rather than one two-key DEL, so the keys may live in different cluster slots.
    await this.connection.call((client) => Promise.all([client.del(`${this.prefix}rl:fw:${key}`), client.del(`${this.prefix}rl:sw:${key}`)]));
  }
}

/**
 * Redis {@link ISagaStore}: one hash per saga at `{prefix}saga:{id}`; create, update and delete
 * compare the version inside a Lua script, so exactly one concurrent writer of a version wins.
 *
 * @example
 * ```ts
 * const { saga } = createRedisStores(process.env.REDIS_URL!);
 * const s = await saga.create('order-42', { step: 'reserve' });
 * await saga.update('order-42', { step: 'charge' }, s.version);
 * ```
 */
export class RedisSagaStore implements ISagaStore {
  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
  ) {}

  #key(id: string): string {
    return `${this.prefix}saga:${id}`;
  }

  async create<T extends JsonValue>(id: string, data: T, options: SagaWriteOptions = {}): Promise<SagaState<T>> {
    storeArguments.key('id', id);
    const text = storeArguments.json('data', data);
    const ttl = options.ttlMs === undefined ? '' : storeArguments.ms('options.ttlMs', options.ttlMs);
    const [ok, version, updatedAt] = list(await this.connection.run(SAGA_CREATE, [this.#key(id)], [text, ttl])).map(num);
    if (ok !== 1) throw new SagaConflictError(id, 0, version);
    return { id, version: 1, data: parse<T>(text), updatedAt: updatedAt ?? 0 };
  }

  async get<T extends JsonValue = JsonValue>(id: string): Promise<SagaState<T> | undefined> {
    storeArguments.key('id', id);
    const [version, data, updatedAt] = await this.connection.call((client) => client.hmget(this.#key(id), 'v', 'd', 'u'));
    if (version === null || version === undefined || data === null || data === undefined) return undefined;
    return { id, version: num(version), data: parse<T>(data), updatedAt: num(updatedAt) };
  }

  async update<T extends JsonValue>(id: string, data: T, expectedVersion: number, options: SagaWriteOptions = {}): Promise<SagaState<T>> {
    storeArguments.key('id', id);
    const text = storeArguments.json('data', data);
    storeArguments.version('expectedVersion', expectedVersion);
    const ttl = options.ttlMs === undefined ? '' : storeArguments.ms('options.ttlMs', options.ttlMs);
    const [ok, version, updatedAt] = list(await this.connection.run(SAGA_UPDATE, [this.#key(id)], [expectedVersion, text, ttl])).map(num);
    if (ok !== 1) throw new SagaConflictError(id, expectedVersion, version);
    return { id, version: version ?? expectedVersion + 1, data: parse<T>(text), updatedAt: updatedAt ?? 0 };
  }

  async delete(id: string, expectedVersion?: number): Promise<boolean> {
    storeArguments.key('id', id);
    if (expectedVersion !== undefined) storeArguments.version('expectedVersion', expectedVersion);
    const [outcome, actual] = list(await this.connection.run(SAGA_DELETE, [this.#key(id)], [expectedVersion ?? ''])).map(num);
    if (outcome === 2) throw new SagaConflictError(id, expectedVersion ?? 0, actual);
    return outcome === 1;
  }
}

/**
 * Redis {@link ICronJobStore}: one string per job at `{prefix}cron:{job}` holding the owner, its
 * PX being the lease. Acquire is `SET NX PX` (or an owner-checked extend); renew and release
 * check the owner inside a Lua script.
 *
 * @example
 * ```ts
 * const { cronJob } = createRedisStores(process.env.REDIS_URL!);
 * if (await cronJob.tryAcquire('nightly', owner, 60_000)) { ... }
 * ```
 */
export class RedisCronJobStore implements ICronJobStore {
  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
  ) {}

  #key(job: string): string {
    return `${this.prefix}cron:${job}`;
  }

  async tryAcquire(job: string, owner: string, ttlMs: number): Promise<boolean> {
    storeArguments.key('job', job);
    storeArguments.key('owner', owner);
    storeArguments.ms('ttlMs', ttlMs);
    return num(await this.connection.run(CRON_ACQUIRE, [this.#key(job)], [owner, ttlMs])) === 1;
  }

  async renew(job: string, owner: string, ttlMs: number): Promise<boolean> {
    storeArguments.key('job', job);
    storeArguments.key('owner', owner);
    storeArguments.ms('ttlMs', ttlMs);
    return num(await this.connection.run(CRON_RENEW, [this.#key(job)], [owner, ttlMs])) === 1;
  }

  async release(job: string, owner: string): Promise<boolean> {
    storeArguments.key('job', job);
    storeArguments.key('owner', owner);
    return num(await this.connection.run(CRON_RELEASE, [this.#key(job)], [owner])) === 1;
  }

  async getLock(job: string): Promise<CronLock | undefined> {
    storeArguments.key('job', job);
    const [owner, expiresAt] = list(await this.connection.run(CRON_GET, [this.#key(job)], []));
    return owner === undefined ? undefined : { owner: String(owner), expiresAt: num(expiresAt) };
  }
}
