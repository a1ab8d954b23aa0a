import { randomUUID } from 'node:crypto';
import { storeArguments } from '@kit/core/extend';
import {
  SagaConflictError,
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
import type { RedisConnection } from './connection.js';
import {
  IDEM_RESERVE,
  IDEM_COMPLETE,
  IDEM_RELEASE,
  RATE_FIXED,
  RATE_SLIDING,
  SAGA_CREATE,
  SAGA_UPDATE,
  SAGA_DELETE,
  CRON_ACQUIRE,
  CRON_RENEW,
  CRON_RELEASE,
  CRON_GET,
} from './scripts.js';

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
    const fingerprint =
      options.fingerprint === undefined
        ? ''
        : storeArguments.key('options.fingerprint', options.fingerprint);
    const token = randomUUID();
    const [outcome, value] = list(
      await this.connection.run(IDEM_RESERVE, [this.#key(key)], [token, ttlMs, fingerprint]),
    );
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

  async complete(
    key: string,
    token: string,
    response: JsonValue,
    options: IdempotencyCompleteOptions,
  ): Promise<boolean> {
    storeArguments.key('key', key);
    storeArguments.key('token', token);
    const text = storeArguments.json('response', response);
    const ttlMs = storeArguments.ms('options.ttlMs', options?.ttlMs);
    return (
      num(await this.connection.run(IDEM_COMPLETE, [this.#key(key)], [token, text, ttlMs])) === 1
    );
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
        ? await this.connection.run(
            RATE_FIXED,
            [`${this.prefix}rl:fw:${key}`],
            [limit, windowMs, cost],
          )
        : await this.connection.run(
            RATE_SLIDING,
            [`${this.prefix}rl:sw:${key}`],
            [limit, windowMs, cost, randomUUID()],
          );
    const [allowed, remaining, resetAt, retryAfterMs] = list(reply).map(num);
    return {
      allowed: allowed === 1,
      limit,
      remaining: remaining ?? 0,
      resetAt: resetAt ?? 0,
      retryAfterMs: retryAfterMs ?? 0,
    };
  }

  async reset(key: string): Promise<void> {
    storeArguments.key('key', key);
    // Two single-key DELs rather than one two-key DEL, so the keys may live in different cluster slots.
    await this.connection.call((client) =>
      Promise.all([
        client.del(`${this.prefix}rl:fw:${key}`),
        client.del(`${this.prefix}rl:sw:${key}`),
      ]),
    );
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

  async create<T extends JsonValue>(
    id: string,
    data: T,
    options: SagaWriteOptions = {},
  ): Promise<SagaState<T>> {
    storeArguments.key('id', id);
    const text = storeArguments.json('data', data);
    const ttl =
      options.ttlMs === undefined ? '' : storeArguments.ms('options.ttlMs', options.ttlMs);
    const [ok, version, updatedAt] = list(
      await this.connection.run(SAGA_CREATE, [this.#key(id)], [text, ttl]),
    ).map(num);
    if (ok !== 1) throw new SagaConflictError(id, 0, version);
    return { id, version: 1, data: parse<T>(text), updatedAt: updatedAt ?? 0 };
  }

  async get<T extends JsonValue = JsonValue>(id: string): Promise<SagaState<T> | undefined> {
    storeArguments.key('id', id);
    const [version, data, updatedAt] = await this.connection.call((client) =>
      client.hmget(this.#key(id), 'v', 'd', 'u'),
    );
    if (version === null || version === undefined || data === null || data === undefined)
      return undefined;
    return { id, version: num(version), data: parse<T>(data), updatedAt: num(updatedAt) };
  }

  async update<T extends JsonValue>(
    id: string,
    data: T,
    expectedVersion: number,
    options: SagaWriteOptions = {},
  ): Promise<SagaState<T>> {
    storeArguments.key('id', id);
    const text = storeArguments.json('data', data);
    storeArguments.version('expectedVersion', expectedVersion);
    const ttl =
      options.ttlMs === undefined ? '' : storeArguments.ms('options.ttlMs', options.ttlMs);
    const [ok, version, updatedAt] = list(
      await this.connection.run(SAGA_UPDATE, [this.#key(id)], [expectedVersion, text, ttl]),
    ).map(num);
    if (ok !== 1) throw new SagaConflictError(id, expectedVersion, version);
    return {
      id,
      version: version ?? expectedVersion + 1,
      data: parse<T>(text),
      updatedAt: updatedAt ?? 0,
    };
  }

  async delete(id: string, expectedVersion?: number): Promise<boolean> {
    storeArguments.key('id', id);
    if (expectedVersion !== undefined) storeArguments.version('expectedVersion', expectedVersion);
    const [outcome, actual] = list(
      await this.connection.run(SAGA_DELETE, [this.#key(id)], [expectedVersion ?? '']),
    ).map(num);
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
