// @test-lines: once - heavy: database faults under load, once per CI run
// Database faults under load (heavy: CI runs it once, on one Node line). The service runs in its
// own process on a real PostgreSQL under a steady mix of reads and writes on keep-alive
// connections, while the server's backends are terminated, it is stopped and started, restarted
// fast and crashed (restart -m immediate), three rounds of each. The process must survive every
// one; every answer is 2xx, 4xx, 503 + Retry-After or 504; every acknowledged create is stored;
// the service serves again within 2 s of the server accepting connections; and a terminated
// backend costs at most the request in flight on it. More rounds by hand: test/chaos/run.ts.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { heavy } from '@kit/test-support/heavy';
import { describePostgres, PostgresServer } from '@kit/test-support/postgres';
import { formatReport, runChaos, type ChaosReport } from './chaos/chaos.ts';

const ROUNDS = 3;
const RECOVERY_LIMIT_MS = 2000;

heavy('PostgreSQL chaos under load', () => {
  describePostgres('PostgreSQL faults under load, in a real service process', () => {
    let server: PostgresServer;
    let report: ChaosReport;

    before(async () => {
      // Durable commits: an immediate shutdown is a crash, and an acknowledged write must survive it.
      server = await PostgresServer.start({ durable: true });
      report = await runChaos(server, { rounds: ROUNDS, rps: 300, connections: 8 });
    });
    after(async () => {
      await server?.dispose();
    });

    it('the service never exits, and stops cleanly on SIGTERM afterwards', (t) => {
      t.diagnostic(formatReport(report));
      assert.equal(
        report.exited,
        undefined,
        report.exited
          ? `the service exited (code ${report.exited.code}):\n${report.exited.stderr}`
          : '',
      );
      assert.equal(report.finalExit, 0);
      assert.ok(report.requests > 1000, `only ${report.requests} requests`);
    });

    it('every answer is 2xx, 4xx, 503 with Retry-After, or 504; no error-level log line', () => {
      assert.deepEqual(report.unexpected, {});
      assert.deepEqual(report.errorLines, []);
    });

    it('every acknowledged create is in the database afterwards', () => {
      assert.ok(
        report.acknowledgedCreates > 100,
        `only ${report.acknowledgedCreates} creates acknowledged`,
      );
      assert.deepEqual(report.missing, []);
    });

    it(`serving again within ${RECOVERY_LIMIT_MS} ms of the server accepting connections, every round of every mode`, () => {
      for (const mode of report.modes) {
        assert.equal(mode.rounds.length, ROUNDS, mode.mode);
        for (const round of mode.rounds)
          assert.ok(
            round.recoveryMs !== undefined && round.recoveryMs <= RECOVERY_LIMIT_MS,
            `${mode.mode} round ${round.round}: ${round.recoveryMs} ms`,
          );
      }
    });

    it('terminating backends costs at most the requests in flight on them', () => {
      const terminate = report.modes.find((m) => m.mode === 'terminate');
      assert.ok(terminate);
      const terminated = terminate.rounds.reduce((n, r) => n + (r.terminated ?? 0), 0);
      const failed = Object.entries(terminate.answers)
        .filter(([kind]) => !/^[24]/.test(kind))
        .reduce((n, [, count]) => n + count, 0);
      assert.ok(terminated > 0);
      assert.ok(
        failed <= terminated,
        `${failed} requests failed for ${terminated} terminated backends: ${JSON.stringify(terminate.answers)}`,
      );
    });
  });
});
