import { HealthCheckDetailLevel } from '../shared/enums.js';
import { redactForDescription, redactForFull } from '../shared/secrets.js';
import type { CheckOutcome, Evaluation } from './runner.js';
import type { HealthStatus } from './result.js';

/**
 * The health report as served (its shape is pinned in docs/health.md). Keys appear in this order in the JSON.
 *
 * @example
 * ```json
 * { "status": "degraded",
 *   "checks": { "db": { "status": "healthy" }, "disk": { "status": "degraded" } },
 *   "uptime": "27:03:04", "version": "1.4.2" }
 * ```
 */
export interface HealthReport {
  readonly status: HealthStatus;
  readonly checks: Readonly<Record<string, HealthReportEntry>>;
  /** `hh:mm:ss` since process start; hours are not wrapped past 24. */
  readonly uptime: string;
  readonly version: string;
}

/**
 * One entry of `HealthReport.checks`. Which fields are present depends on the detail level:
 * `StatusOnly` gives `status`; `Description` adds `description` (when the check gave one);
 * `Full` adds `data` and `exception` (each `null` when absent). The `shutdown` entry carries
 * `message` instead of `description`.
 *
 * @example
 * ```json
 * { "status": "unhealthy", "description": "Timed out after 2000 ms", "data": null,
 *   "exception": "Health check 'db' timed out after 2000 ms" }
 * ```
 */
export interface HealthReportEntry {
  readonly status: HealthStatus;
  readonly description?: string;
  readonly data?: Readonly<Record<string, unknown>> | null;
  readonly exception?: string | null;
  readonly message?: string;
}

/** Text of the `startup` gate entry while `useKit` runs. */
const STARTUP_PENDING = 'Start-up is not complete';
/** Text of the `startup` gate entry after `useKit` failed: the gate stays closed, the cause is in the logs. */
const STARTUP_FAILED = 'Start-up is not complete: it failed (see the logs)';
/** Text of the `shutdown` entry. */
const SHUTTING_DOWN = 'Server is shutting down';

// Bounds the size of a report and the work of scrubbing (the patterns are linear-ish, not free).
const MAX_TEXT = 1024;

function cap(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
}

/** `healthy` and `degraded` answer 200, `unhealthy` 503 (docs/health.md). */
export function statusCodeOf(status: HealthStatus): 200 | 503 {
  return status === 'unhealthy' ? 503 : 200;
}

// Data is arbitrary host values: strings are scrubbed, and what JSON cannot carry (BigInt,
// cycles) turns the field into null rather than failing the probe with a 500.
function safeData(
  data: Readonly<Record<string, unknown>> | undefined,
): Record<string, unknown> | null {
  if (data === undefined) return null;
  try {
    const json = JSON.stringify(data, (_key, value: unknown) =>
      typeof value === 'string' ? redactForFull(cap(value)) : value,
    );
    const parsed: unknown = json === undefined ? null : JSON.parse(json);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function entryOf(c: CheckOutcome, level: HealthCheckDetailLevel): HealthReportEntry {
  if (level === HealthCheckDetailLevel.StatusOnly) return { status: c.status };
  if (level === HealthCheckDetailLevel.Description) {
    return c.description === undefined
      ? { status: c.status }
      : { status: c.status, description: redactForDescription(cap(c.description)) };
  }
  return {
    status: c.status,
    ...(c.description === undefined ? {} : { description: redactForFull(cap(c.description)) }),
    data: safeData(c.data),
    exception: c.exception === undefined ? null : redactForFull(cap(String(c.exception.message))),
  };
}

/**
 * Writes the `checks` object of an evaluation at a detail level, once per evaluation: the
 * requests that shared the evaluation share the text too.
 */
function checksJson(evaluation: Evaluation, level: HealthCheckDetailLevel): string {
  let json = evaluation.rendered.get(level);
  if (json === undefined) {
    const checks: Record<string, HealthReportEntry> = {};
    for (const c of evaluation.checks) checks[c.name] = entryOf(c, level);
    json = JSON.stringify(checks);
    evaluation.rendered.set(level, json);
  }
  return json;
}

/**
 * Serialises reports. The fixed parts (version, the gate and shutdown entries) are written once;
 * per request only the uptime changes.
 */
export class ReportWriter {
  readonly #tail: string;
  readonly #startupPending: string;
  readonly #startupFailed: string;
  readonly #shuttingDown: string;

  constructor(
    readonly level: HealthCheckDetailLevel,
    version: string,
    private readonly uptime: () => string,
  ) {
    this.#tail = `","version":${JSON.stringify(version)}}`;
    const gate = (name: string, entry: HealthReportEntry): string =>
      `{"status":"unhealthy","checks":${JSON.stringify({ [name]: entry })},"uptime":"`;
    this.#startupPending = gate('startup', { status: 'unhealthy', description: STARTUP_PENDING });
    this.#startupFailed = gate('startup', { status: 'unhealthy', description: STARTUP_FAILED });
    this.#shuttingDown = gate('shutdown', { status: 'unhealthy', message: SHUTTING_DOWN });
  }

  /** The report of an evaluation. */
  evaluation(evaluation: Evaluation): string {
    return `{"status":"${evaluation.status}","checks":${checksJson(evaluation, this.level)},"uptime":"${this.uptime()}${this.#tail}`;
  }

  /** The closed-gate report while `useKit` runs, or after it failed. */
  startup(failed: boolean): string {
    return `${failed ? this.#startupFailed : this.#startupPending}${this.uptime()}${this.#tail}`;
  }

  /** The report once shutdown has begun. */
  shutdown(): string {
    return `${this.#shuttingDown}${this.uptime()}${this.#tail}`;
  }
}
