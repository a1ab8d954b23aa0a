// @test-lines: once - the balancer's rotation of in-process instances through Kit's API
// The rolling-deploy test's balancer helper: whether HAProxy has a server in rotation is read from
// its stats socket, not inferred from its log. HAProxy logs a change of state only: a server whose
// checks fail fewer than `fall` times in a row (a replacement back within interval x fall) never
// goes DOWN, so no UP is ever logged for it, and a wait for "UP after the SIGTERM" in the log
// never ends (the rolling-deploy test timed out on it in CI). Real HAProxy, a real HTTP server
// behind it whose /healthz answers as told.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { freePort } from '@kit/test-support/ports';
import { FRONTENDS, Haproxy, skipHaproxy } from '@kit/test-support/haproxy';
import { until } from '@kit/test-support/until';

// Checks every 200 ms, out after 3 failures in a row, back after 1 success.
const PROBE = { intervalMs: 200, fall: 3, rise: 1, timeoutMs: 1000 };

/** An HTTP server whose /healthz answers 503 to the next `failNext` checks, 200 otherwise. */
class Backend {
  failNext = 0;
  checks = 0;
  #server: Server | undefined;
  constructor(readonly port: number) {}

  async listen(): Promise<void> {
    this.#server = createServer((req, res) => {
      let status = 200;
      if (req.url === '/healthz') {
        this.checks += 1;
        if (this.failNext > 0) {
          this.failNext -= 1;
          status = 503;
        }
      }
      res.writeHead(status, { connection: 'close' }).end();
    });
    await new Promise<void>((resolve) => this.#server!.listen(this.port, '127.0.0.1', resolve));
  }

  /** Stops listening: the checks' connections are refused, as when an instance has exited. */
  async close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server) await new Promise((resolve) => server.close(resolve));
  }
}

describe('HAProxy rotation state, read from its stats socket', { skip: skipHaproxy }, () => {
  let backend: Backend;
  let haproxy: Haproxy;
  const origin = performance.now();
  const now = () => Math.round(performance.now() - origin);
  const failedChecks = async () =>
    (await haproxy.state())
      .filter((s) => s.server === 's1')
      .reduce((n, s) => n + s.failedChecks, 0);

  before(async () => {
    backend = new Backend(await freePort());
    await backend.listen();
    haproxy = new Haproxy({
      ports: { http: await freePort(), tcp: await freePort() },
      servers: { s1: backend.port },
      probe: PROBE,
      origin,
    });
    await haproxy.waitInRotation('s1', 10_000);
  });
  after(async () => {
    await haproxy?.stop();
    await backend?.close();
  });

  it('reports each backend of each frontend', async () => {
    const state = await haproxy.state();
    assert.deepEqual(state.map((s) => `${s.frontend}/${s.server}`).sort(), ['http/s1', 'tcp/s1']);
    for (const s of state) {
      assert.equal(s.status, 'UP');
      assert.equal(s.checkStatus, 'L7OK');
    }
  });

  it('a server whose checks failed fewer than `fall` times in a row never left rotation: no change is logged, and it is in rotation once a check passes', async () => {
    const since = now();
    const failedBefore = await failedChecks();
    // Two failures in all, so no frontend sees three in a row, whichever checks they are.
    backend.failNext = PROBE.fall - 1;
    await until(
      'both 503s counted as failed checks',
      async () => (await failedChecks()) === failedBefore + PROBE.fall - 1,
      10_000,
    );
    const at = await haproxy.waitInRotation('s1', 10_000);
    assert.ok(at >= since);
    // What a wait on the log would have waited for never comes: HAProxy logged nothing at all.
    assert.deepEqual(
      haproxy.changes.filter((c) => c.at >= since).map((c) => c.line),
      [],
    );
    for (const s of await haproxy.state())
      assert.equal(s.status, 'UP', `${s.frontend}: ${s.status}`);
  });

  it('a server that went DOWN is not in rotation until a check of its replacement passes', async () => {
    const since = now();
    await backend.close();
    await until(
      'DOWN on both frontends',
      () =>
        FRONTENDS.every((f) =>
          haproxy.changes.some((c) => c.frontend === f && !c.up && c.at >= since),
        ),
      10_000,
    );
    for (const s of await haproxy.state())
      assert.equal(s.status, 'DOWN', `${s.frontend}: ${s.status}`);
    // Still down: the wait does not end.
    await assert.rejects(
      haproxy.waitInRotation('s1', PROBE.intervalMs * 3),
      /did not have s1 in rotation on every frontend within 600 ms/,
    );

    // The replacement, on the same address; its first check fails (starting), the next passes.
    backend.failNext = 1;
    await backend.listen();
    await haproxy.waitInRotation('s1', 10_000);
    for (const s of await haproxy.state())
      assert.equal(s.status, 'UP', `${s.frontend}: ${s.status}`);
    await until(
      'UP logged on both frontends',
      () =>
        FRONTENDS.every((f) =>
          haproxy.changes.some((c) => c.frontend === f && c.up && c.at >= since),
        ),
      5000,
    );
  });
});
