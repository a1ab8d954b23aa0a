// @test-lines: every - ioredis: the store driver on this line
// redisStreamTarget on a real redis-server: each outbox record is one stream entry, a repeat of
// the same idempotency id adds nothing (a retry after a lost reply, the next leader after a
// crash), and while Redis is down a delivery fails (the outbox retries it) and loses nothing.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { Redis } from 'ioredis';
import { createRedisStores, redisStreamTarget, type KitRedisStore } from '@kit/store-redis';
import { describeRedis, RedisServer } from '@kit/test-support/redis';
import { until } from '@kit/test-support/until';

describeRedis('redisStreamTarget', () => {
  let redis: RedisServer;
  let raw: Redis;
  let store: KitRedisStore;
  before(async () => {
    redis = await RedisServer.start();
    raw = new Redis(redis.url);
    store = createRedisStores(redis.url, {
      keyPrefix: 'kit:',
      commandTimeoutMs: 500,
      reconnectMaxDelayMs: 100,
    });
    await store.waitUntilConnected();
  });
  after(async () => {
    await store?.close();
    raw?.disconnect();
    await redis?.dispose();
  });

  const message = (n: number) => ({
    id: randomUUID(),
    seq: n,
    entity: 'Product',
    key: n,
    operation: 'create',
    after: { id: n, price: 10 },
  });

  it('adds one entry per record, in delivery order, carrying the id, entity, operation and the whole message', async () => {
    const target = redisStreamTarget(store, { stream: 'changes-a' });
    assert.equal(target.name, 'redis-stream:changes-a');
    assert.equal(target.key, 'kit:{changes-a}');
    const sent = [message(1), message(2), message(3)];
    for (const m of sent) await target.deliver(m);
    const entries = await raw.xrange(target.key, '-', '+');
    assert.equal(entries.length, 3);
    for (const [i, [, fields]] of entries.entries()) {
      const f = Object.fromEntries(
        fields.reduce<string[][]>(
          (pairs, v, j) => (j % 2 === 0 ? [...pairs, [v]] : (pairs.at(-1)?.push(v), pairs)),
          [],
        ),
      );
      assert.equal(f.id, sent[i]?.id);
      assert.equal(f.entity, 'Product');
      assert.equal(f.operation, 'create');
      assert.deepEqual(JSON.parse(f.message ?? ''), sent[i]);
    }
  });

  it('a record delivered again (same id) adds nothing, also when many deliveries of it race', async () => {
    const target = redisStreamTarget(store, { stream: 'changes-b', maxLen: 1000 });
    const once = message(7);
    await Promise.all(Array.from({ length: 20 }, () => target.deliver(once)));
    await target.deliver(once);
    await target.deliver(message(8));
    const ids = (await raw.xrange(target.key, '-', '+')).map(([, fields]) => fields[1]);
    assert.equal(ids.length, 2);
    assert.equal(ids[0], once.id);
    assert.equal(
      (await raw.pttl(`${target.key}:seen:${once.id}`)) > 86_000_000,
      true,
      'the id is remembered for a day',
    );
  });

  it('while Redis is down a delivery fails with KIT_ERR_STORE_UNAVAILABLE; once back, the retry adds the entry once', async () => {
    const target = redisStreamTarget(store, { stream: 'changes-c' });
    const m = message(9);
    await redis.stop();
    await assert.rejects(target.deliver(m), { code: 'KIT_ERR_STORE_UNAVAILABLE' });
    await redis.resume();
    await until(
      'a delivery accepted once Redis is back',
      () => target.deliver(m).then(() => true),
      { timeoutMs: 10_000, intervalMs: 100, retryErrors: true },
    );
    raw.disconnect();
    raw = new Redis(redis.url);
    assert.equal((await raw.xrange(target.key, '-', '+')).length, 1);
  });

  it('refuses a bad stream name or bound with KIT_ERR_INVALID_OPTION', () => {
    assert.throws(() => redisStreamTarget(store, { stream: 'a{b}' }), {
      code: 'KIT_ERR_INVALID_OPTION',
    });
    assert.throws(() => redisStreamTarget(store, { maxLen: 0 }), /options\.maxLen = 0/);
    assert.throws(() => redisStreamTarget({} as KitRedisStore), { code: 'KIT_ERR_INVALID_OPTION' });
  });
});
