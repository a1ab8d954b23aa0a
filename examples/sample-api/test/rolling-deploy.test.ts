// @test-lines: once - heavy: a rolling deploy of processes behind HAProxy, once per CI run
// A rolling deploy behind a real load balancer: three instances of the sample (one PostgreSQL, one
// Redis) behind HAProxy, which health-checks /healthz as a Kubernetes readiness probe does;
// steady keep-alive load (reads and writes) through HAProxy's HTTP and TCP frontends while each
// instance is replaced in turn (SIGTERM, exit, new instance, back in rotation).
//
// With Kit's defaults (shutdownDelayMs 5000 in production) and the readiness probe of
// deploy/kubernetes/deployment.yaml, which docs/health.md recommends (every 1 s, out after 2
// failures: about 2 s to leave rotation), no client sees a failure, every acknowledged write is in
// PostgreSQL, and every answered request is audited exactly once. With the delay shorter than
// the balancer's interval x fall (1000 ms against 1 s x 3), the balancer keeps sending to an
// instance that has stopped listening: failures.
// The figures are printed as diagnostics; docs/health.md ("Rolling deploys") quotes a run.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { heavy } from '@kit/test-support/heavy';
import { PostgresServer, skipPostgres } from '@kit/test-support/postgres';
import { RedisServer, skipRedis } from '@kit/test-support/redis';
import { buildSample } from './fleet/build.ts';
import { skipHaproxy } from '@kit/test-support/haproxy';
import type { InstanceCommand } from './fleet/instance.ts';
import { manifestReadinessProbe } from './fleet/manifests.ts';
import {
  formatReport,
  outOfRotation,
  runRollingDeploy,
  type RollingDeployReport,
} from './fleet/rolling-deploy.ts';

// The balancer checks as the manifest's readiness probe does (periodSeconds 1, failureThreshold 2,
// successThreshold 1, timeoutSeconds 3): the settings the docs recommend for Kit's 5 s default.
const RECOMMENDED = manifestReadinessProbe();
// A few hundred requests per second: enough that every instance serves through its whole
// shutdown, small enough that a machine shared with other work is not starved into timeouts.
const LOAD = { rate: 240, connections: 12, settleMs: 1500 };

const skip = skipPostgres || skipRedis || skipHaproxy;

heavy('rolling deploy behind HAProxy', () => {
  const suite = (name: string, fn: () => void): void => {
    if (skip) it(name, (t) => t.skip(skip));
    else void describe(name, fn);
  };
  suite('rolling deploy of three sample instances behind HAProxy, under load', () => {
    let database: PostgresServer;
    let redis: RedisServer;
    let command: InstanceCommand;

    before(async () => {
      // All settled and each assigned, so that `after` stops the servers even when the build fails.
      const started = await Promise.allSettled([
        PostgresServer.start().then((server) => (database = server)),
        RedisServer.start().then((server) => (redis = server)),
        buildSample().then((built) => (command = built)),
      ]);
      for (const s of started) if (s.status === 'rejected') throw s.reason;
    });
    after(async () => {
      await Promise.all([database?.dispose(), redis?.dispose()]);
    });

    const report = (t: { diagnostic(message: string): void }, r: RollingDeployReport) => {
      for (const line of formatReport(r)) t.diagnostic(line);
    };

    it("Kit's defaults and the recommended checks: no failed request, every write stored, every request audited exactly once", async (t) => {
      // The rule the docs give: out of rotation (interval x fall) with room to spare before the delay ends.
      assert.ok(RECOMMENDED.intervalMs * RECOMMENDED.fall + 2000 <= 5000);
      const r = await runRollingDeploy({
        databaseUrl: database.url,
        redisUrl: redis.url,
        probe: RECOMMENDED,
        command,
        ...LOAD,
      });
      report(t, r);
      assert.equal(r.failures, 0, r.counts.samples.join('\n'));
      assert.equal(r.answeredByBalancer, 0);
      assert.ok(r.counts.sent > 3000, `steady load throughout (${r.counts.sent} requests)`);
      assert.ok(r.counts.writes > 1000);
      assert.equal(r.missingWrites, 0, 'every acknowledged write is in PostgreSQL');
      assert.equal(r.audit.missing, 0, 'every completed request has an audit entry');
      assert.equal(r.audit.duplicated, 0, 'no request has two');
      assert.equal(r.audit.entries, r.completed);
      assert.equal(r.instances.length, 6);
      for (const i of r.instances) {
        assert.equal(i.exitCode, 0, i.name);
        assert.ok(i.auditEntries > 0, `${i.name} served requests`);
      }
      // Each replaced instance left rotation on both frontends while it was still serving.
      for (const i of r.instances.filter((x) => x.name.endsWith('.0'))) {
        for (const f of ['http', 'tcp'] as const)
          assert.ok(
            (i.signalToOutOfRotation[f] ?? Infinity) < 5000,
            `${i.name} ${f}: ${outOfRotation(i.signalToOutOfRotation[f])}`,
          );
      }
    });

    it('a shutdown delay shorter than the interval x fall (1000 ms against 1 s x 3): the balancer sends requests to a closed instance, and they fail', async (t) => {
      const r = await runRollingDeploy({
        databaseUrl: database.url,
        redisUrl: redis.url,
        probe: { ...RECOMMENDED, fall: 3 },
        shutdownDelayMs: 1000,
        command,
        ...LOAD,
      });
      report(t, r);
      assert.ok(r.failures > 0, 'requests failed');
      assert.ok(
        r.answeredByBalancer + r.counts.reset + r.counts.refused > 0,
        'at the balancer: its 503, or a connection it could not complete',
      );
      // What did complete is still stored and audited once: the loss is at the balancer, not in Kit.
      assert.equal(r.missingWrites, 0);
      assert.equal(r.audit.missing, 0);
      assert.equal(r.audit.duplicated, 0);
      // The balancer still had each replaced instance in rotation when its delay ended: it took it
      // out later, or never (its checks failed fewer than `fall` times in a row before the
      // replacement passed one, so it sent requests into the gap throughout).
      for (const i of r.instances.filter((x) => x.name.endsWith('.0'))) {
        for (const f of ['http', 'tcp'] as const) {
          const out = i.signalToOutOfRotation[f];
          assert.ok(
            out === null || (out !== undefined && out > 1000),
            `${i.name} ${f} in rotation after its delay: ${outOfRotation(out)}`,
          );
        }
      }
    });
  });
});
