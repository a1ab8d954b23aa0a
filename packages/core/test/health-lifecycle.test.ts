// @test-lines: every - health probes: sockets, signals and shutdown on this line
// The readiness gate and the shutdown state, in-process over real sockets: starting -> ready ->
// shuttingDown, a failed start-up keeping the gate closed, app.kit.shutdown() serving through the
// delay, draining in-flight requests, the drain bound, and no leaked signal listeners.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, HealthCheckResult, useKit, type KitOption } from '@kit/core';
import { until } from '@kit/test-support/until';
import { deferred, get, json, sleep } from './support/http.ts';

function newApp(configure: (opt: KitOption) => void): FastifyInstance {
  const app = Fastify();
  addKit(app, [], (opt) => {
    opt.openApiPath = false;
    opt.healthChecksConfigure = (hc) => hc.addCheck('db', () => HealthCheckResult.healthy());
    configure(opt);
  });
  app.get('/work', async () => ({ ok: true }));
  app.get('/slow', async (request) => {
    await sleep(Number((request.query as { ms?: string }).ms ?? 800));
    return { slow: true };
  });
  return app;
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
}

const STARTUP = { status: 'unhealthy', description: 'Start-up is not complete' };
const SHUTDOWN = { status: 'unhealthy', message: 'Server is shutting down' };

await test('the gate: 503 startup while useKit runs, observable after listen(); 200 once it completes', async () => {
  const warmup = deferred();
  const app = newApp((opt) => opt.configureWarmup(() => warmup.promise));
  const ready = useKit(app);
  const base = await listen(app);

  assert.equal(app.kit.state, 'starting');
  for (const url of ['/healthz', '/healthz?tag=ready']) {
    const res = await get(base + url);
    assert.equal(res.status, 503);
    assert.equal(res.headers['cache-control'], 'no-store');
    const body = json(res);
    assert.deepEqual(Object.keys(body), ['status', 'checks', 'uptime', 'version']);
    assert.equal(body.status, 'unhealthy');
    assert.deepEqual(
      body.checks,
      { startup: STARTUP },
      'shown at the default StatusOnly level too',
    );
  }
  assert.equal((await get(`${base}/livez`)).status, 200, '/livez ignores the gate');

  warmup.resolve();
  await ready;
  assert.equal(app.kit.state, 'ready');
  const res = await get(`${base}/healthz`);
  assert.equal(res.status, 200);
  assert.deepEqual(json(res).checks, { db: { status: 'healthy' } });
  await app.close();
});

await test('a failed start-up keeps the gate closed and useKit rejects with the cause', async () => {
  const warmup = deferred();
  const app = newApp((opt) => opt.configureWarmup(() => warmup.promise));
  const ready = useKit(app);
  const base = await listen(app);
  warmup.reject(new Error('cache warm-up failed: redis://:pw@cache:6379'));
  await assert.rejects(ready, /cache warm-up failed/);
  assert.equal(app.kit.state, 'starting');
  const res = await get(`${base}/healthz`);
  assert.equal(res.status, 503);
  assert.deepEqual(json(res).checks, {
    startup: {
      status: 'unhealthy',
      description: 'Start-up is not complete: it failed (see the logs)',
    },
  });
  assert.ok(!res.body.includes('pw@'), 'the cause stays out of the report');
  assert.equal((await get(`${base}/livez`)).status, 200);
  await app.close();
});

await test('app.kit.shutdown(): 503 shutdown at once, requests served through the delay, then closed', async () => {
  const app = newApp((opt) => opt.configureGracefulShutdown((g) => void (g.shutdownDelayMs = 700)));
  await useKit(app);
  const base = await listen(app);
  assert.equal(app.kit.state, 'ready');

  const started = performance.now();
  const done = app.kit.shutdown();
  assert.equal(app.kit.shutdown(), done, 'a second call joins the first');
  assert.equal(app.kit.state, 'shuttingDown');

  const health = await get(`${base}/healthz`);
  assert.equal(health.status, 503);
  assert.equal(json(health).status, 'unhealthy');
  assert.deepEqual(json(health).checks, { shutdown: SHUTDOWN });
  assert.equal((await get(`${base}/healthz?tag=ready`)).status, 503);
  assert.equal((await get(`${base}/livez`)).status, 200, '/livez answers until the server closes');
  assert.equal(
    (await get(`${base}/work`)).status,
    200,
    'normal routes are served during the delay',
  );

  await done;
  assert.ok(performance.now() - started >= 650, 'close waited for the delay');
  await assert.rejects(get(`${base}/livez`), /ECONNREFUSED/);
  assert.equal(app.kit.state, 'shuttingDown');
});

await test('keep-alive connections are served through the delay; once the drain begins each next response says Connection: close', async () => {
  const app = newApp((opt) => opt.configureGracefulShutdown((g) => void (g.shutdownDelayMs = 300)));
  await useKit(app);
  const base = await listen(app);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<unknown>();
  app.server.on('connection', (socket) => sockets.add(socket));
  assert.equal((await get(`${base}/work`, agent)).status, 200);
  const done = app.kit.shutdown();
  const during = await get(`${base}/work`, agent);
  assert.equal(during.status, 200);
  assert.equal(
    during.headers.connection,
    'keep-alive',
    'no forced reconnect during the delay: a reconnect could land here again',
  );
  assert.equal(sockets.size, 1, 'the client kept its connection');
  // The drain begins: the server stops listening, the kept-alive connection stays open.
  await until('the server no longer listening', () => !app.server.listening, { intervalMs: 10 });
  const next = await get(`${base}/work`, agent);
  assert.equal(next.status, 200, 'the next request on the open connection is answered, not cut');
  assert.equal(next.headers.connection, 'close');
  assert.equal(sockets.size, 1, 'on the same connection');
  await assert.rejects(
    get(`${base}/work`, agent),
    { code: 'ECONNREFUSED' },
    'the client reconnects, and is refused before sending',
  );
  await done;
  agent.destroy();
});

await test('a request in flight when the drain begins is answered with Connection: close; an idle connection is closed after the grace', async () => {
  const app = newApp((opt) => opt.configureGracefulShutdown((g) => void (g.shutdownDelayMs = 0)));
  await useKit(app);
  const base = await listen(app);
  const busy = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const idle = new http.Agent({ keepAlive: true, maxSockets: 1 });
  assert.equal((await get(`${base}/work`, idle)).status, 200);
  const idleSocket = Object.values(idle.freeSockets)[0]?.[0];
  assert.ok(idleSocket, 'the idle agent holds an open connection');
  const closedIdle = new Promise<void>((resolve) => idleSocket.once('close', () => resolve()));
  const inFlight = get(`${base}/slow?ms=300`, busy);
  await sleep(50);
  await app.kit.shutdown();
  const res = await inFlight;
  assert.equal(res.status, 200);
  assert.equal(res.headers.connection, 'close');
  await closedIdle;
  busy.destroy();
  idle.destroy();
});

await test("before the drain, Kit puts no listener on a connection: it has the listeners of a bare Fastify's", async () => {
  // A once('close') on every connection made V8 allocate EventEmitter's listener arrays in the old
  // generation after a burst of connections, and each request's garbage then outlived the
  // scavenges (docs/decisions.md, "Connection tracking and V8's pretenuring").
  const listenersOf = async (app: FastifyInstance): Promise<Record<string, number>> => {
    const sockets: Socket[] = [];
    app.server.on('connection', (socket: Socket) => sockets.push(socket));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const base = await listen(app);
      assert.equal((await get(`${base}/work`, agent)).status, 200);
      assert.equal((await get(`${base}/work`, agent)).status, 200);
      assert.equal(sockets.length, 1, 'one keep-alive connection');
      const socket = sockets[0] as Socket;
      return Object.fromEntries(
        socket.eventNames().map((name) => [String(name), socket.listenerCount(name)]),
      );
    } finally {
      agent.destroy();
      await app.close();
    }
  };
  const bare = Fastify();
  bare.get('/work', async () => ({ ok: true }));
  const kit = newApp((opt) => {
    opt.configureGracefulShutdown((g) => void (g.shutdownDelayMs = 0));
    opt.configureAuditTrail();
  });
  await useKit(kit);
  assert.deepEqual(await listenersOf(kit), await listenersOf(bare));
});

await test('connections closed before the shutdown (more than the sweep keeps) do not hold up the drain', async () => {
  const app = newApp((opt) => opt.configureGracefulShutdown((g) => void (g.shutdownDelayMs = 0)));
  await useKit(app);
  const base = await listen(app);
  // 150 connections of one request each, closed by the client's Connection: close.
  for (let i = 0; i < 150; i += 10)
    await Promise.all(
      Array.from({ length: 10 }, async () => assert.equal((await get(`${base}/work`)).status, 200)),
    );
  const idle = new http.Agent({ keepAlive: true, maxSockets: 1 });
  assert.equal((await get(`${base}/work`, idle)).status, 200);
  const idleSocket = Object.values(idle.freeSockets)[0]?.[0];
  assert.ok(idleSocket);
  const closedIdle = new Promise<void>((resolve) => idleSocket.once('close', () => resolve()));
  const started = performance.now();
  await app.kit.shutdown();
  const took = performance.now() - started;
  await closedIdle;
  // The idle connection waits out the grace (500 ms); the closed ones are not waited for.
  assert.ok(took < 500 + 1500, `the drain took ${took.toFixed(0)} ms`);
  idle.destroy();
});

await test('connections opening and closing while the drain begins: every request the server received is answered, and the drain ends (5 rounds)', async () => {
  for (let round = 0; round < 5; round++) {
    const app = newApp((opt) => opt.configureGracefulShutdown((g) => void (g.shutdownDelayMs = 0)));
    let received = 0;
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.url === '/work') received++;
      done();
    });
    await useKit(app);
    const base = await listen(app);
    const outcomes = { answered: 0, refused: 0, other: [] as string[] };
    let stop = false;
    // Ten clients, each a new connection per request (Connection: close), until the server refuses.
    const clients = Array.from({ length: 10 }, async () => {
      while (!stop) {
        try {
          assert.equal((await get(`${base}/work`)).status, 200);
          outcomes.answered++;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ECONNREFUSED') {
            outcomes.refused++;
            return;
          }
          outcomes.other.push(String((err as NodeJS.ErrnoException).code ?? err));
          return;
        }
      }
    });
    await until('the clients under way', () => outcomes.answered >= 100 + round * 20, {
      timeoutMs: 30_000,
      intervalMs: 5,
    });
    const started = performance.now();
    await app.kit.shutdown();
    const took = performance.now() - started;
    stop = true;
    await Promise.all(clients);
    // A connection still in the listen backlog when the server stops listening is reset by the
    // kernel (docs/decisions.md, "The listen backlog"); no request on it reached the server.
    assert.deepEqual(
      outcomes.other.filter((code) => code !== 'ECONNRESET'),
      [],
      `round ${round}: only refusals and backlog resets`,
    );
    assert.equal(
      outcomes.answered,
      received,
      `round ${round}: every request the server received was answered (${outcomes.refused} refused, ${outcomes.other.length} reset)`,
    );
    assert.ok(took < 500 + 1500, `round ${round}: the drain took ${took.toFixed(0)} ms`);
  }
});

await test('shutdown drains an in-flight request and runs the onClose hooks before resolving', async () => {
  const app = newApp((opt) => opt.configureGracefulShutdown((g) => void (g.shutdownDelayMs = 100)));
  let onCloseRan = false;
  app.addHook('onClose', async () => {
    await sleep(50); // e.g. the audit trail flushing its queue
    onCloseRan = true;
  });
  await useKit(app);
  const base = await listen(app);
  const inFlight = get(`${base}/slow?ms=800`);
  await sleep(50);
  await app.kit.shutdown();
  const res = await inFlight;
  assert.equal(res.status, 200);
  assert.deepEqual(json(res), { slow: true });
  assert.ok(onCloseRan, 'onClose hooks completed before shutdown() resolved');
});

await test('the drain is bounded by drainTimeoutMs', async () => {
  const app = newApp((opt) =>
    opt.configureGracefulShutdown((g) => {
      g.shutdownDelayMs = 0;
      g.drainTimeoutMs = 300;
    }),
  );
  await useKit(app);
  const base = await listen(app);
  const inFlight = get(`${base}/slow?ms=5000`).then(
    () => 'answered',
    (err: Error) => err.message,
  );
  await sleep(50);
  const started = performance.now();
  await assert.rejects(app.kit.shutdown(), { code: 'KIT_ERR_DRAIN_TIMEOUT' });
  const took = performance.now() - started;
  assert.ok(took < 300 + 1000 + 1000, `bounded: ${took.toFixed(0)} ms`);
  assert.equal(await inFlight, 'socket hang up', 'the request that overran was cut');
});

await test('a shutdown begun during start-up wins over the gate opening', async () => {
  const warmup = deferred();
  const app = newApp((opt) => {
    opt.configureWarmup(() => warmup.promise);
    opt.configureGracefulShutdown((g) => void (g.shutdownDelayMs = 300));
  });
  const ready = useKit(app);
  const base = await listen(app);
  const done = app.kit.shutdown();
  assert.deepEqual(json(await get(`${base}/healthz`)).checks, { shutdown: SHUTDOWN });
  warmup.resolve();
  await ready;
  assert.equal(app.kit.state, 'shuttingDown');
  assert.deepEqual(json(await get(`${base}/healthz`)).checks, { shutdown: SHUTDOWN });
  await done;
});

await test('app.close() by the host also moves the state to shuttingDown', async () => {
  const app = newApp(() => {});
  await useKit(app);
  await app.close();
  assert.equal(app.kit.state, 'shuttingDown');
});

await test('without configureGracefulShutdown: no signal listeners, and shutdown() closes at once', async () => {
  const before = process.listenerCount('SIGTERM');
  const app = newApp(() => {});
  await useKit(app);
  assert.equal(process.listenerCount('SIGTERM'), before);
  const base = await listen(app);
  const started = performance.now();
  await app.kit.shutdown();
  assert.ok(performance.now() - started < 1000);
  await assert.rejects(get(`${base}/livez`), /ECONNREFUSED/);
});

await test('signal listeners are installed by useKit and removed when the app closes', async () => {
  const count = () => [
    process.listenerCount('SIGTERM'),
    process.listenerCount('SIGINT'),
    process.listenerCount('SIGHUP'),
  ];
  const [term, int, hup] = count() as [number, number, number];
  const a = newApp((opt) => opt.configureGracefulShutdown());
  const b = newApp((opt) => opt.configureGracefulShutdown((g) => void (g.signals = ['SIGHUP'])));
  await useKit(a);
  await useKit(b);
  assert.deepEqual(count(), [term + 1, int + 1, hup + 1]);
  await a.close();
  await b.close();
  assert.deepEqual(count(), [term, int, hup]);
});

await test('the shutdown delay defaults to 5000 ms in production and to 0 elsewhere', async (t) => {
  const saved = process.env.NODE_ENV;
  const cases: Array<[string | undefined, number]> = [
    ['production', 5000],
    ['development', 0],
    ['test', 0],
    [undefined, 0],
  ];
  try {
    for (const [env, expected] of cases) {
      await t.test(`NODE_ENV=${env ?? '(unset)'}: ${expected} ms`, () => {
        if (env === undefined) delete process.env.NODE_ENV;
        else process.env.NODE_ENV = env;
        const kit = addKit(Fastify(), [], (opt) => opt.configureGracefulShutdown());
        assert.equal(kit.options.gracefulShutdown?.shutdownDelayMs, expected);
      });
    }
  } finally {
    if (saved === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = saved;
  }
});
