// @test-lines: once - the sample's payments through Kit's stores
// The sample's /api/payments route with Kit's memory stores, and with Redis shared by two
// instances of the service (when redis-server is installed).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { RedisRateLimitStore } from '@kit/store-redis';
import { buildApp } from '../src/app.js';
import { describeRedis, RedisServer } from '@kit/test-support/redis';

function pay(
  app: FastifyInstance,
  key: string | undefined,
  body: object = { orderId: '100', amountCents: 4200 },
) {
  return app.inject({
    method: 'POST',
    url: '/api/payments',
    headers: key === undefined ? {} : { 'idempotency-key': key },
    payload: body,
  });
}

describe('sample /api/payments with the memory stores (no REDIS_URL)', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildApp({ adminApiKey: 'k', logger: false });
  });
  after(async () => {
    await app?.close();
  });

  it('replays the first response for a retried Idempotency-Key and refuses a reused key with another body', async () => {
    const first = await pay(app, 'key-1');
    assert.equal(first.statusCode, 201);
    assert.equal(first.headers['idempotent-replayed'], 'false');
    const retry = await pay(app, 'key-1');
    assert.equal(retry.statusCode, 201);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.json(), first.json());
    assert.equal((await pay(app, 'key-1', { orderId: '101', amountCents: 1 })).statusCode, 422);
    assert.equal((await pay(app, undefined)).statusCode, 400);
  });

  it('rate-limits payments per client: the 21st in a minute is 429 with Retry-After', async () => {
    const fresh = await buildApp({ adminApiKey: 'k', logger: false });
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await pay(fresh, `rl-${i}`)).statusCode);
    assert.deepEqual(statuses, [...Array<number>(20).fill(201), 429]);
    const refused = await pay(fresh, 'rl-last');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.equal(refused.headers['ratelimit-remaining'], '0');
    await fresh.close();
  });
});

describeRedis('sample /api/payments with REDIS_URL: two instances share the stores', () => {
  let redis: RedisServer;
  let one: FastifyInstance;
  let two: FastifyInstance;
  before(async () => {
    redis = await RedisServer.start();
    [one, two] = await Promise.all([
      buildApp({ adminApiKey: 'k', logger: false, redisUrl: redis.url }),
      buildApp({ adminApiKey: 'k', logger: false, redisUrl: redis.url }),
    ]);
    await Promise.all([one.ready(), two.ready()]);
  });
  after(async () => {
    await one?.close();
    await two?.close();
    await redis?.dispose();
  });

  it('uses the Redis stores and surfaces the redis check in /healthz?tag=ready', async () => {
    assert.ok(one.kit.services.resolve('rateLimitStore') instanceof RedisRateLimitStore);
    const redisCheck = one.kit.healthChecks.registrations().find((r) => r.name === 'redis');
    assert.deepEqual(redisCheck?.tags, ['ready']);
    const res = await one.inject('/healthz?tag=ready');
    const body = res.json<{ checks: Record<string, { status: string }> }>();
    assert.equal(body.checks.redis?.status, 'healthy', res.body);
  });

  it('@fastify/rate-limit counts in Redis: 20 payments a minute per client across both instances, then 429 on either', async () => {
    // A client address of its own, so the other tests' payments keep theirs.
    const payFrom = (app: FastifyInstance, key: string) =>
      app.inject({
        method: 'POST',
        url: '/api/payments',
        remoteAddress: '10.9.9.9',
        headers: { 'idempotency-key': key },
        payload: { orderId: '100', amountCents: 4200 },
      });
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++)
      statuses.push((await payFrom(i % 2 === 0 ? one : two, `shared-limit-${i}`)).statusCode);
    assert.deepEqual(statuses, [...Array<number>(20).fill(201), 429, 429]);
    const refused = await payFrom(one, 'shared-limit-last');
    assert.equal(refused.headers['ratelimit-remaining'], '0');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
  });

  it('a retry that lands on the other instance replays the first response', async () => {
    const first = await pay(one, 'shared-key');
    const retry = await pay(two, 'shared-key');
    assert.equal(first.statusCode, 201);
    assert.equal(retry.statusCode, 201);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.json(), first.json());
  });
});
