// @test-lines: once - the rate-limit plugin over inject
// Kit's rateLimitStore behind the real @fastify/rate-limit (the memory store here; Redis shared by
// two instances in examples/sample-api/test/rate-limit-redis.test.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import rateLimit from '@fastify/rate-limit';
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import {
  addKit,
  kitRateLimitStore,
  MemoryRateLimitStore,
  StoreUnavailableError,
  useKit,
  type IRateLimitStore,
  type KitRateLimitStoreOptions,
} from '@kit/core';

type PluginOptions = Parameters<typeof rateLimit>[1];

async function limitedApp(
  plugin: PluginOptions,
  store?: IRateLimitStore,
  storeOptions?: KitRateLimitStoreOptions,
): Promise<FastifyInstance> {
  class LimitedEndpoint {
    async addRoutes(app: FastifyInstance) {
      await app.register(rateLimit, {
        ...plugin,
        store: kitRateLimitStore(store ?? app, storeOptions),
      });
      app.get('', async () => ({ ok: true }));
      app.get('strict', { config: { rateLimit: { max: 1, timeWindow: 60_000 } } }, async () => ({
        ok: true,
      }));
    }
  }
  const app = Fastify();
  addKit(app, [LimitedEndpoint], (opt) => {
    opt.openApiPath = false;
  });
  await useKit(app);
  await app.ready();
  return app;
}

const get = (
  app: FastifyInstance,
  url = '/api/limited',
  ip = '10.0.0.1',
): Promise<LightMyRequestResponse> => app.inject({ url, remoteAddress: ip });

describe("kitRateLimitStore: @fastify/rate-limit counting in Kit's rateLimitStore (memory)", () => {
  it("admits max per window with the plugin's headers, then a 429 problem with Retry-After; the count is in Kit's store", async () => {
    const app = await limitedApp({ max: 3, timeWindow: 60_000 });
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await get(app);
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['x-ratelimit-limit'], '3');
      remaining.push(String(res.headers['x-ratelimit-remaining']));
      assert.ok(
        Number(res.headers['x-ratelimit-reset']) > 0 &&
          Number(res.headers['x-ratelimit-reset']) <= 60,
      );
    }
    assert.deepEqual(remaining, ['2', '1', '0']);
    const refused = await get(app);
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.headers['x-ratelimit-remaining'], '0');
    assert.ok(Number(refused.headers['retry-after']) >= 59, String(refused.headers['retry-after']));
    assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
    const problem = refused.json<Record<string, unknown>>();
    assert.deepEqual(
      [problem.type, problem.title, problem.status],
      ['about:blank', 'Too Many Requests', 429],
    );
    assert.match(String(refused.json<{ detail: string }>().detail), /Rate limit exceeded/);
    // Another client has its own count; the store itself holds the limit.
    assert.equal((await get(app, '/api/limited', '10.0.0.2')).statusCode, 200);
    const store = app.kit.services.resolve<IRateLimitStore>('rateLimitStore');
    const state = await store.consume('rate-limit:10.0.0.1', {
      limit: 3,
      windowMs: 60_000,
      cost: 0,
    });
    assert.equal(state.remaining, 0);
    await app.close();
  });

  it('a route with its own config.rateLimit counts apart from the global limit', async () => {
    const app = await limitedApp({ max: 5, timeWindow: 60_000 });
    assert.equal((await get(app, '/api/limited/strict')).statusCode, 200);
    assert.equal((await get(app, '/api/limited/strict')).statusCode, 429);
    assert.equal((await get(app)).statusCode, 200, 'the global route still has its own 5');
    await app.close();
  });

  it('enableDraftSpec gives the ratelimit-* headers; the sliding window refuses until the oldest unit leaves', async () => {
    const app = await limitedApp({ max: 2, timeWindow: 1000, enableDraftSpec: true }, undefined, {
      algorithm: 'sliding-window',
    });
    const first = await get(app);
    assert.equal(first.headers['ratelimit-limit'], '2');
    assert.equal(first.headers['ratelimit-remaining'], '1');
    assert.equal((await get(app)).statusCode, 200);
    const refused = await get(app);
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.headers['ratelimit-remaining'], '0');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    await app.close();
  });

  it('a store that is down: 503 problem by default, the request admitted with skipOnError', async () => {
    const down: IRateLimitStore = {
      consume: () =>
        Promise.reject(new StoreUnavailableError('redis', 'not connected: connection refused')),
      reset: () => Promise.resolve(),
    };
    const closed = await limitedApp({ max: 3, timeWindow: 60_000 }, down);
    const res = await get(closed);
    assert.equal(res.statusCode, 503);
    assert.equal(
      res.json<{ detail: string }>().detail,
      'The server could not complete the request.',
    );
    await closed.close();
    const open = await limitedApp({ max: 3, timeWindow: 60_000, skipOnError: true }, down);
    assert.equal((await get(open)).statusCode, 200);
    await open.close();
  });

  it('options that count requests beyond the limit fail start-up with KIT_ERR_INVALID_OPTION', async () => {
    for (const plugin of [
      { continueExceeding: true },
      { exponentialBackoff: true },
      { ban: 2 },
    ] as PluginOptions[]) {
      await assert.rejects(
        limitedApp({ max: 3, timeWindow: 60_000, ...plugin }, new MemoryRateLimitStore()),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'KIT_ERR_INVALID_OPTION');
          assert.match(err.message, /kitRateLimitStore/);
          return true;
        },
      );
    }
    assert.throws(
      () =>
        kitRateLimitStore(new MemoryRateLimitStore(), {
          algorithm: 'token-bucket' as 'fixed-window',
        }),
      /KIT_ERR_INVALID_OPTION|algorithm/,
    );
  });
});
