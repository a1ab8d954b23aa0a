// @test-lines: every - pg: a busy server reached through the driver's sockets
// A busy PostgreSQL is not a dead one. With the pool saturated by statements waiting for a table
// lock, requests that cannot get a connection answer 503 + Retry-After within acquireTimeoutMs,
// the `database` check stays healthy (it has its own connection) and no line calls the database
// unavailable. A statement over statementTimeoutMs is cancelled by the server (504). A request
// whose client goes away has its statement cancelled and its connection freed (real sockets).
import assert from 'node:assert/strict';
import http from 'node:http';
import { Writable } from 'node:stream';
import { after, before, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import {
  crudApp,
  NotesEndpoint,
  ProductEndpoint,
  suiteTables,
  type EngineUnderTest,
} from './suite/fixtures.ts';
import { serverEngine } from './suite/engines.ts';
import { describePostgres, PostgresServer } from '@kit/test-support/postgres';
import { until } from '@kit/test-support/until';

const MARGIN_MS = 600;

/** pino's lines, parsed, as the app writes them. */
function logSink(): { stream: Writable; lines: Array<{ level: number; msg: string }> } {
  const lines: Array<{ level: number; msg: string }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n'))
        if (line.trim() !== '') lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { stream, lines };
}

/** Another session holds `lock table ... in access exclusive mode` until the returned function is called. */
async function lockTable(server: PostgresServer, table: string): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: server.url, application_name: 'test-lock' });
  await client.connect();
  await client.query('begin');
  await client.query(`lock table ${table} in access exclusive mode`);
  return async () => {
    await client.query('commit');
    await client.end();
  };
}

async function timed(
  app: FastifyInstance,
  url: string,
  method: 'GET' | 'POST' = 'GET',
  payload?: object,
): Promise<{ res: LightMyRequestResponse; ms: number; endedAt: number }> {
  const started = performance.now();
  const res = await app.inject({ method, url, ...(payload ? { payload } : {}) });
  const endedAt = performance.now();
  return { res, ms: Math.round(endedAt - started), endedAt };
}

function databaseCheck(res: LightMyRequestResponse): string | undefined {
  return res.json<{ checks: Record<string, { status: string }> }>().checks.database?.status;
}

describePostgres('PostgreSQL busy, slow and abandoned', () => {
  let server: PostgresServer;
  let engine: EngineUnderTest;

  before(async () => {
    server = await PostgresServer.start();
    engine = serverEngine(server);
    for (const statement of suiteTables('postgres')) await engine.sql(statement);
  });
  after(async () => {
    await server?.dispose();
  });

  it('a saturated pool: 503 + Retry-After within acquireTimeoutMs, the check healthy on every probe, no line calls the database unavailable', async (t) => {
    const { stream, lines } = logSink();
    // poolSize 2 and the default acquireTimeoutMs (2000 ms).
    const app = await crudApp(engine, { poolSize: 2 }, undefined, [ProductEndpoint], {
      logger: { level: 'info', stream },
    });
    assert.equal((await app.inject('/api/product')).statusCode, 200);
    const release = await lockTable(server, 'products');
    let released = false;
    // The lock goes before the app closes: closing waits for requests that wait for the lock.
    t.after(async () => {
      if (!released) await release();
      await app.close();
    });
    const lockedAt = performance.now();

    // 30 list requests over ~6 s while the lock is held ~7 s, and a probe every 500 ms.
    const requests = Array.from({ length: 30 }, (_, i) =>
      sleep(i * 200).then(() => timed(app, '/api/product?pageSize=5')),
    );
    const probes: Array<Promise<LightMyRequestResponse>> = [];
    for (let i = 0; i < 13; i++) probes.push(sleep(i * 500).then(() => app.inject('/healthz')));
    await sleep(7000 - (performance.now() - lockedAt));
    await release();
    released = true;
    const releasedAt = performance.now();
    const answers = await Promise.all(requests);
    const health = await Promise.all(probes);

    const busy = answers.filter((a) => a.res.statusCode === 503);
    const through = answers.filter((a) => a.res.statusCode === 200);
    assert.equal(
      busy.length + through.length,
      30,
      JSON.stringify(answers.map((a) => a.res.statusCode)),
    );
    for (const { res, ms } of busy) {
      assert.equal(res.headers['retry-after'], '1');
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      assert.match(res.json<{ detail: string }>().detail, /busy/);
      assert.ok(ms <= 2000 + MARGIN_MS, `a busy answer took ${ms} ms`);
    }
    // The two requests that got the two connections waited for the lock (bounded by statementTimeoutMs)
    // and answered once it went; the others that got through waited less than acquireTimeoutMs.
    assert.ok(
      through.length >= 2 && busy.length >= 20,
      `${through.length} through, ${busy.length} busy`,
    );
    for (const { ms, endedAt } of through)
      assert.ok(
        ms <= 2000 + MARGIN_MS || endedAt - releasedAt <= MARGIN_MS,
        `a request got through after ${ms} ms`,
      );
    for (const h of health) {
      assert.equal(h.statusCode, 200, h.body);
      assert.equal(databaseCheck(h), 'healthy');
    }
    assert.deepEqual(
      lines.filter((l) => /unavailable/i.test(l.msg) || l.level >= 50).map((l) => l.msg),
      [],
    );
    const after = await timed(app, '/api/product?pageSize=5');
    assert.equal(after.res.statusCode, 200);
    const busyMs = busy.map((a) => a.ms).sort((a, b) => a - b);
    t.diagnostic(
      `lock held ${Math.round(releasedAt - lockedAt)} ms: ${busy.length} of 30 answered 503 busy in ${busyMs[0]}-${busyMs[busyMs.length - 1]} ms (acquireTimeoutMs 2000), ` +
        `${through.length} got a connection and answered 200 after the lock (slowest ${Math.max(...through.map((a) => a.ms))} ms); ${health.length} of ${health.length} probes healthy`,
    );
  });

  it('statementTimeoutMs: a statement over it is cancelled by the server and answers 504; nothing is written, the check stays healthy', async (t) => {
    const { stream, lines } = logSink();
    const app = await crudApp(engine, { statementTimeoutMs: 500 }, undefined, [ProductEndpoint], {
      logger: { level: 'info', stream },
    });
    const release = await lockTable(server, 'products');
    // Released after 2 s whatever happens, so that statements nobody cancels end (and the test fails instead of hanging).
    const released = sleep(2000).then(release);
    t.after(async () => {
      await released;
      await app.close();
    });
    const [list, create, health] = await Promise.all([
      timed(app, '/api/product'),
      timed(app, '/api/product', 'POST', { name: 'too-slow', price: 1 }),
      sleep(100).then(() => app.inject('/healthz')),
    ]);
    await released;
    for (const { res, ms } of [list, create]) {
      assert.equal(res.statusCode, 504, res.body);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      assert.equal(res.json<{ title: string }>().title, 'Gateway Timeout');
      assert.ok(ms >= 450 && ms <= 500 + MARGIN_MS, `${ms} ms`);
    }
    assert.equal(databaseCheck(health), 'healthy');
    assert.equal(databaseCheck(await app.inject('/healthz')), 'healthy');
    assert.equal(
      Number(
        (await server.sql("select count(*) as n from products where name = 'too-slow'")).rows[0].n,
      ),
      0,
    );
    assert.equal((await app.inject('/api/product')).statusCode, 200);
    assert.deepEqual(
      lines.filter((l) => /unavailable/i.test(l.msg) || l.level >= 50).map((l) => l.msg),
      [],
    );
    t.diagnostic(
      `504 after ${list.ms} ms (list) and ${create.ms} ms (create) with statementTimeoutMs 500`,
    );
  });

  it('a request whose client goes away has its statement cancelled and its connection freed (real sockets)', async (t) => {
    const app = await crudApp(engine, { poolSize: 4 }, undefined, [ProductEndpoint, NotesEndpoint]);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    const created = await app.inject({
      method: 'POST',
      url: '/api/product',
      payload: { name: 'kept', price: 1 },
    });
    const id = created.json<{ id: number }>().id;
    const release = await lockTable(server, 'products');
    let released = false;
    t.after(async () => {
      if (!released) await release();
      await app.close();
    });

    // Four requests on their own connections, each of which waits for the lock: two lists, a create, a replace.
    const sent = [
      { method: 'GET', path: '/api/product' },
      { method: 'GET', path: '/api/product?sort=-price' },
      { method: 'POST', path: '/api/product', body: { name: 'abandoned', price: 2 } },
      { method: 'PUT', path: `/api/product/${id}`, body: { name: 'abandoned-update', price: 3 } },
    ].map(({ method, path, body }) => {
      const req = http.request({
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        headers: body ? { 'content-type': 'application/json' } : {},
      });
      req.on('error', () => undefined);
      req.end(body ? JSON.stringify(body) : undefined);
      return req;
    });
    const active = async () =>
      Number(
        (
          await server.sql(
            "select count(*) as n from pg_stat_activity where application_name = 'kit-autocrud' and state = 'active'",
          )
        ).rows[0].n,
      );
    const running = async (): Promise<string> => `${await active()} statements running`;
    await until('the four statements waiting together', async () => (await active()) === 4, {
      timeoutMs: 5000,
      diagnostic: running,
    });
    const goneAt = performance.now();
    for (const req of sent) req.destroy();
    await until(
      'every statement cancelled within 2 s of its client going away',
      async () => (await active()) === 0,
      { timeoutMs: 2000, diagnostic: running },
    );
    const cancelledMs = Math.round(performance.now() - goneAt);

    // The connections are free again: with the lock still held, a request on another table answers at once.
    const other = await fetch(`http://127.0.0.1:${port}/api/notes`, {
      signal: AbortSignal.timeout(5000),
    });
    assert.equal(other.status, 200);
    await release();
    released = true;
    assert.equal(
      Number(
        (await server.sql("select count(*) as n from products where name like 'abandoned%'"))
          .rows[0].n,
      ),
      0,
      'an abandoned write was applied',
    );
    assert.equal((await fetch(`http://127.0.0.1:${port}/api/product/${id}`)).status, 200);
    t.diagnostic(
      `4 abandoned statements cancelled ${cancelledMs} ms after their clients went away; the pool served another request at once`,
    );
  });
});
