// @test-lines: once - the in-memory stores
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Fastify from 'fastify';
import { asValue, createContainer, InjectionMode } from 'awilix';
import {
  addKit,
  useKit,
  KitStoreNames,
  MemoryCronJobStore,
  MEMORY_IDEMPOTENCY_DEFAULTS,
  MemoryIdempotencyStore,
  MemoryRateLimitStore,
  MemorySagaStore,
  type IRateLimitStore,
  type JsonValue,
} from '@kit/core';
import { storeConformance, type StoreSet } from '@kit/test-support/store-conformance';

// The memory stores share state within one instance only, so "two connections" are the same set.
const shared: StoreSet = {
  idempotency: new MemoryIdempotencyStore(),
  rateLimit: new MemoryRateLimitStore(),
  saga: new MemorySagaStore(),
  cronJob: new MemoryCronJobStore(),
};
storeConformance('memory', { connect: async () => shared });

describe('memory stores in the container', () => {
  it('addKit registers the four defaults under KitStoreNames, as singletons', async () => {
    const app = Fastify();
    const kit = addKit(app, []);
    assert.deepEqual(KitStoreNames, {
      idempotency: 'idempotencyStore',
      rateLimit: 'rateLimitStore',
      saga: 'sagaStore',
      cronJob: 'cronJobStore',
    });
    assert.ok(kit.services.resolve(KitStoreNames.idempotency) instanceof MemoryIdempotencyStore);
    assert.ok(kit.services.resolve(KitStoreNames.rateLimit) instanceof MemoryRateLimitStore);
    assert.ok(kit.services.resolve(KitStoreNames.saga) instanceof MemorySagaStore);
    assert.ok(kit.services.resolve(KitStoreNames.cronJob) instanceof MemoryCronJobStore);
    assert.equal(kit.services.resolve('rateLimitStore'), kit.services.resolve('rateLimitStore'));
    await useKit(app); // DI validation resolves them without complaint
    await app.close();
  });

  it('does not override a store the host registered in its own container', async () => {
    const mine: IRateLimitStore = new MemoryRateLimitStore();
    const container = createContainer({ injectionMode: InjectionMode.PROXY, strict: true });
    container.register({ rateLimitStore: asValue(mine) });
    const app = Fastify();
    const kit = addKit(app, [], (opt) => {
      opt.container = container;
    });
    assert.equal(kit.services.resolve('rateLimitStore'), mine);
    assert.ok(kit.services.resolve('sagaStore') instanceof MemorySagaStore);
    await app.close();
  });

  it('a host registration after addKit replaces the default', async () => {
    const app = Fastify();
    const kit = addKit(app, []);
    const mine = new MemorySagaStore();
    kit.services.register({ sagaStore: asValue(mine) });
    assert.equal(kit.services.resolve('sagaStore'), mine);
    await app.close();
  });

  it('memory stores are per instance: two instances do not share counts (use @kit/store-redis for that)', async () => {
    const one = new MemoryRateLimitStore();
    const two = new MemoryRateLimitStore();
    assert.equal((await one.consume('k', { limit: 1, windowMs: 60_000 })).allowed, true);
    assert.equal((await two.consume('k', { limit: 1, windowMs: 60_000 })).allowed, true);
  });
});

describe('the memory idempotency store is bounded', () => {
  const ttl = { ttlMs: 60_000 };
  const keep = async (store: MemoryIdempotencyStore, key: string, response: JsonValue) => {
    const r = await store.reserve(key, ttl);
    assert.equal(r.outcome, 'reserved', key);
    return store.complete(key, (r as { token: string }).token, response, ttl);
  };

  it('has documented defaults, and refuses bounds that are not positive integers naming the option', () => {
    assert.deepEqual(MEMORY_IDEMPOTENCY_DEFAULTS, { maxEntries: 10_000, maxBytes: 33_554_432 });
    assert.deepEqual(new MemoryIdempotencyStore().stats(), { entries: 0, bytes: 0, evictions: 0 });
    for (const [options, message] of [
      [{ maxEntries: 0 }, /options\.maxEntries = 0: expected a positive integer/],
      [{ maxBytes: 1.5 }, /options\.maxBytes = 1\.5/],
      [{ maxBytes: '1mb' }, /options\.maxBytes = "1mb"/],
      [null, /expected an object/],
    ] as const) {
      assert.throws(
        () => new MemoryIdempotencyStore(options as never),
        (err: Error & { code?: string }) =>
          err.code === 'KIT_ERR_INVALID_OPTION' && message.test(err.message),
      );
    }
  });

  it('past maxEntries, the oldest keys are evicted and counted; the others still replay', async () => {
    const store = new MemoryIdempotencyStore({ maxEntries: 3 });
    for (let i = 1; i <= 5; i++) assert.equal(await keep(store, `k${i}`, { row: i }), true);
    assert.deepEqual(store.stats(), { entries: 3, bytes: store.stats().bytes, evictions: 2 });
    for (const key of ['k3', 'k4', 'k5'])
      assert.equal((await store.reserve(key, ttl)).outcome, 'completed', key);
    // An evicted key is new again: a retry with it runs once more (the documented cost of the bound),
    // and its reservation evicts the oldest key left (k3; completing k3 did not make it younger).
    assert.equal((await store.reserve('k1', ttl)).outcome, 'reserved');
    assert.equal(store.stats().evictions, 3);
    assert.equal((await store.reserve('k4', ttl)).outcome, 'completed');
    assert.equal((await store.reserve('k3', ttl)).outcome, 'reserved');
  });

  it('past maxBytes, the oldest keys are evicted; an answer larger than maxBytes on its own is not kept, and complete() says so', async () => {
    const store = new MemoryIdempotencyStore({ maxBytes: 10_000 });
    const answer = { body: 'x'.repeat(3_000) };
    for (let i = 1; i <= 6; i++) assert.equal(await keep(store, `b${i}`, answer), true);
    const { entries, bytes, evictions } = store.stats();
    assert.ok(bytes <= 10_000, `${bytes}`);
    assert.equal(entries, 3);
    assert.equal(evictions, 3);
    assert.equal(await keep(store, 'huge', { body: 'x'.repeat(20_000) }), false);
    assert.equal((await store.reserve('huge', ttl)).outcome, 'reserved', 'nothing of it was kept');
    assert.ok(store.stats().bytes <= 10_000);
  });

  it('a released or lapsed key frees its bytes', async () => {
    const store = new MemoryIdempotencyStore();
    const r = await store.reserve('short', { ttlMs: 60_000, fingerprint: 'f'.repeat(40) });
    assert.ok(store.stats().bytes > 200);
    assert.equal(await store.release('short', (r as { token: string }).token), true);
    assert.deepEqual(store.stats(), { entries: 0, bytes: 0, evictions: 0 });
    await keep(store, 'lapses', { a: 1 });
    await store.reserve('brief', { ttlMs: 1 });
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal((await store.reserve('brief', ttl)).outcome, 'reserved', 'lapsed');
    assert.equal(store.stats().entries, 2);
  });

  it('3,000 keyed creates of 20 KB answers stay within the bound: the heap does not grow by their size', async () => {
    const gc =
      globalThis.gc ?? (setFlagsFromString('--expose-gc'), runInNewContext('gc') as () => void);
    const store = new MemoryIdempotencyStore({ maxBytes: 4 * 1024 * 1024 });
    const row = { id: 0, text: 'y'.repeat(20_000) };
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 3000; i++) await keep(store, `create-${i}`, { ...row, id: i });
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    const { bytes, evictions, entries } = store.stats();
    assert.ok(bytes <= 4 * 1024 * 1024);
    assert.ok(evictions > 2500 && entries + evictions === 3000, JSON.stringify(store.stats()));
    // Unbounded, 3,000 answers of 20 KB hold about 60 MB.
    assert.ok(grown < 24 * 1024 * 1024, `heap grew ${Math.round(grown / 1024 / 1024)} MB`);
  });
});
