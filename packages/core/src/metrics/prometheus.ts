import type * as PromClientModule from 'prom-client';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AuditStats } from '../audit/entry.js';
import { coreErrors, KitError } from '../shared/errors.js';
import type { CheckOutcome } from '../health/runner.js';
import type { PrometheusRegistry } from './options.js';

type PromClient = typeof PromClientModule;

/** Loads prom-client, an optional peer dependency: only hosts that turn metrics on need it. */
export async function loadPromClient(): Promise<PromClient> {
  try {
    return await import('prom-client');
  } catch (err) {
    throw coreErrors.error('KIT_ERR_METRICS_UNAVAILABLE', undefined, { cause: err });
  }
}

const STATUSES = ['healthy', 'degraded', 'unhealthy'] as const;
// Probe-sized buckets, up to the 800 ms default check timeout and past it.
const CHECK_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.8, 1, 2.5, 5];

/** The audit counters as the metrics read them, at scrape time. */
export interface AuditSource {
  stats(): AuditStats;
}

/**
 * Defines Kit's metrics in `registry` and returns the observer the health runner calls with each
 * check's outcome. Audit counters are read from `audit.stats()` when scraped (no bookkeeping per
 * request); health metrics follow the evaluations `/healthz` runs.
 */
export function defineKitMetrics(
  prom: PromClient,
  target: PrometheusRegistry,
  prefix: string,
  audit: AuditSource | undefined,
): (outcome: CheckOutcome) => void {
  const registry = target as unknown as Registry;
  const registers = [registry];
  try {
    if (audit) {
      // Counters maintained by the audit writer: each scrape sets them to the writer's value.
      const counter = (name: keyof Omit<AuditStats, 'queueDepth'>, help: string): Counter =>
        new prom.Counter({
          name: `${prefix}audit_entries_${name}_total`,
          help,
          registers,
          collect(this: Counter) {
            this.reset();
            this.inc(audit.stats()[name]);
          },
        });
      counter(
        'enqueued',
        'Audit entries accepted from requests (asynchronous mode: put on the queue).',
      );
      counter('written', 'Audit entries the sink has written.');
      counter(
        'dropped',
        'Audit entries dropped because the queue (4096) was full: the sink is slower than the traffic.',
      );
      counter(
        'failed',
        'Audit entries the sink failed to write (errors, timeouts, abandoned at shutdown).',
      );
      new prom.Gauge({
        name: `${prefix}audit_queue_depth`,
        help: 'Audit entries waiting in the queue (asynchronous mode; capacity 4096).',
        registers,
        collect(this: Gauge) {
          this.set(audit.stats().queueDepth);
        },
      });
    }
    const status: Gauge<'check' | 'status'> = new prom.Gauge({
      name: `${prefix}health_check_status`,
      help: "Each check's status at its last evaluation: 1 for the status it has, 0 for the others.",
      labelNames: ['check', 'status'],
      registers,
    });
    const duration: Histogram<'check'> = new prom.Histogram({
      name: `${prefix}health_check_duration_seconds`,
      help: 'How long each check took (a timed-out check counts its timeout).',
      labelNames: ['check'],
      buckets: CHECK_BUCKETS,
      registers,
    });
    return (outcome) => {
      for (const s of STATUSES)
        status.set({ check: outcome.name, status: s }, s === outcome.status ? 1 : 0);
      duration.observe({ check: outcome.name }, outcome.durationMs / 1000);
    };
  } catch (err) {
    // prom-client refuses a second metric of the same name in one registry (two Kit apps, or a
    // host metric called the same).
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      `Invalid Kit option metrics.prefix = ${JSON.stringify(prefix)}: ${(err as Error).message}. Give each Kit app sharing a registry its own prefix.`,
      { cause: err },
    );
  }
}
