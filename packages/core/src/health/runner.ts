import type { FastifyBaseLogger } from 'fastify';
import { coreErrors, KitError } from '../shared/errors.js';
import { buildService, type KitServices, type ServiceClass } from '../shared/services.js';
import type { HealthChecksBuilder, HealthCheckRegistration } from './builder.js';
import { redactError, redactForFull } from '../shared/secrets.js';
import type { HealthCheckContext, HealthStatus, IHealthCheck } from './result.js';

/** One check's outcome, normalised: whatever the check returned or threw becomes this. */
export interface CheckOutcome {
  readonly name: string;
  readonly status: HealthStatus;
  readonly description: string | undefined;
  readonly data: Readonly<Record<string, unknown>> | undefined;
  /** The thrown or attached error; only its message is ever shown, and only at `Full`. */
  readonly exception: Error | undefined;
  /** How long the check ran, in milliseconds (its timeout when it timed out). */
  readonly durationMs: number;
}

/** Called with each check's outcome after every evaluation (the metrics' seam). Must not throw. */
type CheckObserver = (outcome: CheckOutcome) => void;

/** The result of one evaluation, shared by every request that joined it. */
export interface Evaluation {
  readonly status: HealthStatus;
  readonly checks: readonly CheckOutcome[];
  /** Report fragments cached per evaluation by the report writer, keyed by detail level. */
  readonly rendered: Map<string, string>;
}

interface RunnableCheck {
  readonly name: string;
  readonly tags: readonly string[];
  readonly timeoutMs: number;
  readonly check: IHealthCheck;
}

const STATUS_RANK: Record<HealthStatus, number> = { healthy: 0, degraded: 1, unhealthy: 2 };
const STATUSES = new Set<unknown>(['healthy', 'degraded', 'unhealthy']);

/** The worst of the statuses: one unhealthy check makes the report unhealthy, else one degraded degrades it. */
function worstStatus(statuses: Iterable<HealthStatus>): HealthStatus {
  let worst: HealthStatus = 'healthy';
  for (const s of statuses) if (STATUS_RANK[s] > STATUS_RANK[worst]) worst = s;
  return worst;
}

function isCheckClass(
  check: HealthCheckRegistration['check'],
): check is ServiceClass<IHealthCheck> {
  return typeof check === 'function';
}

/**
 * What a check threw, for its description (which may be public): a code identifier such as
 * `TypeError` or `ECONNREFUSED` is safe to show, arbitrary text is not. A thrown string or other
 * non-error value is named by its type.
 */
function errorKind(err: unknown): string {
  if ((typeof err === 'object' && err !== null) || typeof err === 'function') {
    const e = err as { code?: unknown; name?: unknown };
    for (const v of [e.code, e.name])
      if (typeof v === 'string' && /^[A-Za-z_][\w]{0,63}$/.test(v)) return v;
  }
  if (err instanceof Error) return 'Error';
  if (err === null || err === undefined) return `${String(err)} instead of an Error`;
  const type = Array.isArray(err) ? 'array' : typeof err;
  return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type} instead of an Error`;
}

function asError(err: unknown): Error {
  return err instanceof Error
    ? err
    : new Error(typeof err === 'string' ? err : 'Non-error value thrown');
}

// durationMs is filled in by runCheck once the outcome is known.
function outcome(
  name: string,
  status: HealthStatus,
  description: string | undefined,
  exception?: Error,
  data?: Readonly<Record<string, unknown>>,
): CheckOutcome {
  return { name, status, description, exception, data, durationMs: 0 };
}

/** Turns whatever a check returned into an outcome; a malformed result is a failing check, not a 500. */
function normalise(name: string, value: unknown): CheckOutcome {
  const r = value as
    | { status?: unknown; description?: unknown; data?: unknown; exception?: unknown }
    | null
    | undefined;
  if (typeof r !== 'object' || r === null || !STATUSES.has(r.status)) {
    return outcome(
      name,
      'unhealthy',
      'The check returned an invalid result (expected HealthCheckResult.healthy/degraded/unhealthy)',
    );
  }
  return outcome(
    name,
    r.status as HealthStatus,
    typeof r.description === 'string' ? r.description : undefined,
    r.exception === undefined || r.exception === null ? undefined : asError(r.exception),
    typeof r.data === 'object' && r.data !== null ? (r.data as Record<string, unknown>) : undefined,
  );
}

/**
 * Runs one check under its timeout. The timeout does not rely on the check honouring its
 * AbortSignal: the answer is a race, so a check that hangs forever still yields `unhealthy` on
 * time (its promise is left to settle on its own, with its rejection handled).
 */
async function runCheck(entry: RunnableCheck): Promise<CheckOutcome> {
  const started = performance.now();
  const controller = new AbortController();
  const context: HealthCheckContext = {
    name: entry.name,
    tags: entry.tags,
    signal: controller.signal,
  };
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<CheckOutcome>((resolve) => {
    timer = setTimeout(() => {
      const reason = coreErrors.error('KIT_ERR_HEALTH_CHECK_TIMEOUT', {
        name: entry.name,
        timeoutMs: entry.timeoutMs,
      });
      controller.abort(reason);
      resolve(outcome(entry.name, 'unhealthy', `Timed out after ${entry.timeoutMs} ms`, reason));
    }, entry.timeoutMs);
  });
  // Wrapping in an async function turns a synchronous throw into a rejection we handle here.
  const ran = (async () => entry.check.checkHealth(context))().then(
    (value) => normalise(entry.name, value),
    (err: unknown) =>
      outcome(entry.name, 'unhealthy', `The check threw ${errorKind(err)}`, asError(err)),
  );
  try {
    return { ...(await Promise.race([ran, timedOut])), durationMs: performance.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Evaluates the registered checks, concurrently, each under its own timeout. Requests that arrive
 * while an evaluation with the same tag filter is running join it instead of starting another, so
 * a burst of probes (many kubelets, a load balancer's health checker fleet) costs one run of each
 * check. Nothing is cached past the end of an evaluation: every report is at most one check
 * duration old.
 */
export class HealthCheckRunner {
  readonly #checks: readonly RunnableCheck[];
  readonly #inFlight = new Map<string, Promise<Evaluation>>();
  readonly #lastStatus = new Map<string, HealthStatus>();
  readonly #log: FastifyBaseLogger | undefined;
  readonly #observe: CheckObserver | undefined;

  constructor(checks: readonly RunnableCheck[], log?: FastifyBaseLogger, observe?: CheckObserver) {
    this.#checks = checks;
    this.#log = log;
    this.#observe = observe;
  }

  /**
   * Evaluates the checks carrying any of `tags` (all checks when `tags` is empty), joining an
   * evaluation of the same filter that is already running.
   */
  evaluate(tags: readonly string[] = []): Promise<Evaluation> {
    const key =
      tags.length === 0
        ? ''
        : tags.length === 1
          ? (tags[0] as string)
          : [...new Set(tags)].sort().join('\n');
    const running = this.#inFlight.get(key);
    if (running) return running;
    const selected =
      tags.length === 0
        ? this.#checks
        : this.#checks.filter((c) => c.tags.some((t) => tags.includes(t)));
    const evaluation = this.#run(selected).finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, evaluation);
    return evaluation;
  }

  async #run(selected: readonly RunnableCheck[]): Promise<Evaluation> {
    const checks = await Promise.all(selected.map(runCheck));
    for (const c of checks) {
      this.#noteTransition(c);
      // An observer's failure must not turn a probe into a 500.
      try {
        this.#observe?.(c);
      } catch {
        // nothing to do: the report is what matters here
      }
    }
    return { status: worstStatus(checks.map((c) => c.status)), checks, rendered: new Map() };
  }

  // Logs when a check changes status, with its error, so the cause of a 503 is in the logs even
  // when the report is StatusOnly, without writing a line for every probe of a steady state. A
  // check that is not healthy at its first evaluation is logged too, with no `previous`. The texts
  // are scrubbed as the Full report is: logs travel further than the report.
  #noteTransition(c: CheckOutcome): void {
    const before = this.#lastStatus.get(c.name);
    this.#lastStatus.set(c.name, c.status);
    if (!this.#log || before === c.status || (before === undefined && c.status === 'healthy'))
      return;
    const fields = {
      check: c.name,
      status: c.status,
      ...(before === undefined ? {} : { previous: before }),
      ...(c.description === undefined
        ? {}
        : { description: redactForFull(c.description.slice(0, 1024)) }),
      ...(c.exception === undefined ? {} : { err: redactError(c.exception) }),
    };
    if (c.status === 'healthy') this.#log.info(fields, `health check '${c.name}' is healthy again`);
    else
      this.#log.warn(
        fields,
        `health check '${c.name}' is ${c.status}${before === undefined ? ' at its first evaluation' : ''}`,
      );
  }
}

/**
 * Builds every registered check: classes from the service container (constructor dependencies),
 * instances and functions as they are. Runs during `useKit`, so a check whose dependency is not
 * registered fails start-up with `KIT_ERR_DEPENDENCY` naming it, instead of failing every probe.
 * The builder is sealed afterwards: a check added later would never be built.
 */
export function buildHealthChecks(
  builder: HealthChecksBuilder,
  services: KitServices,
  log?: FastifyBaseLogger,
  observe?: CheckObserver,
): HealthCheckRunner {
  const checks: RunnableCheck[] = [];
  for (const r of builder.registrations()) {
    let check: IHealthCheck;
    if (isCheckClass(r.check)) {
      try {
        check = buildService(
          services,
          r.check,
          `health check '${r.name}' (${r.check.name || 'anonymous class'})`,
        );
      } catch (err) {
        if (err instanceof KitError) throw err;
        throw coreErrors.error(
          'KIT_ERR_HEALTH_CHECK',
          { name: r.name, check: r.check.name || 'anonymous class', reason: asError(err).message },
          { cause: err },
        );
      }
    } else {
      check = r.check;
    }
    checks.push({ name: r.name, tags: r.tags, timeoutMs: r.timeoutMs, check });
  }
  builder.seal();
  return new HealthCheckRunner(checks, log, observe);
}
