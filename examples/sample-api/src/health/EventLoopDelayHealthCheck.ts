import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { HealthCheckResult, type IHealthCheck } from '@kit/core';

/** Thresholds of the sample's health checks, registered in the container as `healthSettings`. */
export interface HealthSettings {
  /** p99 event-loop delay above which the service reports degraded. */
  eventLoopDelayDegradedMs: number;
  /** Directory whose file system is watched (the working directory by default). */
  diskPath: string;
  /** Free space below which the service reports degraded. */
  diskDegradedBelowBytes: number;
  /** Free space below which the service reports unhealthy (stop sending traffic here). */
  diskUnhealthyBelowBytes: number;
}

const NS_PER_MS = 1e6;

/**
 * Degraded when the event loop is lagging: the p99 delay measured since the previous probe is
 * above `eventLoopDelayDegradedMs`. A busy loop still answers, so this never turns unhealthy:
 * restarting a pod because it is slow would only move the load elsewhere.
 */
export class EventLoopDelayHealthCheck implements IHealthCheck {
  readonly #histogram: IntervalHistogram;
  readonly #thresholdMs: number;

  constructor({ healthSettings }: { healthSettings: HealthSettings }) {
    this.#thresholdMs = healthSettings.eventLoopDelayDegradedMs;
    // The sampling timer is unref'd by Node, so it never keeps the process alive.
    this.#histogram = monitorEventLoopDelay({ resolution: 10 });
    this.#histogram.enable();
  }

  checkHealth(): HealthCheckResult {
    const h = this.#histogram;
    const data = {
      p50Ms: round(h.percentile(50) / NS_PER_MS),
      p99Ms: round(h.percentile(99) / NS_PER_MS),
      maxMs: round(h.max / NS_PER_MS),
      samples: h.count,
      thresholdMs: this.#thresholdMs,
    };
    h.reset(); // each probe looks at the window since the previous one
    return data.p99Ms > this.#thresholdMs
      ? HealthCheckResult.degraded(
          `event-loop delay p99 ${data.p99Ms} ms is above ${this.#thresholdMs} ms`,
          undefined,
          data,
        )
      : HealthCheckResult.healthy(`event-loop delay p99 ${data.p99Ms} ms`, data);
  }
}

function round(ms: number): number {
  return Number.isFinite(ms) ? Math.round(ms * 10) / 10 : 0;
}
