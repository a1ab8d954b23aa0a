// Drives a rate limit through a failover and counts what happened: how long calls failed, and
// how many requests were admitted in total against the limit (Redis replicates asynchronously,
// so increments the old master acknowledged but had not passed on are lost with it).
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreUnavailableError, type HealthStatus, type RateLimitResult } from '@kit/core';
import { until } from '@kit/test-support/until';

export interface FailoverRun {
  /** Admissions acknowledged before the master was stopped. */
  readonly admittedBeforeKill: number;
  /** Admissions in the whole run. */
  readonly admitted: number;
  /** `admitted - limit`: positive means the limit was exceeded by that many. */
  readonly excess: number;
  /** Units the new master had counted when it first answered, against the admissions acknowledged until then. */
  readonly countedByNewMaster: number;
  readonly acknowledgedBeforeRecovery: number;
  /** Calls that failed (KIT_ERR_STORE_UNAVAILABLE) between the stop and the first success. */
  readonly failedCalls: number;
  /** From the stop to the first call that succeeded again. */
  readonly recoveryMs: number;
  /** From the stop to the first `healthy` report after a non-healthy one. */
  readonly healthyAgainMs: number | undefined;
  /** The distinct statuses the redis check reported after the stop, in order. */
  readonly statuses: readonly HealthStatus[];
  /** Errors other than KIT_ERR_STORE_UNAVAILABLE (a defect if any). */
  readonly otherErrors: readonly string[];
}

export interface FailoverOptions {
  /** One consume of the limited key (a fixed window longer than the run). */
  consume: () => Promise<RateLimitResult>;
  /** Stops the master holding the key (SIGKILL: a crash). */
  kill: () => Promise<void>;
  /** The redis check's status, polled every 50 ms from the stop until it is healthy again. */
  health: () => Promise<HealthStatus>;
  limit: number;
  /** Calls in flight at once. */
  concurrency: number;
  /** How many admissions before the stop. */
  admitBeforeKill: number;
  /** Gives up after this long after the stop. */
  limitMs: number;
}

export async function runFailover(o: FailoverOptions): Promise<FailoverRun> {
  let admitted = 0;
  let killedAt: number | undefined = undefined;
  let recoveredAt: number | undefined;
  let countedByNewMaster = 0;
  let acknowledgedBeforeRecovery = 0;
  let failedCalls = 0;
  let refusedInARow = 0;
  let done = false;
  const otherErrors: string[] = [];
  const statuses: HealthStatus[] = [];
  let healthyAgainAt: number | undefined;

  const worker = async () => {
    while (!done) {
      const sentAfterKill = killedAt !== undefined;
      try {
        const r = await o.consume();
        if (sentAfterKill && recoveredAt === undefined) {
          recoveredAt = performance.now();
          acknowledgedBeforeRecovery = admitted;
          // This call's own unit is counted in `limit - remaining` when it was admitted.
          countedByNewMaster = o.limit - r.remaining - (r.allowed ? 1 : 0);
        }
        if (r.allowed) {
          admitted++;
          refusedInARow = 0;
        } else if (recoveredAt !== undefined && ++refusedInARow >= 50) {
          done = true;
        }
      } catch (err) {
        if (err instanceof StoreUnavailableError) {
          if (killedAt !== undefined && recoveredAt === undefined) failedCalls++;
        } else {
          otherErrors.push(String(err));
        }
        await sleep(5);
      }
      if (killedAt !== undefined && performance.now() - killedAt > o.limitMs) done = true;
    }
  };
  const workers = Array.from({ length: o.concurrency }, worker);
  await until('the admissions before the kill', () => admitted >= o.admitBeforeKill || done, {
    timeoutMs: o.limitMs,
    intervalMs: 1,
  });
  const admittedBeforeKill = admitted;
  killedAt = performance.now();
  await o.kill();
  const watcher = (async () => {
    while (healthyAgainAt === undefined && performance.now() - killedAt! < o.limitMs) {
      const status = await o.health();
      if (statuses.at(-1) !== status) statuses.push(status);
      if (status === 'healthy' && statuses.length > 1) healthyAgainAt = performance.now();
      await sleep(50);
    }
  })();
  await Promise.all([...workers, watcher]);
  return {
    admittedBeforeKill,
    admitted,
    excess: admitted - o.limit,
    countedByNewMaster,
    acknowledgedBeforeRecovery,
    failedCalls,
    recoveryMs:
      recoveredAt === undefined ? Number.POSITIVE_INFINITY : Math.round(recoveredAt - killedAt),
    healthyAgainMs:
      healthyAgainAt === undefined ? undefined : Math.round(healthyAgainAt - killedAt),
    statuses,
    otherErrors,
  };
}

/** One line for the test's diagnostics and the docs. */
export function describeRun(run: FailoverRun, limit: number): string {
  const lost = run.acknowledgedBeforeRecovery - run.countedByNewMaster;
  return (
    `recovered ${run.recoveryMs} ms after the stop (${run.failedCalls} calls failed meanwhile), check healthy again after ${run.healthyAgainMs ?? '-'} ms ` +
    `(statuses ${run.statuses.join(' -> ')}); admitted ${run.admitted} with a limit of ${limit} (${run.excess > 0 ? `${run.excess} over` : `${-run.excess} under`}); ` +
    `the new master had counted ${run.countedByNewMaster} of ${run.acknowledgedBeforeRecovery} acknowledged admissions (${lost} lost with the old master)`
  );
}

/** What a test of a failover checks once the new master serves (see {@link assertRecovered}). */
export interface RecoveryChecks {
  readonly limit: number;
  readonly concurrency: number;
  /** The redis check's status now. */
  readonly health: () => Promise<HealthStatus>;
  /** The messages the app logged at warn or above during the run. */
  readonly warnings: () => string[];
}

/**
 * What every failover must show, whatever the topology: calls succeeded again within 20 s, the
 * check went from a non-healthy status back to healthy, nothing was applied twice, the limit was
 * exceeded by at most the calls in flight at the crash, the check is healthy at the end, and the
 * failover logged a few warnings, not one per failed call.
 */
export async function assertRecovered(
  t: TestContext,
  run: FailoverRun,
  o: RecoveryChecks,
): Promise<void> {
  assert.ok(Number.isFinite(run.recoveryMs), 'calls succeeded again');
  assert.ok(run.recoveryMs < 20_000, `recovered after ${run.recoveryMs} ms`);
  assert.ok(
    run.statuses.length >= 2 && run.statuses[0] !== 'healthy' && run.statuses.at(-1) === 'healthy',
    `check statuses ${run.statuses.join(' -> ')}`,
  );
  // Every admission the new master counted had been acknowledged: nothing was applied twice.
  assert.ok(
    run.countedByNewMaster <= run.acknowledgedBeforeRecovery + o.concurrency,
    describeRun(run, o.limit),
  );
  // Over loopback a reply and its replication leave the master in the same event-loop turn, so
  // at most the calls in flight at the crash can be lost with it: the limit is exceeded by at
  // most that many. (Across a network, whatever the replica had not received yet.)
  assert.ok(
    run.excess <= o.concurrency,
    `admitted ${run.admitted}, ${run.excess} over the limit of ${o.limit}`,
  );
  await until('healthy at the end', async () => (await o.health()) === 'healthy', {
    timeoutMs: 10_000,
    retryErrors: true,
  });
  const warnings = o.warnings();
  t.diagnostic(
    `log lines at warn during the failover: ${warnings.length} (${[...new Set(warnings)].join(' | ')})`,
  );
  assert.ok(
    warnings.length > 0 && warnings.length <= 5,
    `a few warnings, not one per failed call: ${warnings.join('\n')}`,
  );
}
