// @test-lines: every - ioredis: the store driver on this line
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { Redis } from 'ioredis';
import { createRedisStores, type KitRedisStore } from '@kit/store-redis';
import { storeConformance } from '@kit/test-support/store-conformance';
import { conformanceSet, describeRedis, RedisServer, skipRedis } from '@kit/test-support/redis';

let server: RedisServer | undefined;

// The same suite the memory stores pass, against a real redis-server; each connect() is a new
// connection (as a second service instance would have).
storeConformance('redis', {
  skip: skipRedis,
  before: async () => {
    server = await RedisServer.start();
  },
  connect: async () => {
    return conformanceSet(createRedisStores(server!.url, { keyPrefix: 'conformance:' }));
  },
  after: async () => {
    await server?.dispose();
  },
});

describeRedis('redis stores: key layout and scripts', () => {
  let redis: RedisServer;
  let stores: KitRedisStore;
  let raw: Redis;

  before(async () => {
    redis = await RedisServer.start();
    stores = createRedisStores(redis.url, { keyPrefix: 'app1:' });
    await stores.waitUntilConnected();
    raw = new Redis(redis.url);
  });
  after(async () => {
    await stores?.close();
    raw?.disconnect();
    await redis?.dispose();
  });

  it('writes one key per record under keyPrefix, with the documented types and expiries', async () => {
    const id = randomUUID();
    const r = await stores.idempotency.reserve(`pay-${id}`, { ttlMs: 30_000, fingerprint: 'fp' });
    assert.ok(r.outcome === 'reserved');
    await stores.rateLimit.consume(`ip-${id}`, { limit: 5, windowMs: 60_000 });
    await stores.rateLimit.consume(`ip-${id}`, {
      limit: 5,
      windowMs: 60_000,
      algorithm: 'sliding-window',
    });
    await stores.saga.create(`order-${id}`, { step: 1 });
    await stores.cronJob.tryAcquire(`nightly-${id}`, 'me', 60_000);

    const layout: Record<string, [string, boolean]> = {};
    for (const key of (await raw.keys(`app1:*${id}`)).sort()) {
      layout[key.replace(id, 'ID')] = [await raw.type(key), (await raw.pttl(key)) > 0];
    }
    assert.deepEqual(layout, {
      'app1:cron:nightly-ID': ['string', true],
      'app1:idem:pay-ID': ['hash', true],
      'app1:rl:fw:ip-ID': ['string', true],
      'app1:rl:sw:ip-ID': ['zset', true],
      'app1:saga:order-ID': ['hash', false],
    });
    assert.deepEqual(await raw.hgetall(`app1:idem:pay-${id}`), { s: 'p', t: r.token, f: 'fp' });
    assert.equal(await raw.get(`app1:cron:nightly-${id}`), 'me');
    assert.equal(await raw.get(`app1:rl:fw:ip-${id}`), '1');
    const saga = await raw.hgetall(`app1:saga:order-${id}`);
    assert.deepEqual({ v: saga.v, d: saga.d }, { v: '1', d: '{"step":1}' });
    await stores.rateLimit.reset(`ip-${id}`);
    assert.equal(await raw.exists(`app1:rl:fw:ip-${id}`, `app1:rl:sw:ip-${id}`), 0);
  });

  it('keeps working after the server forgets its scripts (SCRIPT FLUSH, as after a restart)', async () => {
    const key = `flush-${randomUUID()}`;
    assert.equal(
      (await stores.rateLimit.consume(key, { limit: 2, windowMs: 60_000 })).remaining,
      1,
    );
    await raw.script('FLUSH');
    assert.equal(
      (await stores.rateLimit.consume(key, { limit: 2, windowMs: 60_000 })).remaining,
      0,
    );
  });

  it('a Redis error that is not about availability is KIT_ERR_STORE_FAILED', async () => {
    const key = `wrongtype-${randomUUID()}`;
    await raw.set(`app1:idem:${key}`, 'not a hash');
    await assert.rejects(
      stores.idempotency.reserve(key, { ttlMs: 1000 }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'KIT_ERR_STORE_FAILED');
        assert.match(err.message, /WRONGTYPE/);
        return true;
      },
    );
  });
});
