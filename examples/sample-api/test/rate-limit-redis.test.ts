// @test-lines: once - the sample's rate limit through Kit's Redis store
// kitRateLimitStore with @kit/store-redis: two instances of a service behind @fastify/rate-limit
// share one limit on a real redis-server, even when their requests race.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import rateLimit from '@fastify/rate-limit';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, kitRateLimitStore, useKit } from '@kit/core';
import { addKitStore } from '@kit/store-redis';
import { describeRedis, RedisServer } from '@kit/test-support/redis';

class QuotesEndpoint {
  async addRoutes(app: FastifyInstance) {
    await app.register(rateLimit, { max: 10, timeWindow: 60_000, store: kitRateLimitStore(app) });
    app.get('', async () => ({ quote: 'ok' }));
  }
}

async function instance(url: string): Promise<FastifyInstance> {
  const app = Fastify();
  addKit(app, [QuotesEndpoint], (opt) => {
    opt.openApiPath = false;
  });
  addKitStore(app, url, { keyPrefix: 'rl-test:' });
  await useKit(app);
  await app.ready();
  return app;
}

describeRedis('kitRateLimitStore on Redis: one limit for every instance', () => {
  let redis: RedisServer;
  let one: FastifyInstance;
  let two: FastifyInstance;
  before(async () => {
    redis = await RedisServer.start();
    [one, two] = await Promise.all([instance(redis.url), instance(redis.url)]);
  });
  after(async () => {
    await one?.close();
    await two?.close();
    await redis?.dispose();
  });

  it('40 concurrent requests of one client over two instances: exactly 10 admitted, the rest 429 with the plugin headers', async () => {
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 === 0 ? one : two).inject({ url: '/api/quotes', remoteAddress: '10.2.2.2' }),
      ),
    );
    const admitted = responses.filter((r) => r.statusCode === 200);
    const refused = responses.filter((r) => r.statusCode === 429);
    assert.equal(admitted.length, 10);
    assert.equal(refused.length, 30);
    assert.deepEqual(
      admitted.map((r) => Number(r.headers['x-ratelimit-remaining'])).sort((a, b) => a - b),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
    for (const r of refused) {
      assert.equal(r.headers['x-ratelimit-limit'], '10');
      assert.ok(Number(r.headers['retry-after']) >= 59);
    }
    // Another client is counted apart.
    assert.equal(
      (await two.inject({ url: '/api/quotes', remoteAddress: '10.3.3.3' })).statusCode,
      200,
    );
  });
});
