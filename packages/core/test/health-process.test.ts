// @test-lines: every - health probes: sockets, signals and shutdown on this line
// The whole lifecycle of a real host process over real HTTP: start-up gate during a 2 s warm-up,
// ready, SIGTERM with a request in flight, the shutdown delay, the drain, exit 0. The observed
// timings are printed (t.diagnostic) for the record.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test, type TestContext } from 'node:test';
import { startProcess, type ProcessHost } from '@kit/test-support/processes';
import { get, json, sleep, type HttpAnswer } from './support/http.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/health-host/', import.meta.url));
const WARMUP_MS = 2000;
const SHUTDOWN_DELAY_MS = 1500;
const SLOW_MS = 2500;

type Host = ProcessHost;

/** The fixture host in production mode, ready once it logs that it listens. */
function startHost(env: Record<string, string>): Promise<Host> {
  return startProcess(
    path.join(FIXTURE, 'host.ts'),
    { NODE_ENV: 'production', ...env },
    {
      cwd: FIXTURE,
      startMs: 20_000,
      ready: (line) =>
        line.includes('"kitHost":"listening"') ? (JSON.parse(line) as { port: number }) : undefined,
    },
  );
}

// Stops a host a failed assertion left running, so the test process can end.
function cleanup(t: TestContext, host: Host): void {
  t.after(() => {
    if (host.child.exitCode === null && host.child.signalCode === null) host.child.kill('SIGKILL');
  });
}

const ms = (from: number, to: number) => `${Math.round(to - from)} ms`;

await test('real process: start-up gate, ready, SIGTERM with a request in flight, delay, drain, exit 0', async (t) => {
  const host = await startHost({
    WARMUP_MS: String(WARMUP_MS),
    SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
  });
  cleanup(t, host);
  const { base } = host;
  const timings: Record<string, string> = {
    'spawn -> listening': ms(host.spawnedAt, host.listeningAt),
  };

  // Starting: listening, warm-up running.
  const first = await get(`${base}/healthz`);
  assert.equal(first.status, 503, first.body);
  assert.equal(json(first).status, 'unhealthy');
  assert.deepEqual(json(first).checks, {
    startup: { status: 'unhealthy', description: 'Start-up is not complete' },
  });
  assert.match(String(json(first).uptime), /^00:00:\d\d$/, 'uptime near zero');
  assert.equal((await get(`${base}/livez`)).status, 200, '/livez 200 while starting');
  const startingAt = performance.now();
  timings['listening -> first 503 startup'] = ms(host.listeningAt, startingAt);

  // Ready: poll until the gate opens.
  let ready: HttpAnswer = first;
  let startupAnswers = 1;
  while (ready.status !== 200) {
    await sleep(50);
    ready = await get(`${base}/healthz`);
    if (ready.status === 503) {
      startupAnswers += 1;
      assert.deepEqual(Object.keys(json(ready).checks ?? {}), ['startup']);
    }
    assert.ok(performance.now() - startingAt < WARMUP_MS + 10_000, 'the gate opens');
  }
  const readyAt = performance.now();
  timings['listening -> first 200 healthy (warm-up 2000 ms)'] = ms(host.listeningAt, readyAt);
  timings['503 startup answers seen'] = String(startupAnswers);
  assert.ok(
    readyAt - host.listeningAt >= WARMUP_MS - 200,
    `the gate stayed closed through the warm-up (${ms(host.listeningAt, readyAt)})`,
  );
  assert.deepEqual(json(ready), {
    status: 'healthy',
    checks: { self: { status: 'healthy', description: 'process is serving' } },
    uptime: json(ready).uptime,
    version: '3.2.1-fixture',
  });

  // A slow request in flight, then SIGTERM.
  const slowStarted = performance.now();
  // Settles either way, so a failure elsewhere does not leave an unhandled rejection behind.
  const slow = get(`${base}/slow?ms=${SLOW_MS}`).then(
    (answer) => ({ answer, at: performance.now() }),
    (err: Error) => ({
      answer: { status: 0, headers: {}, body: err.message, ms: 0 } as HttpAnswer,
      at: performance.now(),
    }),
  );
  await sleep(200);
  const sigtermAt = performance.now();
  assert.ok(host.child.kill('SIGTERM'));

  // The signal is delivered asynchronously: wait for readiness to turn, then sample.
  let turned = await get(`${base}/healthz`);
  while (turned.status === 200) {
    assert.ok(performance.now() - sigtermAt < 5000, 'readiness turns 503 after SIGTERM');
    turned = await get(`${base}/healthz`);
  }
  timings['SIGTERM -> first 503 shutdown'] = ms(sigtermAt, performance.now());

  // Shutting down: readiness 503 `shutdown`, liveness and normal routes still served.
  const samples: Array<{ at: number; health: HttpAnswer; live: HttpAnswer; work: HttpAnswer }> = [];
  let firstRefusedAt: number | undefined;
  let refusal: string;
  for (;;) {
    try {
      const [health, live, work] = await Promise.all([
        get(`${base}/healthz`),
        get(`${base}/livez`),
        get(`${base}/work`),
      ]);
      if (live.status !== 200) {
        firstRefusedAt = performance.now();
        refusal = `HTTP ${live.status}`;
        break;
      }
      samples.push({ at: performance.now(), health, live, work });
    } catch (err) {
      firstRefusedAt = performance.now();
      refusal = (err as NodeJS.ErrnoException).code ?? String(err);
      break;
    }
    assert.ok(performance.now() - sigtermAt < SHUTDOWN_DELAY_MS + 10_000, 'the server closes');
    await sleep(100);
  }
  assert.ok(samples.length >= 3, `served through the delay (${samples.length} samples)`);
  for (const s of samples) {
    assert.equal(s.health.status, 503);
    assert.deepEqual(json(s.health).checks, {
      shutdown: { status: 'unhealthy', message: 'Server is shutting down' },
    });
    assert.equal(json(s.health).status, 'unhealthy');
    assert.equal(s.live.status, 200);
    assert.equal(s.work.status, 200);
    assert.deepEqual(json(s.work), { ok: true });
  }
  const lastServed = samples.at(-1)?.at ?? sigtermAt;
  assert.ok(
    lastServed - sigtermAt >= SHUTDOWN_DELAY_MS / 2,
    `requests were still served ${ms(sigtermAt, lastServed)} after SIGTERM`,
  );
  timings['SIGTERM -> last request served in the delay (delay 1500 ms)'] = ms(
    sigtermAt,
    lastServed,
  );
  timings['requests served during the delay (healthz+livez+work rounds)'] = String(samples.length);
  timings['SIGTERM -> new requests refused'] =
    `${ms(sigtermAt, firstRefusedAt ?? sigtermAt)} (${refusal})`;

  // The request in flight completes; then the process exits 0.
  const { answer, at: slowDoneAt } = await slow;
  assert.equal(answer.status, 200, answer.body);
  assert.deepEqual(json(answer), { slow: true, ms: SLOW_MS });
  const exit = await host.exited;
  assert.deepEqual(
    { code: exit.code, signal: exit.signal },
    { code: 0, signal: null },
    host.stdout() + host.stderr(),
  );
  assert.ok(exit.at >= slowDoneAt - 50, 'the process outlived the in-flight request');
  timings['in-flight /slow (2500 ms): sent -> 200'] = ms(slowStarted, slowDoneAt);
  timings['SIGTERM -> in-flight request completed'] = ms(sigtermAt, slowDoneAt);
  timings['SIGTERM -> process exit (code 0)'] = ms(sigtermAt, exit.at);

  const logged = host
    .stdout()
    .split('\n')
    .filter((l) => l.includes('"msg":"Kit:'))
    .map((l) => (JSON.parse(l) as { msg: string }).msg);
  assert.deepEqual(logged.slice(0, 1), [
    'Kit: shutdown started (SIGTERM); readiness answers 503, closing in 1500 ms',
  ]);
  assert.ok(logged.includes('Kit: exiting with 0'), logged.join('\n'));

  for (const [k, v] of Object.entries(timings)) t.diagnostic(`${k}: ${v}`);
});

await test('real process: a second SIGTERM exits at once', async (t) => {
  const host = await startHost({ WARMUP_MS: '0', SHUTDOWN_DELAY_MS: '30000' });
  cleanup(t, host);
  for (let i = 0; (await get(`${host.base}/healthz`)).status !== 200; i += 1) {
    assert.ok(i < 200, 'ready');
    await sleep(50);
  }
  host.child.kill('SIGTERM');
  let health = await get(`${host.base}/healthz`);
  for (let i = 0; health.status !== 503 && i < 100; i += 1)
    health = await get(`${host.base}/healthz`);
  assert.equal(json(health).checks?.shutdown?.status, 'unhealthy');
  const secondAt = performance.now();
  host.child.kill('SIGTERM');
  const exit = await host.exited;
  assert.deepEqual(
    { code: exit.code, signal: exit.signal },
    { code: 143, signal: null },
    'exit code 128 + SIGTERM',
  );
  assert.ok(
    exit.at - secondAt < 5000,
    `exited ${ms(secondAt, exit.at)} after the second signal, not after the 30 s delay`,
  );
  t.diagnostic(`second SIGTERM -> exit (code 143): ${ms(secondAt, exit.at)}`);
});
