// @test-lines: every - Redis outages through the client on this line
// Redis stopped (and frozen) while the service runs: the redis check turns unhealthy within its
// timeout, store calls fail at once with KIT_ERR_STORE_UNAVAILABLE (HTTP 503 when unhandled),
// and both recover when Redis comes back on the same port.
import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, StoreUnavailableError, useKit, type IRateLimitStore } from '@kit/core';
import { addKitStore, useKitStoreHealthCheck, type KitRedisStore } from '@kit/store-redis';
import { evaluateRedisCheck } from './health.ts';
import { describeRedis, RedisServer } from '@kit/test-support/redis';
import { until } from '@kit/test-support/until';

const CHECK_TIMEOUT_MS = 500;
const COMMAND_TIMEOUT_MS = 300;

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await fn();
  return [value, Math.round(performance.now() - started)];
}

describeRedis('Redis outage while the service runs', () => {
  let redis: RedisServer;
  let app: FastifyInstance;
  let store: KitRedisStore;

  before(async () => {
    redis = await RedisServer.start();
    app = Fastify();
    addKit(app, [], (opt) => {
      opt.healthCheckDetailLevel = 'Full';
    });
    store = addKitStore(app, redis.url, {
      commandTimeoutMs: COMMAND_TIMEOUT_MS,
      reconnectMaxDelayMs: 200,
      keyPrefix: 'outage:',
    });
    useKitStoreHealthCheck(app, { timeoutMs: CHECK_TIMEOUT_MS });
    // A route that uses the store the way a host would: resolved from the container, error unhandled.
    app.get('/limited', async () => {
      const limiter = app.kit.services.resolve<IRateLimitStore>('rateLimitStore');
      return limiter.consume('route', { limit: 1000, windowMs: 60_000 });
    });
    await useKit(app);
    await app.ready();
  });
  // Each test starts from a connected store: under load (other suites, other tenants) the first
  // connection or a reconnection can take longer than one check's 500 ms, which is not what these
  // tests measure.
  beforeEach(async () => {
    await until(
      'healthy before the test',
      async () => store.connected && (await evaluateRedisCheck(app)).status === 'healthy',
      15_000,
    );
  });
  after(async () => {
    await app?.close();
    await redis?.dispose();
  });

  it('stopped: unhealthy within the check timeout, calls fail fast with the clear error, both recover on restart', async (t) => {
    assert.equal((await evaluateRedisCheck(app)).status, 'healthy');
    assert.equal((await app.inject('/limited')).statusCode, 200);

    await redis.stop();
    // Should an assertion below fail, the next test still starts against a running, reconnected server.
    t.after(async () => {
      await redis.resume();
      await until(
        'healthy again after the test',
        async () => (await evaluateRedisCheck(app)).status === 'healthy',
        10_000,
      );
    });
    const { ms: toUnhealthy } = await until(
      'unhealthy',
      async () => (await evaluateRedisCheck(app)).status === 'unhealthy',
      5000,
    );
    const [down, evalMs] = await timed(() => evaluateRedisCheck(app));
    assert.equal(down.status, 'unhealthy');
    assert.match(
      down.description ?? '',
      /^Redis did not answer PING \(not connected: (connection lost|connection refused)\)$/,
    );

    const [err, failMs] = await timed(() => store.saga.get('order-1').catch((e: unknown) => e));
    assert.ok(err instanceof StoreUnavailableError, String(err));
    assert.equal(err.code, 'KIT_ERR_STORE_UNAVAILABLE');
    assert.match(
      err.message,
      /^The redis store is unavailable \(not connected: (connection lost|connection refused)\); the call was not queued/,
    );
    // Refused up front ("not connected"), not after waiting for a timeout: that is what "at once" means, whatever the load.

    const res = await app.inject('/limited');
    assert.equal(res.statusCode, 503);
    assert.equal(res.json<{ code: string }>().code, 'KIT_ERR_STORE_UNAVAILABLE');

    // Calls during the outage never pile up: a burst fails at once, nothing is queued for later.
    const [burst, burstMs] = await timed(() =>
      Promise.allSettled(
        Array.from({ length: 200 }, () =>
          store.rateLimit.consume('burst', { limit: 5, windowMs: 60_000 }),
        ),
      ),
    );
    assert.ok(
      burst.every(
        (r) =>
          r.status === 'rejected' &&
          r.reason instanceof StoreUnavailableError &&
          r.reason.reason.startsWith('not connected: '),
      ),
    );

    const [, restartMs] = await timed(() => redis.resume());
    const { ms: toHealthy } = await until(
      'healthy again',
      async () => (await evaluateRedisCheck(app)).status === 'healthy',
      10_000,
    );
    assert.equal((await app.inject('/limited')).statusCode, 200);
    assert.equal(await store.saga.get('order-1'), undefined);
    const afterBurst = await store.rateLimit.consume('burst', { limit: 5, windowMs: 60_000 });
    assert.equal(afterBurst.remaining, 4, 'none of the failed burst calls was applied later');
    t.diagnostic(
      `stopped: unhealthy after ${toUnhealthy} ms (one evaluation ${evalMs} ms, check timeout ${CHECK_TIMEOUT_MS} ms); ` +
        `store call failed in ${failMs} ms, 200-call burst in ${burstMs} ms; healthy again ${toHealthy} ms after the restarted server answered PING (restart took ${restartMs} ms)`,
    );
  });

  it('a client that ioredis ended for good (a connect aborted midway, disconnect() called on it) is connected again', async (t) => {
    assert.equal(store.connected, true);
    store.client.disconnect();
    await until('the client ended', async () => store.client.status === 'end', 5000);
    const err = await store.saga.get('order-1').catch((e: unknown) => e);
    assert.ok(err instanceof StoreUnavailableError, String(err));
    const { ms: back } = await until('connected again', async () => store.connected, 10_000);
    assert.equal(await store.saga.get('order-1'), undefined);
    t.diagnostic(`ended client connected again after ${back} ms (reconnectMaxDelayMs 200)`);
  });

  it('frozen (SIGSTOP): unhealthy within the check timeout, calls time out with the clear error, both recover (SIGCONT)', async (t) => {
    assert.equal((await evaluateRedisCheck(app)).status, 'healthy');
    redis.pause();
    try {
      const [down, evalMs] = await timed(() => evaluateRedisCheck(app));
      assert.equal(down.status, 'unhealthy');
      assert.match(
        down.description ?? '',
        /^Redis did not answer PING \((no PING reply before the check timed out|no reply within 300 ms)\)$/,
      );
      assert.ok(evalMs < CHECK_TIMEOUT_MS + 3000, `evaluation took ${evalMs} ms: it must not hang`);
      const [err, failMs] = await timed(() =>
        store.cronJob.tryAcquire('job', 'me', 1000).catch((e: unknown) => e),
      );
      assert.ok(err instanceof StoreUnavailableError, String(err));
      assert.equal(err.reason, `no reply within ${COMMAND_TIMEOUT_MS} ms`);
      assert.ok(
        failMs >= COMMAND_TIMEOUT_MS - 20,
        `failed after ${failMs} ms, before the command timeout`,
      );
      // The check's own signal: a PING abandoned when the signal aborts, before any command timeout.
      const [pingErr, pingMs] = await timed(() =>
        store.ping(AbortSignal.timeout(150)).catch((e: unknown) => e),
      );
      assert.ok(pingErr instanceof StoreUnavailableError);
      assert.equal(pingErr.reason, 'no PING reply before the check timed out');
      // The reason says the signal ended it, not the 300 ms command timeout.
      assert.ok(pingMs >= 140, `PING abandoned after ${pingMs} ms, before the signal`);
      t.diagnostic(`frozen: PING abandoned ${pingMs} ms after a 150 ms signal`);
      t.diagnostic(
        `frozen: check unhealthy after ${evalMs} ms (timeout ${CHECK_TIMEOUT_MS} ms); store call failed after ${failMs} ms (commandTimeoutMs ${COMMAND_TIMEOUT_MS})`,
      );
    } finally {
      redis.unpause();
    }
    const { ms: toHealthy } = await until(
      'healthy again',
      async () => (await evaluateRedisCheck(app)).status === 'healthy',
      10_000,
    );
    assert.equal(await store.cronJob.tryAcquire('job2', 'me', 1000), true);
    t.diagnostic(`thawed: healthy again after ${toHealthy} ms`);
  });
});
