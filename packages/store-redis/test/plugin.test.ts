// @test-lines: every - ioredis: the store driver on this line
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { inspect } from 'node:util';
import pino from 'pino';
import Fastify, { type FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import {
  addKit,
  KitError,
  MemoryRateLimitStore,
  StoreUnavailableError,
  useKit,
  type EndpointClass,
  type IRateLimitStore,
} from '@kit/core';
import {
  addKitStore,
  createRedisStores,
  KIT_REDIS_STORE,
  redactStoreUrl,
  RedisCronJobStore,
  RedisIdempotencyStore,
  RedisRateLimitStore,
  RedisSagaStore,
  StoreHealthCheck,
  useKitStoreHealthCheck,
} from '@kit/store-redis';
import { evaluateRedisCheck } from './health.ts';
import { logSink } from './log-sink.ts';
import { describeRedis, RedisServer } from '@kit/test-support/redis';
import { until } from '@kit/test-support/until';

describeRedis('addKitStore / useKitStoreHealthCheck', () => {
  let redis: RedisServer;
  before(async () => {
    redis = await RedisServer.start();
  });
  after(async () => {
    await redis?.dispose();
  });

  it('registers the Redis implementations of all four stores, and the KitRedisStore, in app.kit.services', async () => {
    const app = Fastify({ loggerInstance: pino({ level: 'silent' }) }); // a custom logger changes the instance type
    const kit = addKit(app, []);
    assert.ok(
      kit.services.resolve('rateLimitStore') instanceof MemoryRateLimitStore,
      'memory before addKitStore',
    );
    const store = addKitStore(app, redis.url);
    assert.ok(kit.services.resolve('idempotencyStore') instanceof RedisIdempotencyStore);
    assert.ok(kit.services.resolve('rateLimitStore') instanceof RedisRateLimitStore);
    assert.ok(kit.services.resolve('sagaStore') instanceof RedisSagaStore);
    assert.ok(kit.services.resolve('cronJobStore') instanceof RedisCronJobStore);
    assert.equal(kit.services.resolve(KIT_REDIS_STORE), store);
    assert.equal(store.keyPrefix, 'kit:');

    // An endpoint class receives the Redis store by constructor injection.
    class LimitedEndpoint {
      constructor(private readonly deps: { rateLimitStore: IRateLimitStore }) {}
      addRoutes(scope: FastifyInstance) {
        scope.get('', async () =>
          this.deps.rateLimitStore.consume('limited', { limit: 10, windowMs: 60_000 }),
        );
      }
    }
    await app.close();
    const app2 = Fastify();
    // EndpointClass types the constructor as (cradle: Record<string, unknown>); typed deps need a cast today.
    addKit(app2, [LimitedEndpoint as unknown as EndpointClass]);
    addKitStore(app2, redis.url, { keyPrefix: `t${Date.now()}:` });
    await useKit(app2);
    const res = await app2.inject('/api/limited');
    assert.equal(res.statusCode, 200);
    assert.equal(res.json<{ remaining: number }>().remaining, 9);
    await app2.close();
  });

  it('no store check appears without useKitStoreHealthCheck; with it, StoreHealthCheck named redis with tag ready', async () => {
    const without = Fastify();
    addKit(without, []);
    addKitStore(without, redis.url);
    await useKit(without);
    assert.deepEqual(
      without.kit.healthChecks.registrations().map((r) => r.name),
      [],
    );
    await without.close();

    const app = Fastify();
    addKit(app, [], (opt) => {
      opt.healthCheckDetailLevel = 'Full';
    });
    addKitStore(app, redis.url);
    useKitStoreHealthCheck(app);
    await useKit(app);
    await app.ready();
    const [registration] = app.kit.healthChecks.registrations();
    assert.equal(registration?.name, 'redis');
    assert.deepEqual(registration?.tags, ['ready']);
    assert.equal(registration?.timeoutMs, 800);
    assert.ok(registration?.check instanceof StoreHealthCheck);
    const result = await evaluateRedisCheck(app);
    assert.equal(result.status, 'healthy');
    assert.equal(result.description, 'Redis answered PING');
    assert.equal(typeof (result as { data?: { latencyMs?: unknown } }).data?.latencyMs, 'number');
    await app.close();
  });

  it('StoreHealthCheck can also be registered as a class, built from the container', async () => {
    const app = Fastify();
    addKit(app, []);
    const store = addKitStore(app, redis.url);
    await store.waitUntilConnected();
    const check = app.kit.services.build(StoreHealthCheck);
    assert.equal(
      (await check.checkHealth({ name: 'redis', tags: [], signal: AbortSignal.timeout(1000) }))
        .status,
      'healthy',
    );
    await app.close();
  });

  it('closes the connection on app.close()', async () => {
    const app = Fastify();
    addKit(app, []);
    const store = addKitStore(app, redis.url, { connectionName: 'kit-close-test' });
    await useKit(app);
    await app.ready();
    const observer = new Redis(redis.url);
    after(() => observer.disconnect());
    assert.match(String(await observer.client('LIST')), /name=kit-close-test/);
    await app.close();
    assert.equal(store.client.status, 'end');
    assert.equal(store.connected, false);
    // The server no longer lists it (QUIT is processed asynchronously by the server).
    await until(
      'the closed client gone from CLIENT LIST',
      async () => !/name=kit-close-test/.test(String(await observer.client('LIST'))),
      {
        timeoutMs: 1000,
        intervalMs: 20,
        diagnostic: async () => String(await observer.client('LIST')),
      },
    );
    await assert.rejects(
      store.rateLimit.consume('x', { limit: 1, windowMs: 1000 }),
      (err: StoreUnavailableError) => {
        assert.equal(err.code, 'KIT_ERR_STORE_UNAVAILABLE');
        assert.match(err.message, /closed/);
        return true;
      },
    );
  });

  it('misuse fails with clear KIT_ERR codes', async () => {
    const bare = Fastify();
    assert.throws(() => addKitStore(bare, redis.url), { code: 'KIT_ERR_NOT_ADDED' });
    assert.throws(() => useKitStoreHealthCheck(bare), { code: 'KIT_ERR_STORE_NOT_ADDED' });
    const app = Fastify();
    addKit(app, []);
    assert.throws(() => useKitStoreHealthCheck(app), { code: 'KIT_ERR_STORE_NOT_ADDED' });
    assert.throws(
      () => addKitStore(app, 'http://u:hunter22@example.com'),
      (err: KitError) => {
        assert.equal(err.code, 'KIT_ERR_INVALID_OPTION');
        assert.doesNotMatch(err.message, /hunter22/);
        return true;
      },
    );
    assert.throws(
      () => addKitStore(app, 'not a url :hunter22@'),
      (err: KitError) => !err.message.includes('hunter22'),
    );
    assert.throws(() => addKitStore(app, redis.url, { commandTimeoutMs: 0 }), {
      code: 'KIT_ERR_INVALID_OPTION',
    });
    addKitStore(app, redis.url);
    assert.throws(() => addKitStore(app, redis.url), { code: 'KIT_ERR_STORE_ALREADY_ADDED' });
    await useKit(app);
    assert.throws(() => useKitStoreHealthCheck(app), { code: 'KIT_ERR_HEALTH_SEALED' });
    await app.close();
  });
});

describeRedis('passwords never appear in logs, errors or the health report', () => {
  const password = 's3cr3t/P@ss:w0rd';
  let redis: RedisServer;
  before(async () => {
    redis = await RedisServer.start({ password });
  });
  after(async () => {
    await redis?.dispose();
  });

  it('redactStoreUrl replaces the password (and secret query values)', () => {
    assert.equal(redactStoreUrl('redis://user:pass@host:6379/0'), 'redis://user:***@host:6379/0');
    assert.equal(
      redactStoreUrl('rediss://:p%40ss@host/2?password=x&family=6'),
      'rediss://:***@host/2?password=***&family=6',
    );
    assert.equal(redactStoreUrl('redis://host:6379'), 'redis://host:6379');
    assert.equal(redactStoreUrl('nonsense pass'), '[invalid store URL]');
  });

  it('through connect, a wrong password, an outage, failing calls and health checks', async () => {
    const { lines, stream } = logSink();
    const printed: string[] = [];
    const app = Fastify({ logger: { level: 'debug', stream } });
    addKit(app, []);
    const store = addKitStore(app, redis.url, { commandTimeoutMs: 300, reconnectMaxDelayMs: 100 });
    useKitStoreHealthCheck(app);
    app.get('/limited', async () => store.rateLimit.consume('k', { limit: 5, windowMs: 1000 }));
    await useKit(app);
    await app.ready();
    assert.match(store.url, /^redis:\/\/:\*\*\*@127\.0\.0\.1:\d+$/);
    assert.equal((await evaluateRedisCheck(app)).status, 'healthy');

    // A wrong password: the connection never gets ready; calls fail with the clear error.
    const wrongLog = logSink();
    const wrong = Fastify({ logger: { level: 'debug', stream: wrongLog.stream } });
    addKit(wrong, []);
    const badPassword = 'wr0ng-Secret';
    const wrongStore = addKitStore(
      wrong,
      redis.url.replace(encodeURIComponent(password), badPassword),
      { reconnectMaxDelayMs: 100 },
    );
    useKitStoreHealthCheck(wrong);
    await useKit(wrong);
    await wrong.ready();
    const wrongHealth = await evaluateRedisCheck(wrong);
    assert.equal(wrongHealth.status, 'unhealthy');
    printed.push(JSON.stringify(wrongHealth), inspect(wrongHealth, { depth: 10 }), wrongStore.url);
    const wrongErr = await wrongStore.saga.get('x').catch((e: unknown) => e);
    assert.ok(wrongErr instanceof StoreUnavailableError);
    assert.equal(wrongErr.reason, 'not connected: authentication failed');
    printed.push(
      inspect(wrongErr, { depth: 10 }),
      JSON.stringify(wrongErr),
      String((wrongErr as Error).stack),
    );
    await wrong.close();
    assert.ok(
      wrongLog.lines.some((l) => /WRONGPASS|NOAUTH|invalid username-password/i.test(l)),
      'the auth failure is logged',
    );
    printed.push(...wrongLog.lines);

    // An outage: logs, failing calls, the route's error response and the health result.
    await redis.stop();
    const down = await evaluateRedisCheck(app);
    assert.equal(down.status, 'unhealthy');
    const err = await store.cronJob.tryAcquire('job', 'me', 1000).catch((e: unknown) => e);
    assert.ok(err instanceof StoreUnavailableError);
    assert.match(err.reason, /^not connected: (connection lost|connection refused)$/);
    const res = await app.inject('/limited');
    assert.equal(res.statusCode, 503);
    printed.push(
      JSON.stringify(down),
      inspect(down, { depth: 10 }),
      inspect(err, { depth: 10 }),
      res.body,
    );
    await redis.resume();
    await store.waitUntilConnected();
    await app.close();
    printed.push(...lines);

    assert.ok(
      lines.some((l) => l.includes('connection lost')),
      'the outage is logged',
    );
    const all = printed.join('\n');
    for (const secret of [password, encodeURIComponent(password), badPassword]) {
      assert.ok(
        !all.includes(secret),
        `printed text contains the password ${secret}:\n${all
          .split('\n')
          .filter((l) => l.includes(secret))
          .join('\n')}`,
      );
    }
    // And no address leaks into what an HTTP caller sees.
    assert.doesNotMatch(res.body, /127\.0\.0\.1/);
    assert.doesNotMatch(JSON.stringify(down), /127\.0\.0\.1/);
  });

  it('createRedisStores errors and URL fields carry no password either', async () => {
    const stores = createRedisStores(redis.url);
    await stores.waitUntilConnected();
    assert.ok(!stores.url.includes(password) && !stores.url.includes(encodeURIComponent(password)));
    await stores.close();
    const err = await stores.idempotency.reserve('k', { ttlMs: 1000 }).catch((e: unknown) => e);
    assert.ok(err instanceof KitError);
    assert.ok(!inspect(err, { depth: 10 }).includes(password));
  });
});
