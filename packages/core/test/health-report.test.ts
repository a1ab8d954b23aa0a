// @test-lines: every - health probes: sockets, signals and shutdown on this line
// The /healthz report and /livez answer, black-box through Fastify inject: status codes, detail
// levels and what they may show, uptime, version, headers, paths and switches.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  addKit,
  HealthCheckDetailLevel,
  HealthCheckResult,
  useKit,
  type KitOption,
} from '@kit/core';
import { kitApp } from '@kit/test-support/kit-app';
import { json } from './support/http.ts';

/** The report tests' apps: no OpenAPI document; left unbooted, as the tests add to them. */
function healthApp(configure: (opt: KitOption) => void): Promise<FastifyInstance> {
  const preset = (opt: KitOption): void => {
    opt.openApiPath = false;
    configure(opt);
  };
  return kitApp([], preset, { ready: false });
}

// Secrets a careless check might put in its texts; none may reach StatusOnly or Description.
const CONN = 'Server=db.internal;Database=orders;User ID=sa;Password=hunter2';
const CRED_URL = 'postgres://app:s3cr3t@db.internal:5432/orders';
const SECRETS = ['hunter2', 's3cr3t', 'db.internal', 'Password=', 'app:'];

function leaky(opt: KitOption): void {
  opt.healthChecksConfigure = (hc) =>
    hc
      .addCheck('db', () => {
        throw new Error(`connect ECONNREFUSED ${CRED_URL} (${CONN})`);
      })
      .addCheck('cache', () =>
        HealthCheckResult.degraded(`slow: ${CONN}`, new Error(`timeout talking to ${CRED_URL}`), {
          url: CRED_URL,
          ms: 812,
        }),
      )
      .addCheck('queue', () =>
        HealthCheckResult.healthy(`queue at ${CRED_URL} is fine`, { depth: 3 }),
      );
}

await test('status codes: each row of the spec table', async (t) => {
  const rows: Array<[string, () => HealthCheckResult, number, string]> = [
    ['all healthy', () => HealthCheckResult.healthy(), 200, 'healthy'],
    ['some degraded, none failing', () => HealthCheckResult.degraded('slow'), 200, 'degraded'],
    ['one failing', () => HealthCheckResult.unhealthy('down'), 503, 'unhealthy'],
  ];
  for (const [name, second, code, status] of rows) {
    await t.test(name, async () => {
      const app = await healthApp((opt) => {
        opt.healthChecksConfigure = (hc) =>
          hc.addCheck('first', () => HealthCheckResult.healthy()).addCheck('second', second);
      });
      const res = await app.inject('/healthz');
      assert.equal(res.statusCode, code);
      const body = json(res);
      assert.equal(body.status, status);
      assert.deepEqual(Object.keys(body), ['status', 'checks', 'uptime', 'version']);
      assert.equal(body.checks?.first?.status, 'healthy');
      await app.close();
    });
  }

  await t.test('degraded and unhealthy together: unhealthy wins', async () => {
    const app = await healthApp((opt) => {
      opt.healthChecksConfigure = (hc) =>
        hc
          .addCheck('a', () => HealthCheckResult.degraded())
          .addCheck('b', async () => HealthCheckResult.unhealthy());
    });
    const res = await app.inject('/healthz');
    assert.equal(res.statusCode, 503);
    assert.equal(json(res).status, 'unhealthy');
    await app.close();
  });

  await t.test('no checks registered: healthy 200 with checks {}', async () => {
    const app = await healthApp(() => {});
    const res = await app.inject('/healthz');
    assert.equal(res.statusCode, 200);
    const body = json(res);
    assert.equal(body.status, 'healthy');
    assert.deepEqual(body.checks, {});
    await app.close();
  });
});

await test('detail level StatusOnly: statuses and nothing else', async () => {
  const app = await healthApp((opt) => {
    opt.healthCheckDetailLevel = HealthCheckDetailLevel.StatusOnly;
    leaky(opt);
  });
  const res = await app.inject('/healthz');
  assert.equal(res.statusCode, 503);
  assert.deepEqual(json(res).checks, {
    db: { status: 'unhealthy' },
    cache: { status: 'degraded' },
    queue: { status: 'healthy' },
  });
  for (const secret of [...SECRETS, 'ECONNREFUSED', 'slow', 'queue at'])
    assert.ok(!res.body.includes(secret), `StatusOnly leaks ${secret}: ${res.body}`);
  await app.close();
});

await test('detail level Description: descriptions, scrubbed; no data, no exception', async () => {
  const app = await healthApp((opt) => {
    opt.healthCheckDetailLevel = HealthCheckDetailLevel.Description;
    leaky(opt);
  });
  const res = await app.inject('/healthz');
  const checks = json(res).checks ?? {};
  assert.deepEqual(checks.db, { status: 'unhealthy', description: 'The check threw Error' });
  assert.deepEqual(checks.cache, { status: 'degraded', description: 'slow: [redacted]' });
  assert.deepEqual(checks.queue, { status: 'healthy', description: 'queue at [redacted] is fine' });
  for (const secret of [...SECRETS, 'ECONNREFUSED', 'exception', 'data'])
    assert.ok(!res.body.includes(secret), `Description leaks ${secret}: ${res.body}`);
  await app.close();
});

await test('detail level Full: description, data and exception message, credentials masked', async () => {
  const app = await healthApp((opt) => {
    opt.healthCheckDetailLevel = HealthCheckDetailLevel.Full;
    leaky(opt);
    const previous = opt.healthChecksConfigure;
    opt.healthChecksConfigure = (hc) => {
      previous?.(hc);
      return hc.addCheck('plain', () => HealthCheckResult.healthy());
    };
  });
  const res = await app.inject('/healthz');
  const checks = json(res).checks ?? {};
  assert.deepEqual(checks.db, {
    status: 'unhealthy',
    description: 'The check threw Error',
    data: null,
    exception:
      'connect ECONNREFUSED postgres://***@db.internal:5432/orders (Server=db.internal;Database=orders;User ID=sa;Password=***)',
  });
  assert.deepEqual(checks.cache, {
    status: 'degraded',
    description: 'slow: Server=db.internal;Database=orders;User ID=sa;Password=***',
    data: { url: 'postgres://***@db.internal:5432/orders', ms: 812 },
    exception: 'timeout talking to postgres://***@db.internal:5432/orders',
  });
  assert.deepEqual(
    checks.plain,
    { status: 'healthy', data: null, exception: null },
    'no description given: absent; data and exception null',
  );
  for (const secret of ['hunter2', 's3cr3t'])
    assert.ok(!res.body.includes(secret), `Full leaks a password: ${res.body}`);
  await app.close();
});

await test('Full: data JSON cannot carry becomes null instead of a 500', async () => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const app = await healthApp((opt) => {
    opt.healthCheckDetailLevel = HealthCheckDetailLevel.Full;
    opt.healthChecksConfigure = (hc) =>
      hc
        .addCheck('big', () => HealthCheckResult.healthy('ok', { n: 10n }))
        .addCheck('cycle', () => HealthCheckResult.healthy('ok', cyclic));
  });
  const res = await app.inject('/healthz');
  assert.equal(res.statusCode, 200);
  assert.equal(json(res).checks?.big?.data, null);
  assert.equal(json(res).checks?.cycle?.data, null);
  await app.close();
});

await test('a check returning something that is not a result is unhealthy, not a 500', async () => {
  const app = await healthApp((opt) => {
    opt.healthCheckDetailLevel = HealthCheckDetailLevel.Description;
    opt.healthChecksConfigure = (hc) =>
      hc.addCheck('odd', () => ({ status: 'fine' }) as unknown as HealthCheckResult);
  });
  const res = await app.inject('/healthz');
  assert.equal(res.statusCode, 503);
  assert.equal(json(res).checks?.odd?.status, 'unhealthy');
  assert.match(String(json(res).checks?.odd?.description), /invalid result/);
  await app.close();
});

await test('default detail level follows NODE_ENV', async (t) => {
  const saved = process.env.NODE_ENV;
  const cases: Array<[string | undefined, string[]]> = [
    ['development', ['status', 'description', 'data', 'exception']],
    ['production', ['status']],
    [undefined, ['status']],
  ];
  try {
    for (const [env, keys] of cases) {
      await t.test(`NODE_ENV=${env ?? '(unset)'}`, async () => {
        if (env === undefined) delete process.env.NODE_ENV;
        else process.env.NODE_ENV = env;
        const app = await healthApp((opt) => {
          opt.healthChecksConfigure = (hc) =>
            hc.addCheck('db', () => HealthCheckResult.unhealthy('down', new Error('refused')));
        });
        assert.equal(
          app.kit.options.healthCheckDetailLevel,
          env === 'development' ? 'Full' : 'StatusOnly',
        );
        const res = await app.inject('/healthz');
        assert.deepEqual(Object.keys(json(res).checks?.db ?? {}), keys);
        await app.close();
      });
    }
  } finally {
    if (saved === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = saved;
  }
});

await test('uptime is hh:mm:ss with hours not wrapped past 24 (injected clock)', async (t) => {
  const cases: Array<[number, string]> = [
    [0, '00:00:00'],
    [999, '00:00:00'],
    [(1 * 3600 + 2 * 60 + 3) * 1000, '01:02:03'],
    [(23 * 3600 + 59 * 60 + 59) * 1000 + 999, '23:59:59'],
    [24 * 3600 * 1000, '24:00:00'],
    [(27 * 3600 + 3 * 60 + 4) * 1000, '27:03:04'],
    [100 * 3600 * 1000, '100:00:00'],
  ];
  for (const [ms, expected] of cases) {
    await t.test(`${ms} ms -> ${expected}`, async () => {
      const app = await healthApp((opt) => {
        opt.uptimeClock = () => ms;
      });
      assert.equal(json(await app.inject('/healthz')).uptime, expected);
      await app.close();
    });
  }
  await t.test('the default clock counts from process start', async () => {
    const app = await healthApp(() => {});
    const uptime = String(json(await app.inject('/healthz')).uptime);
    assert.match(uptime, /^\d{2,}:[0-5]\d:[0-5]\d$/);
    const [h, m, s] = uptime.split(':').map(Number) as [number, number, number];
    const seconds = h * 3600 + m * 60 + s;
    assert.ok(
      Math.abs(seconds - process.uptime()) <= 2,
      `uptime ${uptime} vs process.uptime() ${process.uptime()}`,
    );
    await app.close();
  });
});

await test('version: applicationVersion, else the host package.json', async (t) => {
  await t.test('applicationVersion', async () => {
    const app = await healthApp((opt) => {
      opt.applicationVersion = '2.7.1+build.9';
    });
    assert.equal(json(await app.inject('/healthz')).version, '2.7.1+build.9');
    await app.close();
  });
  await t.test('host package.json (the host here is the test file, in packages/core)', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    const app = await healthApp(() => {});
    assert.equal(json(await app.inject('/healthz')).version, pkg.version);
    await app.close();
  });
});

await test('both probes are JSON with Cache-Control: no-store, on 200 and on 503', async () => {
  const app = await healthApp((opt) => {
    opt.healthChecksConfigure = (hc) => hc.addCheck('down', () => HealthCheckResult.unhealthy());
  });
  for (const url of ['/healthz', '/livez']) {
    const res = await app.inject(url);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8', url);
    assert.equal(res.headers['cache-control'], 'no-store', url);
  }
  await app.close();
});

await test('/livez answers 200 alive whatever the checks say', async () => {
  const app = await healthApp((opt) => {
    opt.healthChecksConfigure = (hc) =>
      hc.addCheck('down', () => {
        throw new Error('down');
      });
  });
  const res = await app.inject('/livez');
  assert.equal(res.statusCode, 200);
  assert.equal(res.body, '{"status":"alive"}');
  const head = await app.inject({ method: 'HEAD', url: '/livez' });
  assert.equal(head.statusCode, 200);
  await app.close();
});

await test('custom healthCheckPath', async () => {
  const app = await healthApp((opt) => {
    opt.healthCheckPath = '/health/ready';
  });
  assert.equal((await app.inject('/health/ready')).statusCode, 200);
  assert.equal(json(await app.inject('/health/ready')).status, 'healthy');
  assert.equal((await app.inject('/healthz')).statusCode, 404);
  assert.equal((await app.inject('/livez')).statusCode, 200);
  await app.close();
});

await test('enableHealthChecks = false removes both probes', async () => {
  const app = await healthApp((opt) => {
    opt.enableHealthChecks = false;
    opt.healthChecksConfigure = (hc) => hc.addCheck('db', () => HealthCheckResult.healthy());
  });
  assert.equal((await app.inject('/healthz')).statusCode, 404);
  assert.equal((await app.inject('/livez')).statusCode, 404);
  await app.close();
});

await test('probes are left out of the OpenAPI document', async () => {
  const app = Fastify();
  addKit(app, []);
  await useKit(app);
  const doc = json(await app.inject('/openapi.json')) as { paths?: Record<string, unknown> };
  assert.ok(doc.paths, 'the document has paths');
  assert.ok(!('/healthz' in doc.paths) && !('/livez' in doc.paths), JSON.stringify(doc.paths));
  await app.close();
});

await test('health options fail fast with KIT_ERR_INVALID_OPTION naming option and value', async (t) => {
  const cases: Array<[string, (opt: KitOption) => void, RegExp]> = [
    [
      'uptimeClock',
      (opt) => void (opt.uptimeClock = 42 as unknown as () => number),
      /uptimeClock = 42/,
    ],
    [
      'healthCheckPath',
      (opt) => void (opt.healthCheckPath = 'healthz'),
      /healthCheckPath = "healthz"/,
    ],
    [
      'healthCheckPath /livez',
      (opt) => void (opt.healthCheckPath = '/livez'),
      /healthCheckPath = "\/livez"/,
    ],
    [
      'signals',
      (opt) => void opt.configureGracefulShutdown((g) => void (g.signals = ['SIGKILL'])),
      /gracefulShutdown.signals = \["SIGKILL"\]/,
    ],
    [
      'shutdownDelayMs',
      (opt) => void opt.configureGracefulShutdown((g) => void (g.shutdownDelayMs = -1)),
      /gracefulShutdown.shutdownDelayMs = -1/,
    ],
    [
      'check timeout',
      (opt) =>
        void (opt.healthChecksConfigure = (hc) =>
          hc.addCheck('x', () => HealthCheckResult.healthy(), { timeoutMs: 0 })),
      /addCheck\('x'\).timeoutMs = 0/,
    ],
  ];
  for (const [name, configure, message] of cases) {
    await t.test(name, () => {
      assert.throws(
        () => addKit(Fastify(), [], configure),
        (err: Error & { code?: string }) =>
          err.code === 'KIT_ERR_INVALID_OPTION' && message.test(err.message),
      );
    });
  }
});
