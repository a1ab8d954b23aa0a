// @test-lines: every - ioredis: the store driver on this line
// The database index in the URL, and TLS: a URL that asks for something the server cannot give
// fails start-up or makes the check unhealthy with the reason; it never silently lands in
// database 0 or times out without saying why.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import type { KitError } from '@kit/core';
import { addKit, StoreUnavailableError, useKit } from '@kit/core';
import { addKitStore, createRedisStores, useKitStoreHealthCheck } from '@kit/store-redis';
import { evaluateRedisCheck } from './health.ts';
import { logSink } from './log-sink.ts';
import { describeRedis, RedisServer } from '@kit/test-support/redis';

const password = 'db-Secr3t';

describeRedis('the database index in the URL', () => {
  let redis: RedisServer;
  let raw: Redis;
  before(async () => {
    redis = await RedisServer.start({ password });
    raw = new Redis(redis.url);
  });
  after(async () => {
    raw?.disconnect();
    await redis?.dispose();
  });

  it('a non-numeric index fails addKitStore with KIT_ERR_INVALID_OPTION, the password withheld', () => {
    const app = Fastify();
    addKit(app, []);
    for (const [url, shown] of [
      [`${redis.url}/abc`, /"abc" is not a number/],
      [`${redis.url}/-1`, /"-1" is not a number/],
      [`${redis.url}/1.5`, /"1.5" is not a number/],
      [`${redis.url}?db=two`, /db query parameter "two" is not a number/],
      [`${redis.url}/${password}`, /\(not shown\) is not a number/],
    ] as const) {
      assert.throws(
        () => addKitStore(app, url),
        (err: KitError) => {
          assert.equal(err.code, 'KIT_ERR_INVALID_OPTION');
          assert.match(
            err.message,
            /^Invalid Kit option addKitStore\(app, url\): the database index/,
          );
          assert.match(err.message, shown);
          assert.ok(!err.message.includes(password), err.message);
          return true;
        },
        url.replace(password, '***'),
      );
    }
  });

  it('an index the server does not have: the redis check is unhealthy with the reason, calls fail, nothing lands in database 0', async (t) => {
    const { lines, stream } = logSink();
    const app = Fastify({ logger: { level: 'debug', stream } });
    t.after(() => app.close());
    addKit(app, [], (opt) => {
      opt.healthCheckDetailLevel = 'Description';
    });
    const store = addKitStore(app, `${redis.url}/99`, { keyPrefix: 'db99:' });
    useKitStoreHealthCheck(app);
    await useKit(app);
    await app.ready();

    const check = await evaluateRedisCheck(app);
    assert.equal(check.status, 'unhealthy');
    assert.equal(
      check.description,
      'Redis did not answer PING (not connected: the server refused database 99 (ERR DB index is out of range))',
    );
    assert.equal(store.connected, false);
    for (const call of [
      () => store.rateLimit.consume('k', { limit: 5, windowMs: 60_000 }),
      () => store.saga.create(`s-${randomUUID()}`, { a: 1 }),
      () => store.idempotency.reserve('i', { ttlMs: 1000 }),
      () => store.cronJob.tryAcquire('job', 'me', 1000),
    ]) {
      const err = await call().catch((e: unknown) => e);
      assert.ok(err instanceof StoreUnavailableError, String(err));
      assert.equal(
        err.reason,
        'not connected: the server refused database 99 (ERR DB index is out of range)',
      );
    }
    assert.deepEqual(await raw.keys('db99:*'), [], 'nothing written to database 0');
    await app.close();

    const log = lines.map(
      (l) => JSON.parse(l) as { level: number; msg: string; failure?: string; reason?: string },
    );
    assert.ok(
      log.some(
        (l) =>
          l.level === 40 &&
          /refused the database index/.test(l.msg) &&
          /database 99/.test(l.reason ?? ''),
      ),
      lines.join(''),
    );
    assert.ok(
      log.some(
        (l) =>
          l.level === 40 &&
          /not usable at start-up/.test(l.msg) &&
          /database 99/.test(l.failure ?? ''),
      ),
      lines.join(''),
    );
    assert.ok(
      !log.some((l) => /connection restored|Redis store connected/.test(l.msg)),
      'never reported as connected',
    );
    assert.ok(!lines.join('').includes(password));
  });

  it('an index the server has is used: keys land in that database and no other', async () => {
    const wide = await RedisServer.start({ extraArgs: ['--databases', '100'] });
    const stores = createRedisStores(`${wide.url}/99`, { keyPrefix: 'db99:' });
    const db0 = new Redis(wide.url);
    const db99 = new Redis(`${wide.url}/99`);
    try {
      assert.equal(await stores.waitUntilConnected(), true);
      await stores.rateLimit.consume('k', { limit: 5, windowMs: 60_000 });
      assert.deepEqual(await db0.keys('db99:*'), []);
      assert.deepEqual(await db99.keys('db99:*'), ['db99:rl:fw:k']);
    } finally {
      await stores.close();
      db0.disconnect();
      db99.disconnect();
      await wide.dispose();
    }
  });

  it('a database index on a Redis Cluster URL is refused: a Cluster has database 0 only', () => {
    for (const [url, options] of [
      [['redis://127.0.0.1:7000/2', 'redis://127.0.0.1:7001'], {}],
      ['redis://127.0.0.1:7000/0', { cluster: true }],
    ] as const) {
      assert.throws(
        () => createRedisStores(url, options),
        (err: KitError) => {
          assert.equal(err.code, 'KIT_ERR_INVALID_OPTION');
          assert.match(
            err.message,
            /take no database index: a Redis Cluster has database 0 only; remove the \/N path/,
          );
          return true;
        },
      );
    }
  });
});

describeRedis('rediss:// against a server that does not speak TLS', () => {
  let redis: RedisServer;
  before(async () => {
    redis = await RedisServer.start();
  });
  after(async () => {
    await redis?.dispose();
  });

  it('says the TLS handshake failed, in the check, the errors and the log', async (t) => {
    const { lines, stream } = logSink();
    const app = Fastify({ logger: { level: 'info', stream } });
    t.after(() => app.close());
    addKit(app, [], (opt) => {
      opt.healthCheckDetailLevel = 'Description';
    });
    const store = addKitStore(app, redis.url.replace('redis://', 'rediss://'), {
      connectTimeoutMs: 400,
      reconnectMaxDelayMs: 5000,
    });
    useKitStoreHealthCheck(app);
    await useKit(app);
    await app.ready();
    const named =
      /^TLS handshake failed: the server accepted the connection but did not complete a TLS handshake within 400 ms \(a plain-text port\? rediss:\/\/ needs a TLS port\)$/;
    assert.match(store.failure ?? '', named);
    const check = await evaluateRedisCheck(app);
    assert.equal(check.status, 'unhealthy');
    assert.match(
      check.description ?? '',
      /^Redis did not answer PING \(not connected: TLS handshake failed: /,
    );
    const err = await store.saga.get('x').catch((e: unknown) => e);
    assert.ok(err instanceof StoreUnavailableError);
    assert.match(err.reason.replace(/^not connected: /, ''), named);
    await app.close();
    assert.ok(
      lines.some((l) => /TLS handshake failed/.test(l) && /"level":40/.test(l)),
      lines.join(''),
    );
    assert.ok(
      lines.some((l) => /not usable at start-up/.test(l) && /TLS handshake failed/.test(l)),
      lines.join(''),
    );
  });

  it('a closed port stays "connection refused", not a TLS failure', async (t) => {
    const stopped = await RedisServer.start();
    await stopped.dispose();
    const stores = createRedisStores(stopped.url.replace('redis://', 'rediss://'), {
      connectTimeoutMs: 400,
    });
    t.after(() => stores.close());
    assert.equal(await stores.waitUntilConnected(), false);
    assert.equal(stores.failure, 'connection refused');
  });
});
