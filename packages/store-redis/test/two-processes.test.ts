// @test-lines: every - ioredis: the store driver on this line
// Two real service processes (test/fixtures/host.ts) sharing one redis-server: a rate limit of N
// admits exactly N requests in total, and exactly one process holds the cron lock.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startProcess, stopProcess, type ProcessHost } from '@kit/test-support/processes';
import { describeRedis, RedisServer } from '@kit/test-support/redis';
import { until } from '@kit/test-support/until';

const LIMIT = 25;
const LOCK_TTL_MS = 1000;
const TICK_MS = 50;
const fixture = path.join(import.meta.dirname, 'fixtures', 'host.ts');

type Host = ProcessHost<{ port: number; owner: string }>;

function startHost(redisUrl: string, keyPrefix: string): Promise<Host> {
  return startProcess(fixture, {
    REDIS_URL: redisUrl,
    KEY_PREFIX: keyPrefix,
    RATE_LIMIT: String(LIMIT),
    LOCK_TTL_MS: String(LOCK_TTL_MS),
    TICK_MS: String(TICK_MS),
  });
}

async function cronState(
  host: Host,
): Promise<{ owner: string; holding: boolean; ticksHeld: number }> {
  return (await fetch(`${host.base}/cron`)).json() as Promise<{
    owner: string;
    holding: boolean;
    ticksHeld: number;
  }>;
}

describeRedis('two processes sharing one Redis', () => {
  let redis: RedisServer;
  let raw: Redis;
  let hosts: Host[] = [];
  const prefix = `two:${randomUUID()}:`;

  before(async () => {
    redis = await RedisServer.start();
    raw = new Redis(redis.url);
    hosts = await Promise.all([startHost(redis.url, prefix), startHost(redis.url, prefix)]);
  });
  after(async () => {
    await Promise.all(hosts.map((h) => stopProcess(h, 'SIGKILL')));
    raw?.disconnect();
    await redis?.dispose();
  });

  for (const algorithm of ['fixed-window', 'sliding-window'] as const) {
    it(`${algorithm}: a limit of ${LIMIT} admits exactly ${LIMIT} of 120 concurrent requests across both processes`, async (t) => {
      const key = `burst-${algorithm}`;
      const responses = await Promise.all(
        Array.from({ length: 120 }, (_, i) =>
          fetch(`${hosts[i % 2]!.base}/hit?algorithm=${algorithm}&key=${key}`).then((r) => ({
            host: i % 2,
            status: r.status,
          })),
        ),
      );
      const admitted = responses.filter((r) => r.status === 200);
      const refused = responses.filter((r) => r.status === 429);
      assert.equal(admitted.length, LIMIT);
      assert.equal(refused.length, 120 - LIMIT);
      const perHost = [0, 1].map((h) => admitted.filter((r) => r.host === h).length);
      t.diagnostic(
        `${algorithm}: admitted ${admitted.length} of 120 (process A ${perHost[0]}, process B ${perHost[1]}), refused ${refused.length}`,
      );
    });
  }

  it('exactly one process holds the cron lock; when it dies the other takes over after the TTL', async (t) => {
    // Wait for the first tick to settle the lock.
    await sleep(TICK_MS * 3);
    let holderIndex = -1;
    let samples = 0;
    const deadline = Date.now() + 1500;
    while (Date.now() < deadline) {
      const states = await Promise.all(hosts.map(cronState));
      const holding = states.filter((s) => s.holding);
      assert.equal(
        holding.length,
        1,
        `exactly one holder at sample ${samples}: ${JSON.stringify(states)}`,
      );
      const index = states.findIndex((s) => s.holding);
      if (holderIndex === -1) holderIndex = index;
      assert.equal(index, holderIndex, 'the lock did not move while its holder renews it');
      assert.equal(await raw.get(`${prefix}cron:nightly-report`), hosts[index]!.ready.owner);
      assert.equal(states[1 - index]!.ticksHeld, 0, 'the other process never held it');
      samples++;
      await sleep(TICK_MS);
    }
    const holder = hosts[holderIndex]!;
    const other = hosts[1 - holderIndex]!;
    t.diagnostic(
      `cron: ${samples} samples over 1.5 s, one holder in each (process ${holderIndex === 0 ? 'A' : 'B'}); the other held it 0 ticks`,
    );

    // The holder crashes (no release): the lock lapses after its TTL and passes to the other.
    await stopProcess(holder, 'SIGKILL');
    const killedAt = Date.now();
    // What is left of the dead holder's lease, on the server's clock: the other process may take
    // the lock only once it has run out (however long ago, under load, the last renew was).
    const leaseLeftMs = await raw.pttl(`${prefix}cron:nightly-report`);
    assert.equal(
      await raw.get(`${prefix}cron:nightly-report`),
      holder.ready.owner,
      'the dead holder still holds the lock right after the kill',
    );
    await until('the other process took over', async () => (await cronState(other)).holding, {
      timeoutMs: LOCK_TTL_MS + 5000,
      intervalMs: 10,
    });
    const takeoverMs = Date.now() - killedAt;
    assert.ok(
      takeoverMs >= leaseLeftMs - 20,
      `took over after ${takeoverMs} ms, before the ${leaseLeftMs} ms left of the lease had run out`,
    );
    assert.equal(await raw.get(`${prefix}cron:nightly-report`), other.ready.owner);
    t.diagnostic(
      `cron: holder SIGKILLed, the other process took over after ${takeoverMs} ms (TTL ${LOCK_TTL_MS} ms, tick ${TICK_MS} ms)`,
    );

    // A graceful stop releases the lock at once.
    await stopProcess(other, 'SIGTERM');
    assert.equal(await raw.get(`${prefix}cron:nightly-report`), null, 'released on close');
  });
});
