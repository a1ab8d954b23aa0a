// @test-lines: every - health probes: sockets, signals and shutdown on this line
// The whole lifecycle of a real host process over real HTTP: start-up gate during a 2 s warm-up,
// ready, SIGTERM with a request in flight, the shutdown delay, the drain, exit 0. The observed
// timings are printed (t.diagnostic) for the record.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { until } from '@kit/test-support/until';
import { startHealthHost } from './support/health-host.ts';
import { get, json, sleep, type HttpAnswer } from './support/http.ts';

const WARMUP_MS = 2000;
const SHUTDOWN_DELAY_MS = 1500;
const SLOW_MS = 2500;

const ms = (from: number, to: number) => `${Math.round(to - from)} ms`;

await test('real process: start-up gate, ready, SIGTERM with a request in flight, delay, drain, exit 0', async (t) => {
  const host = await startHealthHost(t, 'host.ts', {
    WARMUP_MS: String(WARMUP_MS),
    SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
  });
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
  let startupAnswers = 1;
  const { value: ready } = await until(
    'the start-up gate open',
    async () => {
      const answer = await get(`${base}/healthz`);
      if (answer.status === 503) {
        startupAnswers += 1;
        assert.deepEqual(Object.keys(json(answer).checks ?? {}), ['startup']);
      }
      return answer.status === 200 && answer;
    },
    { timeoutMs: WARMUP_MS + 10_000, intervalMs: 50 },
  );
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
  await until(
    'readiness 503 after SIGTERM',
    async () => (await get(`${base}/healthz`)).status !== 200,
    { timeoutMs: 5000, intervalMs: 0 },
  );
  timings['SIGTERM -> first 503 shutdown'] = ms(sigtermAt, performance.now());

  // Shutting down: readiness 503 `shutdown`, liveness and normal routes still served.
  const samples: Array<{ at: number; health: HttpAnswer; live: HttpAnswer; work: HttpAnswer }> = [];
  const { value: refusal } = await until(
    'the server closes',
    async () => {
      try {
        const [health, live, work] = await Promise.all([
          get(`${base}/healthz`),
          get(`${base}/livez`),
          get(`${base}/work`),
        ]);
        if (live.status !== 200) return `HTTP ${live.status}`;
        samples.push({ at: performance.now(), health, live, work });
        return undefined;
      } catch (err) {
        return (err as NodeJS.ErrnoException).code ?? String(err);
      }
    },
    { timeoutMs: SHUTDOWN_DELAY_MS + 10_000 - (performance.now() - sigtermAt), intervalMs: 100 },
  );
  const firstRefusedAt = performance.now();
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
  timings['SIGTERM -> new requests refused'] = `${ms(sigtermAt, firstRefusedAt)} (${refusal})`;

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
  const host = await startHealthHost(t, 'host.ts', { WARMUP_MS: '0', SHUTDOWN_DELAY_MS: '30000' });
  await until('ready', async () => (await get(`${host.base}/healthz`)).status === 200, {
    timeoutMs: 10_000,
    intervalMs: 50,
  });
  host.child.kill('SIGTERM');
  const { value: health } = await until(
    'readiness 503 after SIGTERM',
    async () => {
      const answer = await get(`${host.base}/healthz`);
      return answer.status === 503 && answer;
    },
    { timeoutMs: 5000, intervalMs: 0 },
  );
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
