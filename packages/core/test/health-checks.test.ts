// @test-lines: every - health probes: sockets, signals and shutdown on this line
// Running checks: timeouts that hold even when a check ignores its signal, errors, one evaluation
// shared by concurrent probes, tag filtering, and checks built from the service container.
import assert from 'node:assert/strict';
import http from 'node:http';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { asValue } from 'awilix';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  addKit,
  HealthCheckDetailLevel,
  HealthCheckResult,
  useKit,
  type HealthCheckContext,
  type IHealthCheck,
  type KitOption,
} from '@kit/core';
import { kitApp } from '@kit/test-support/kit-app';
import { get, json, sleep } from './support/http.ts';

/** The health tests' apps: no OpenAPI document, check descriptions in the report; left unbooted, as the tests add to them. */
function healthApp(
  configure: (opt: KitOption) => void,
  app: FastifyInstance = Fastify(),
): Promise<FastifyInstance> {
  const preset = (opt: KitOption): void => {
    opt.openApiPath = false;
    opt.healthCheckDetailLevel = HealthCheckDetailLevel.Description;
    configure(opt);
  };
  return kitApp([], preset, { app, ready: false });
}

async function listening(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
}

await test('a check that hangs and ignores its signal is answered within its timeout', async () => {
  let sawAbort: unknown;
  const app = await healthApp((opt) => {
    opt.healthCheckDetailLevel = HealthCheckDetailLevel.Full;
    opt.healthChecksConfigure = (hc) =>
      hc
        .addCheck('hangs', () => new Promise<HealthCheckResult>(() => {}), { timeoutMs: 300 })
        .addCheck(
          'listens',
          ({ signal }) => {
            signal.addEventListener('abort', () => (sawAbort = signal.reason));
            return new Promise<HealthCheckResult>(() => {});
          },
          { timeoutMs: 200 },
        )
        .addCheck('fine', () => HealthCheckResult.healthy());
  });
  const base = await listening(app);
  const res = await get(`${base}/healthz`);
  assert.ok(res.ms < 300 + 1000, `answered in ${res.ms.toFixed(0)} ms, bound 1300 ms`);
  assert.equal(res.status, 503);
  const checks = json(res).checks ?? {};
  assert.equal(checks.hangs?.status, 'unhealthy');
  assert.equal(checks.hangs?.description, 'Timed out after 300 ms');
  assert.equal(checks.listens?.description, 'Timed out after 200 ms');
  assert.equal(checks.fine?.status, 'healthy');
  assert.equal(
    (sawAbort as { code?: string } | undefined)?.code,
    'KIT_ERR_HEALTH_CHECK_TIMEOUT',
    'the signal aborts with the timeout as reason',
  );
  await app.close();
});

await test('the default per-check timeout is 800 ms, inside a kubelet probe timeout of 1 s', () => {
  const app = Fastify();
  const kit = addKit(app, [], (opt) => {
    opt.healthChecksConfigure = (hc) => hc.addCheck('db', () => HealthCheckResult.healthy());
  });
  assert.equal(kit.healthChecks.registrations()[0]?.timeoutMs, 800);
});

await test('a thrown error, sync or async, or a non-error, makes the check unhealthy', async () => {
  const app = await healthApp((opt) => {
    opt.healthCheckDetailLevel = HealthCheckDetailLevel.Full;
    opt.healthChecksConfigure = (hc) =>
      hc
        .addCheck('sync', () => {
          throw new TypeError('bad type');
        })
        .addCheck('async', async () => {
          await sleep(5);
          throw Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
        })
        .addCheck('string', () => {
          throw 'just a string' as unknown as Error;
        })
        .addCheck('nothing', () => {
          throw undefined as unknown as Error;
        })
        .addCheck('object', () => {
          throw { reason: 'no' } as unknown as Error;
        });
  });
  const res = await app.inject('/healthz');
  assert.equal(res.statusCode, 503);
  assert.deepEqual(json(res).checks, {
    sync: {
      status: 'unhealthy',
      description: 'The check threw TypeError',
      data: null,
      exception: 'bad type',
    },
    async: {
      status: 'unhealthy',
      description: 'The check threw ECONNREFUSED',
      data: null,
      exception: 'refused',
    },
    string: {
      status: 'unhealthy',
      description: 'The check threw a string instead of an Error',
      data: null,
      exception: 'just a string',
    },
    nothing: {
      status: 'unhealthy',
      description: 'The check threw undefined instead of an Error',
      data: null,
      exception: 'Non-error value thrown',
    },
    object: {
      status: 'unhealthy',
      description: 'The check threw an object instead of an Error',
      data: null,
      exception: 'Non-error value thrown',
    },
  });
  await app.close();
});

await test('100 concurrent probes over real sockets run a slow check once', async () => {
  // The check stays open until the server has received every request of its wave, so the wave
  // cannot outlast it on a slow machine (a fixed sleep did: 2 runs when the sockets trickled in).
  let runs = 0;
  let arrived = 0;
  const waiting: Array<{ count: number; resolve: () => void }> = [];
  const arrivals = (count: number) =>
    new Promise<void>((resolve) =>
      arrived >= count ? resolve() : waiting.push({ count, resolve }),
    );
  const app = Fastify();
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith('/healthz')) return;
    arrived += 1;
    for (const w of waiting.filter((x) => arrived >= x.count)) w.resolve();
  });
  await healthApp((opt) => {
    opt.healthChecksConfigure = (hc) =>
      hc.addCheck(
        'slow',
        async () => {
          runs += 1;
          await arrivals(runs * 100);
          return HealthCheckResult.healthy('held until the wave arrived');
        },
        { timeoutMs: 30_000 },
      );
  }, app);
  const base = await listening(app);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 100 });
  try {
    const wave = await Promise.all(
      Array.from({ length: 100 }, () => get(`${base}/healthz`, agent)),
    );
    assert.equal(runs, 1, 'one evaluation shared by the whole wave');
    assert.ok(wave.every((r) => r.status === 200 && json(r).status === 'healthy'));
    const again = await Promise.all(
      Array.from({ length: 100 }, () => get(`${base}/healthz`, agent)),
    );
    assert.equal(
      runs,
      2,
      'nothing is cached past an evaluation: the next wave runs the check again',
    );
    assert.ok(again.every((r) => r.status === 200));
  } finally {
    agent.destroy();
    await app.close();
  }
});

await test('?tag= filters the checks; different filters are separate evaluations', async (t) => {
  const runs = { db: 0, cache: 0, disk: 0 };
  const counted = (name: keyof typeof runs) => async () => {
    runs[name] += 1;
    await sleep(100);
    return HealthCheckResult.healthy();
  };
  const app = await healthApp((opt) => {
    opt.healthChecksConfigure = (hc) =>
      hc
        .addCheck('db', counted('db'), { tags: ['ready', 'db'] })
        .addCheck('cache', counted('cache'), { tags: ['ready'] })
        .addCheck('disk', counted('disk'), { tags: ['live'] });
  });

  await t.test('one tag', async () => {
    assert.deepEqual(Object.keys(json(await app.inject('/healthz?tag=ready')).checks ?? {}), [
      'db',
      'cache',
    ]);
    assert.deepEqual(Object.keys(json(await app.inject('/healthz?tag=live')).checks ?? {}), [
      'disk',
    ]);
  });
  await t.test('several tags: checks carrying any of them', async () => {
    assert.deepEqual(Object.keys(json(await app.inject('/healthz?tag=db&tag=live')).checks ?? {}), [
      'db',
      'disk',
    ]);
  });
  await t.test('no tag or an empty one: every check', async () => {
    assert.deepEqual(Object.keys(json(await app.inject('/healthz')).checks ?? {}), [
      'db',
      'cache',
      'disk',
    ]);
    assert.deepEqual(Object.keys(json(await app.inject('/healthz?tag=')).checks ?? {}), [
      'db',
      'cache',
      'disk',
    ]);
  });
  await t.test('a tag no check carries: no checks, healthy', async () => {
    const res = await app.inject('/healthz?tag=nothing');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json(res).checks, {});
  });
  await t.test('concurrent probes with different filters do not share an evaluation', async () => {
    runs.db = 0;
    await Promise.all([
      ...Array.from({ length: 10 }, () => app.inject('/healthz?tag=ready')),
      ...Array.from({ length: 10 }, () => app.inject('/healthz')),
    ]);
    assert.equal(runs.db, 2);
  });
  await app.close();
});

await test('checks as a function, an instance and a class built from the container', async () => {
  interface Pool {
    ping(signal: AbortSignal): Promise<number>;
  }
  class PoolHealthCheck implements IHealthCheck {
    readonly #pool: Pool;
    readonly #limitMs: number;
    constructor({ pool, pingLimitMs }: { pool: Pool; pingLimitMs: number }) {
      this.#pool = pool;
      this.#limitMs = pingLimitMs;
    }
    async checkHealth({ name, tags, signal }: HealthCheckContext): Promise<HealthCheckResult> {
      const ms = await this.#pool.ping(signal);
      return ms > this.#limitMs
        ? HealthCheckResult.degraded(`${name} ping ${ms} ms`)
        : HealthCheckResult.healthy(`${name} ping ${ms} ms, tags ${tags.join(',')}`);
    }
  }
  const app = Fastify();
  const kit = addKit(app, [], (opt) => {
    opt.openApiPath = false;
    opt.healthCheckDetailLevel = HealthCheckDetailLevel.Description;
    opt.healthChecksConfigure = (hc) =>
      hc
        .addCheck('fn', () => HealthCheckResult.healthy('function'))
        .addCheck('instance', { checkHealth: () => HealthCheckResult.healthy('instance') })
        .addCheck('pool', PoolHealthCheck, { tags: ['ready', 'db'] });
  });
  kit.services.register({ pool: asValue({ ping: async () => 7 }), pingLimitMs: asValue(50) });
  await useKit(app);
  assert.deepEqual(json(await app.inject('/healthz')).checks, {
    fn: { status: 'healthy', description: 'function' },
    instance: { status: 'healthy', description: 'instance' },
    pool: { status: 'healthy', description: 'pool ping 7 ms, tags ready,db' },
  });
  await app.close();
});

await test('a check class whose dependency is missing fails start-up, naming both', async () => {
  // Dependencies destructured in the constructor are resolved when Kit builds the class.
  class NeedsRedis implements IHealthCheck {
    readonly #redis: { ping(): Promise<string> };
    constructor({ redisClient }: { redisClient: { ping(): Promise<string> } }) {
      this.#redis = redisClient;
    }
    async checkHealth() {
      await this.#redis.ping();
      return HealthCheckResult.healthy();
    }
  }
  const app = Fastify();
  addKit(app, [], (opt) => {
    opt.openApiPath = false;
    opt.healthChecksConfigure = (hc) => hc.addCheck('redis', NeedsRedis);
  });
  await assert.rejects(useKit(app), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'KIT_ERR_DEPENDENCY');
    assert.match(err.message, /redisClient/);
    assert.match(err.message, /health check 'redis' \(NeedsRedis\)/);
    return true;
  });
  assert.equal(app.kit.state, 'starting', 'the gate stays closed');
  await app.close();
});

await test('duplicate check names fail start-up', async (t) => {
  await t.test('in healthChecksConfigure: addKit throws', () => {
    assert.throws(
      () =>
        addKit(Fastify(), [], (opt) => {
          opt.healthChecksConfigure = (hc) =>
            hc
              .addCheck('db', () => HealthCheckResult.healthy())
              .addCheck('db', () => HealthCheckResult.healthy());
        }),
      { code: 'KIT_ERR_DUPLICATE_HEALTH_CHECK' },
    );
  });
  await t.test('from a plugin: useKit rejects', async () => {
    const app = Fastify();
    addKit(app, [], (opt) => {
      opt.openApiPath = false;
      opt.healthChecksConfigure = (hc) => hc.addCheck('redis', () => HealthCheckResult.healthy());
    });
    void app.register(async (instance) => {
      instance.kit.healthChecks.addCheck('redis', () => HealthCheckResult.healthy());
    });
    await assert.rejects(useKit(app), { code: 'KIT_ERR_DUPLICATE_HEALTH_CHECK' });
  });
});

await test('a plugin check surfaces like a host check; late additions are refused', async () => {
  const app = Fastify();
  addKit(app, [], (opt) => {
    opt.openApiPath = false;
    opt.healthCheckDetailLevel = HealthCheckDetailLevel.Description;
  });
  void app.register(async (instance) => {
    instance.kit.healthChecks.addCheck(
      'store',
      () => HealthCheckResult.degraded('replica lag 3 s'),
      { tags: ['ready'] },
    );
  });
  await useKit(app);
  assert.deepEqual(json(await app.inject('/healthz?tag=ready')).checks, {
    store: { status: 'degraded', description: 'replica lag 3 s' },
  });
  assert.throws(() => app.kit.healthChecks.addCheck('late', () => HealthCheckResult.healthy()), {
    code: 'KIT_ERR_HEALTH_SEALED',
  });
  await app.close();
});

await test('a check changing status is logged once per change, with its error', async () => {
  const lines: Array<{
    level: number;
    msg: string;
    check?: string;
    previous?: string;
    err?: { message?: string };
  }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as (typeof lines)[number]);
      done();
    },
  });
  let failing = true;
  const app = await healthApp(
    (opt) => {
      opt.healthChecksConfigure = (hc) =>
        hc.addCheck('db', () =>
          failing
            ? HealthCheckResult.unhealthy('down', new Error('refused'))
            : HealthCheckResult.healthy(),
        );
    },
    Fastify({ logger: { level: 'info', stream }, disableRequestLogging: true }),
  );
  await app.inject('/healthz');
  await app.inject('/healthz');
  failing = false;
  await app.inject('/healthz');
  const health = lines.filter((l) => l.check === 'db');
  assert.deepEqual(
    health.map((l) => [l.level, l.msg, l.previous]),
    [
      [40, "health check 'db' is unhealthy at its first evaluation", undefined],
      [30, "health check 'db' is healthy again", 'unhealthy'],
    ],
  );
  assert.ok(
    !('previous' in (health[0] ?? {})),
    'no made-up previous status at the first evaluation',
  );
  assert.equal(health[0]?.err?.message, 'refused');
  await app.close();
});
