import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { asValue, createContainer, InjectionMode } from 'awilix';
import {
  addKit,
  useKit,
  KitStoreNames,
  MemoryCronJobStore,
  MemoryIdempotencyStore,
  MemoryRateLimitStore,
  MemorySagaStore,
  type IRateLimitStore,
} from '@kit/core';
import { storeConformance, type StoreSet } from './store-conformance.ts';

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
    assert.deepEqual(KitStoreNames, { idempotency: 'idempotencyStore', rateLimit: 'rateLimitStore', saga: 'sagaStore', cronJob: 'cronJobStore' });
    assert.ok(kit.services.resolve(KitStoreNames.idempotency) instanceof MemoryIdempotencyStore);
    assert.ok(kit.services.resolve(KitStoreNames.rateLimit) instanceof MemoryRateLimitStore);
    assert.ok(kit.services.resolve(KitStoreNames.saga) instanceof MemorySagaStore);
    assert.ok(kit.services.resolve(KitStoreNames.cronJob) instanceof MemoryCronJobStore);
    assert.equal(kit.services.resolve('rateLimitStore'), kit.services.resolve('rateLimitStore'));
    await useKit(app);   // DI validation resolves them without complaint
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
