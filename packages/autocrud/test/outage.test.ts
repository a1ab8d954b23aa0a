// @test-lines: every - pg: outages seen through the driver's sockets, signals to the server
// PostgreSQL stopped and restarted while the service runs, and down when the service starts: the
// generated routes answer 503 with Retry-After, the `database` check turns unhealthy within its
// timeout, calls fail at once instead of queueing, and both recover when the server is back,
// without restarting the service.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { crudApp, ProductEndpoint, suiteTables, type EngineUnderTest } from './suite/fixtures.ts';
import { serverEngine } from './suite/engines.ts';
import { describePostgres, PostgresServer } from '@kit/test-support/postgres';
import { until } from '@kit/test-support/until';

const CHECK_TIMEOUT_MS = 500;

interface Check {
  status: string;
  description?: string;
  exception?: string | null;
}

async function databaseCheck(
  app: FastifyInstance,
): Promise<{ check: Check; res: LightMyRequestResponse; ms: number }> {
  const started = performance.now();
  const res = await app.inject('/healthz?tag=ready');
  const ms = Math.round(performance.now() - started);
  const check = res.json<{ checks: Record<string, Check> }>().checks.database;
  assert.ok(check, res.body);
  assert.equal(res.statusCode, check.status === 'unhealthy' ? 503 : 200, res.body);
  return { check, res, ms };
}

function assertUnavailable(res: LightMyRequestResponse, server: PostgresServer): void {
  assert.equal(res.statusCode, 503, res.body);
  assert.equal(res.headers['retry-after'], '5');
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  assert.equal(res.json<{ title: string }>().title, 'Service Unavailable');
  assertNoAddress(res.body, server);
}

function assertNoAddress(body: string, server: PostgresServer): void {
  for (const secret of ['127.0.0.1', String(server.port), 'kit@', 'postgres://', 'ECONNREFUSED'])
    assert.ok(!body.includes(secret), `${secret} in ${body}`);
}

describePostgres('PostgreSQL outage while the service runs', () => {
  let server: PostgresServer;
  let app: FastifyInstance;
  let engine: EngineUnderTest;

  before(async () => {
    server = await PostgresServer.start();
    engine = serverEngine(server);
    for (const statement of suiteTables('postgres')) await engine.sql(statement);
    app = await crudApp(
      engine,
      { connectTimeoutMs: 1000, healthCheck: { timeoutMs: CHECK_TIMEOUT_MS } },
      undefined,
      [ProductEndpoint],
    );
  });
  after(async () => {
    await app?.close();
    await server?.dispose();
  });

  it('stopped: 503 with Retry-After and the check unhealthy within its timeout, nothing queued; restarted: both recover', async (t) => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/product',
      payload: { name: 'apple', price: 1 },
    });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json<{ id: number }>().id;
    assert.equal((await databaseCheck(app)).check.status, 'healthy');

    await server.stop();
    // Should an assertion fail, the server still comes back for the next test.
    t.after(() => server.resume());

    assertUnavailable(await app.inject(`/api/product/${id}`), server);
    assertUnavailable(
      await app.inject({
        method: 'POST',
        url: '/api/product',
        payload: { name: 'lost', price: 1 },
      }),
      server,
    );
    assertUnavailable(await app.inject('/api/product?filter[price][gt]=0'), server);

    const down = await databaseCheck(app);
    assert.equal(down.check.status, 'unhealthy');
    assert.equal(down.check.description, 'Database did not answer SELECT 1');
    assert.ok(down.ms <= CHECK_TIMEOUT_MS + 150, `the check took ${down.ms} ms`);
    assertNoAddress(down.res.body, server);

    // A burst during the outage fails at once: nothing waits for the database, nothing is replayed later.
    const started = performance.now();
    const burst = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        app.inject({
          method: 'POST',
          url: '/api/product',
          payload: { name: `burst-${i}`, price: 1 },
        }),
      ),
    );
    const burstMs = Math.round(performance.now() - started);
    assert.ok(burst.every((r) => r.statusCode === 503));

    const restartStarted = performance.now();
    await server.resume();
    const { ms: toHealthy } = await until(
      'the check healthy again',
      async () => (await databaseCheck(app)).check.status === 'healthy',
      5000,
    );
    assert.equal((await app.inject(`/api/product/${id}`)).statusCode, 200);
    const after = await app.inject({
      method: 'POST',
      url: '/api/product',
      payload: { name: 'after', price: 2 },
    });
    assert.equal(after.statusCode, 201, after.body);
    const rows = await engine.sql(
      "select name from products where name like 'burst-%' or name = 'lost'",
    );
    assert.deepEqual(rows, [], 'no write of the outage was applied later');
    t.diagnostic(
      `stopped: check unhealthy in ${down.ms} ms (timeout ${CHECK_TIMEOUT_MS} ms); 100 writes refused in ${burstMs} ms; ` +
        `healthy again ${toHealthy} ms after the restart began (${Math.round(performance.now() - restartStarted)} ms incl. the first requests)`,
    );
  });

  it('down at start-up: start-up completes, routes answer 503 and the check is unhealthy until the server answers', async (t) => {
    await server.stop();
    t.after(() => server.resume());
    const started = performance.now();
    const late = await crudApp(
      engine,
      { connectTimeoutMs: 1000, healthCheck: { timeoutMs: CHECK_TIMEOUT_MS } },
      undefined,
      [ProductEndpoint],
    );
    const startMs = Math.round(performance.now() - started);
    try {
      assertUnavailable(await late.inject('/api/product'), server);
      assert.equal((await databaseCheck(late)).check.status, 'unhealthy');
      await server.resume();
      const { ms: toHealthy } = await until(
        'the check healthy',
        async () => (await databaseCheck(late)).check.status === 'healthy',
        5000,
      );
      assert.equal((await late.inject('/api/product')).statusCode, 200);
      t.diagnostic(
        `started without the database in ${startMs} ms; healthy ${toHealthy} ms after the server came up`,
      );
    } finally {
      await late.close();
    }
  });

  it('hung (postmaster and every backend stopped): a request answers 503 within statementTimeoutMs + 2 s, the check turns unhealthy, both recover when it thaws', async (t) => {
    const hungApp = await crudApp(
      engine,
      {
        connectTimeoutMs: 1000,
        statementTimeoutMs: 500,
        healthCheck: { timeoutMs: CHECK_TIMEOUT_MS },
      },
      undefined,
      [ProductEndpoint],
    );
    const created = await hungApp.inject({
      method: 'POST',
      url: '/api/product',
      payload: { name: 'before-the-freeze', price: 1 },
    });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json<{ id: number }>().id;
    const postmaster = Number(
      readFileSync(path.join(server.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0],
    );
    // The postmaster and its children (read from /proc: no procps needed).
    const children = readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          // The parent pid is the 4th field of /proc/<pid>/stat, after the command in parentheses.
          return (
            Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]) ===
            postmaster
          );
        } catch {
          return false;
        }
      })
      .map(Number);
    const processes = [postmaster, ...children];
    const signal = (name: 'STOP' | 'CONT') => {
      for (const pid of processes) {
        try {
          process.kill(pid, `SIG${name}`);
        } catch {
          // A short-lived child (an autovacuum worker) that has exited meanwhile.
        }
      }
    };
    signal('STOP');
    let thawed = false;
    t.after(async () => {
      if (!thawed) signal('CONT');
      await hungApp.close();
    });

    // The server cannot enforce its statement_timeout while stopped: the pool gives up on it.
    const started = performance.now();
    // Bounded here too, so that code without the bound fails the test instead of hanging it.
    const stuck = await Promise.race([
      hungApp.inject(`/api/product/${id}`),
      sleep(8000).then(() => assert.fail('no answer within 8 s')),
    ]);
    const stuckMs = Math.round(performance.now() - started);
    assertUnavailable(stuck, server);
    assert.ok(stuckMs <= 500 + 2000 + 1000, `the request took ${stuckMs} ms`);
    const down = await databaseCheck(hungApp);
    assert.equal(down.check.status, 'unhealthy');
    assert.ok(down.ms <= CHECK_TIMEOUT_MS + 150, `the check took ${down.ms} ms`);
    // Marked down: the others fail at once while one attempt waits connectTimeoutMs for the server.
    const burstStarted = performance.now();
    const burst = await Promise.all(
      Array.from({ length: 20 }, () => hungApp.inject(`/api/product/${id}`)),
    );
    const burstMs = Math.round(performance.now() - burstStarted);
    assert.ok(burst.every((r) => r.statusCode === 503));
    assert.ok(burstMs <= 1000 + 500, `the burst took ${burstMs} ms`);

    signal('CONT');
    thawed = true;
    const { ms: toHealthy } = await until(
      'the check healthy again',
      async () => (await databaseCheck(hungApp)).check.status === 'healthy',
      5000,
    );
    assert.equal((await hungApp.inject(`/api/product/${id}`)).statusCode, 200);
    t.diagnostic(
      `hung: a request answered 503 after ${stuckMs} ms (statementTimeoutMs 500 + 2000 grace), the check unhealthy in ${down.ms} ms, 20 more 503 in ${burstMs} ms; healthy ${toHealthy} ms after the thaw`,
    );
  });
});
