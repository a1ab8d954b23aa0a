// @test-lines: every - ioredis: the store driver on this line
// A real failover in a Redis Cluster of three masters, each with a replica: the master holding a
// rate-limit key is killed (SIGKILL, a crash), its replica is promoted by the cluster itself,
// and the service's calls and redis check recover. Measured: how long calls failed, and how many
// requests were admitted in total against the limit (replication is asynchronous).
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit } from '@kit/core';
import { addKitStore, useKitStoreHealthCheck, type KitRedisStore } from '@kit/store-redis';
import { assertRecovered, describeRun, runFailover } from './failover.ts';
import { evaluateRedisCheck } from './health.ts';
import { ask, RedisCluster } from '@kit/test-support/redis-cluster';
import { describeRedis } from '@kit/test-support/redis';
import { until } from '@kit/test-support/until';

const NODE_TIMEOUT_MS = 1000;
const LIMIT = 300;
const CONCURRENCY = 8;

// The service's log lines, to see what a failover writes there.
const logLines: Array<{ level: number; msg: string }> = [];
const logStream = new Writable({
  write(chunk: Buffer, _enc, callback) {
    for (const line of chunk.toString().split('\n'))
      if (line) logLines.push(JSON.parse(line) as { level: number; msg: string });
    callback();
  },
});

describeRedis('Redis Cluster failover', () => {
  let cluster: RedisCluster;
  let app: FastifyInstance;
  let store: KitRedisStore;

  before(async () => {
    cluster = await RedisCluster.start({
      masters: 3,
      replicasPerMaster: 1,
      nodeTimeoutMs: NODE_TIMEOUT_MS,
    });
    app = Fastify({ logger: { level: 'info', stream: logStream } });
    addKit(app, [], (opt) => {
      opt.healthCheckDetailLevel = 'Full';
    });
    store = addKitStore(app, cluster.urls, {
      keyPrefix: 'failover:',
      commandTimeoutMs: 500,
      reconnectMaxDelayMs: 200,
    });
    useKitStoreHealthCheck(app, { timeoutMs: 800 });
    await useKit(app);
    await app.ready();
  });
  after(async () => {
    await app?.close();
    await cluster?.dispose();
  });

  it('the master of a rate-limit key is killed: its replica takes over, calls and the check recover, the excess over the limit is counted', async (t) => {
    const key = `ip-${Date.now()}`;
    const slot = Number(
      await ask(cluster.shards[0]!.master.port, 'CLUSTER', 'KEYSLOT', `failover:rl:fw:${key}`),
    );
    const masterPort = await cluster.masterPortOf(slot);
    const shard = cluster.shards.find((s) => s.master.port === masterPort)!;
    const replica = shard.replicas[0]!;
    assert.equal((await evaluateRedisCheck(app)).status, 'healthy');

    const run = await runFailover({
      consume: () => store.rateLimit.consume(key, { limit: LIMIT, windowMs: 120_000 }),
      kill: () => shard.master.stop('SIGKILL'),
      health: async () => (await evaluateRedisCheck(app)).status,
      limit: LIMIT,
      concurrency: CONCURRENCY,
      admitBeforeKill: LIMIT / 3,
      limitMs: 30_000,
    });
    t.diagnostic(`cluster (node timeout ${NODE_TIMEOUT_MS} ms): ${describeRun(run, LIMIT)}`);

    assert.deepEqual(run.otherErrors, [], 'every failure was KIT_ERR_STORE_UNAVAILABLE');
    // The node asked may hear of the promotion a little after the client does (the same race the
    // Sentinel test met in CI), so this waits for it rather than asking once.
    await until(
      'the replica serves the key now',
      async () => (await cluster.masterPortOf(slot)) === replica.port,
      { timeoutMs: 10_000, retryErrors: true },
    );
    await assertRecovered(t, run, {
      limit: LIMIT,
      concurrency: CONCURRENCY,
      health: async () => (await evaluateRedisCheck(app)).status,
      warnings: () => logLines.filter((l) => l.level >= 40).map((l) => l.msg),
    });
  });
});
