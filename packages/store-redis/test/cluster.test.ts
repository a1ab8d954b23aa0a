// @test-lines: every - ioredis: the store driver on this line
// The stores on a real Redis Cluster of three masters that the tests start themselves: the same
// conformance suite as one server, keys spread over every master, and the redis check's
// cluster report.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { Cluster } from 'ioredis';
import { addKit, StoreUnavailableError, useKit } from '@kit/core';
import {
  addKitStore,
  createRedisStores,
  useKitStoreHealthCheck,
  type KitRedisStore,
} from '@kit/store-redis';
import { storeConformance } from '@kit/test-support/store-conformance';
import type { LuaScript } from '../src/scripts.ts';
import * as scripts from '../src/scripts.ts';
import { evaluateRedisCheck } from './health.ts';
import { ask, RedisCluster } from '@kit/test-support/redis-cluster';
import { conformanceSet, connectedStores, describeRedis, skipRedis } from '@kit/test-support/redis';
import { until } from '@kit/test-support/until';

let started: Promise<RedisCluster> | undefined;
/** One cluster for the whole file, started by whichever suite needs it first. */
const cluster = () => (started ??= RedisCluster.start({ masters: 3 }));
after(async () => {
  await (await started)?.dispose();
});

it('every Lua script touches one key (KEYS[1]) and builds no key names, so none can cross Cluster hash slots', () => {
  const all = Object.values(scripts).filter(
    (v): v is LuaScript => typeof v === 'object' && v !== null && 'lua' in v,
  );
  assert.ok(all.length >= 12, `found ${all.length} scripts`);
  for (const script of all) {
    const keys = new Set(script.lua.match(/KEYS\[[^\]]*\]/g));
    assert.deepEqual(
      [...keys],
      ['KEYS[1]'],
      `${script.name} uses ${[...keys].join(', ')}; several keys need one {hash tag}`,
    );
    // A key name made up inside a script would escape the slot check Redis does on KEYS.
    assert.doesNotMatch(
      script.lua,
      /redis\.call\('\w+', (?!KEYS\[1\])[^')]/,
      `${script.name} calls a command on something other than KEYS[1]`,
    );
  }
});

// Each connect() is a new client, as a second service instance would have: the first from the
// list of seed URLs, the second from one seed and `cluster: true`.
let connections = 0;
storeConformance('redis cluster (3 masters)', {
  skip: skipRedis,
  before: async () => {
    await cluster();
  },
  connect: async () => {
    const c = await cluster();
    const stores =
      connections++ % 2 === 0
        ? createRedisStores(c.urls, { keyPrefix: 'conformance:' })
        : createRedisStores(c.urls[1]!, { cluster: true, keyPrefix: 'conformance:' });
    assert.equal(stores.mode, 'cluster');
    return conformanceSet(stores);
  },
});

describeRedis('Redis Cluster: keys, the redis check, a master down', () => {
  let c: RedisCluster;
  let app: FastifyInstance;
  let store: KitRedisStore;

  before(async () => {
    c = await cluster();
    app = Fastify();
    addKit(app, [], (opt) => {
      opt.healthCheckDetailLevel = 'Full';
    });
    store = addKitStore(app, c.urls, { keyPrefix: 'spread:', commandTimeoutMs: 500 });
    useKitStoreHealthCheck(app, { timeoutMs: 2000 });
    await useKit(app);
    await app.ready();
  });
  after(async () => {
    await app?.close();
  });

  it('every store operation works whichever master its key lands on: keys spread over all three', async () => {
    for (let i = 0; i < 30; i++) {
      const id = `${i}-${randomUUID()}`;
      assert.equal((await store.idempotency.reserve(id, { ttlMs: 60_000 })).outcome, 'reserved');
      assert.equal(
        (await store.rateLimit.consume(id, { limit: 2, windowMs: 60_000 })).remaining,
        1,
      );
      assert.equal(
        (
          await store.rateLimit.consume(id, {
            limit: 2,
            windowMs: 60_000,
            algorithm: 'sliding-window',
          })
        ).remaining,
        1,
      );
      await store.rateLimit.reset(id);
      assert.equal(
        (await store.rateLimit.consume(id, { limit: 2, windowMs: 60_000 })).remaining,
        1,
        'reset cleared the counter',
      );
      assert.equal((await store.saga.create(id, { n: i })).version, 1);
      assert.equal(await store.cronJob.tryAcquire(id, 'me', 60_000), true);
    }
    const perMaster = await Promise.all(
      c.shards.map(async (s) => Number(await ask(s.master.port, 'DBSIZE'))),
    );
    assert.ok(
      perMaster.every((n) => n > 10),
      `keys on every master: ${perMaster.join(', ')}`,
    );
  });

  it('the redis check reports cluster_state and the masters that answer; addresses only at Full', async () => {
    const full = await evaluateRedisCheck(app);
    assert.equal(full.status, 'healthy');
    assert.equal(full.description, 'Redis Cluster state ok: 3 of 3 masters reachable and serving');
    assert.deepEqual(
      { ...full.data, latencyMs: 0 },
      {
        clusterState: 'ok',
        masters: 3,
        mastersServing: 3,
        unreachable: [],
        notServing: [],
        latencyMs: 0,
      },
    );

    const described = Fastify();
    addKit(described, [], (opt) => {
      opt.healthCheckDetailLevel = 'Description';
    });
    addKitStore(described, c.urls);
    useKitStoreHealthCheck(described);
    await useKit(described);
    const res = await described.inject('/healthz?tag=ready');
    await described.close();
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json<{ checks: unknown }>().checks, {
      redis: {
        status: 'healthy',
        description: 'Redis Cluster state ok: 3 of 3 masters reachable and serving',
      },
    });
    assert.doesNotMatch(res.body, /127\.0\.0\.1|:\d{4,5}\b/);
  });

  it('a master down: calls for its keys fail with the clear error, others work; the check names it at Full only; all recover when it is back', async (t) => {
    const victim = c.shards[1]!.master;
    // A key served by the victim, and one served by another master.
    const keyOn = async (port: number) => {
      for (let i = 0; ; i++) {
        const slot = Number(await ask(port, 'CLUSTER', 'KEYSLOT', `spread:saga:k${i}`));
        if ((await c.masterPortOf(slot)) === port) return `k${i}`;
      }
    };
    const onVictim = await keyOn(victim.port);
    const elsewhere = await keyOn(c.shards[0]!.master.port);
    await victim.stop('SIGKILL');
    t.after(async () => {
      await victim.resume();
      await c.waitUntilHealthy(20_000);
    });

    const err = await store.saga.get(onVictim).catch((e: unknown) => e);
    assert.ok(err instanceof StoreUnavailableError, String(err));
    assert.equal(
      err.reason,
      'not connected: the Redis Cluster node serving this key is unreachable',
    );
    assert.equal(
      await store.saga.get(elsewhere),
      undefined,
      'keys on the other masters still work',
    );

    const down = await evaluateRedisCheck(app);
    // Degraded while the other nodes still count the master as reachable (node timeout 5 s), unhealthy once they fail it.
    assert.notEqual(down.status, 'healthy');
    assert.match(
      down.description ?? '',
      /^Redis Cluster state (ok: 2|fail: 0) of 3 masters reachable and serving/,
    );
    assert.deepEqual((down.data as { unreachable: string[] }).unreachable, [
      `127.0.0.1:${victim.port}`,
    ]);

    await victim.resume();
    const { ms: back } = await until(
      'healthy again',
      async () => (await evaluateRedisCheck(app)).status === 'healthy',
      { timeoutMs: 20_000, retryErrors: true },
    );
    assert.equal(await store.saga.get(onVictim), undefined);
    t.diagnostic(
      `a master SIGKILLed and restarted: check ${down.status} while down ("${down.description}"), healthy ${back} ms after the restart`,
    );
  });

  it('a client from one seed connects at its first attempt: its ready check is not refused by a node still connecting', async () => {
    // The ready check (CLUSTER INFO) goes to a random node as soon as the slot map arrives; a
    // node connection Kit had already started would refuse it, and the client would drop and
    // start over, several times in a row under load (two of three nodes are new at that moment).
    const connects: string[] = [];
    for (let i = 0; i < 10; i++) {
      const stores = createRedisStores(c.urls[i % 3]!, { cluster: true, keyPrefix: 'seed:' });
      let reconnects = 0;
      stores.client.on('reconnecting', () => reconnects++);
      try {
        await connectedStores(stores);
        // The nodes learnt before the client was ready are connected once it is, before start-up goes on.
        connects.push(
          `${reconnects} reconnects, masters ${(stores.client as Cluster)
            .nodes('master')
            .map((n) => n.status)
            .join(' ')}`,
        );
      } finally {
        await stores.close();
      }
    }
    assert.deepEqual(
      connects,
      Array.from({ length: 10 }, () => '0 reconnects, masters ready ready ready'),
    );
  });

  it('a list of URLs that is not a cluster, or a cluster nobody answers, says so', async () => {
    const stores = createRedisStores(['redis://127.0.0.1:1', 'redis://127.0.0.1:2'], {
      connectTimeoutMs: 300,
      reconnectMaxDelayMs: 5000,
    });
    try {
      assert.equal(await stores.waitUntilConnected(), false);
      assert.equal(stores.failure, 'no Redis Cluster node reachable');
      const err = await stores.rateLimit
        .consume('k', { limit: 1, windowMs: 1000 })
        .catch((e: unknown) => e);
      assert.ok(err instanceof StoreUnavailableError);
      assert.equal(err.reason, 'not connected: no Redis Cluster node reachable');
      assert.ok(stores.client instanceof Cluster);
    } finally {
      await stores.close();
    }
  });
});
