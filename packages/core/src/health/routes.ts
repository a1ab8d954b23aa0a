import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hostPackage } from '../shared/host-package.js';
import { ReportWriter, statusCodeOf } from './report.js';
import { LIVENESS_PATH } from './constants.js';
import type { HealthCheckRunner } from './runner.js';
import type { HealthState } from './state.js';
import { formatUptime, processUptimeClock } from './uptime.js';

const JSON_TYPE = 'application/json; charset=utf-8';
// The liveness answer never changes: written once, sent as a string so Fastify skips serialisation.
const ALIVE = '{"status":"alive"}';
// At most this many `tag` values are honoured; a probe URL needs one or two.
const MAX_TAGS = 16;

/** What `useKit` hands the routes once the checks are built. */
interface HealthEndpoints {
  /** Installs the built checks; the readiness report uses them once the gate opens. */
  useRunner(runner: HealthCheckRunner): void;
}

function tagsOf(request: FastifyRequest): readonly string[] {
  const raw = (request.query as { tag?: unknown } | undefined)?.tag;
  if (raw === undefined) return [];
  const list = Array.isArray(raw) ? raw.slice(0, MAX_TAGS) : [raw];
  return list.filter((t): t is string => typeof t === 'string' && t !== '');
}

/**
 * Maps `GET {healthCheckPath}` (readiness report) and `GET /livez` (liveness) at the root, unless
 * `enableHealthChecks` is false. Called by `useKit` before its first `await`, so the routes exist
 * when a host listens before start-up completes and the closed gate is observable.
 *
 * Both routes are left out of the OpenAPI document: they are infrastructure endpoints for
 * orchestrators and load balancers, not part of the service's API.
 */
export function registerHealthRoutes(app: FastifyInstance, kit: HealthState): HealthEndpoints {
  const { options } = kit;
  let runner: HealthCheckRunner | undefined;
  const endpoints: HealthEndpoints = {
    useRunner(r) {
      runner = r;
    },
  };
  if (!options.enableHealthChecks) return endpoints;

  const clock = options.uptimeClock ?? processUptimeClock;
  const version = options.applicationVersion ?? hostPackage().version ?? 'unknown';
  const writer = new ReportWriter(options.healthCheckDetailLevel, version, () =>
    formatUptime(clock()),
  );

  const send = (reply: FastifyReply, code: number, body: string): FastifyReply =>
    reply
      .code(code)
      .header('content-type', JSON_TYPE)
      .header('cache-control', 'no-store')
      .send(body);

  app.get(
    options.healthCheckPath,
    { schema: { hide: true } },
    async function kitHealthReport(request, reply) {
      // Shutdown wins over everything: the instance is leaving, whatever its checks say.
      if (kit.state === 'shuttingDown') return send(reply, 503, writer.shutdown());
      if (kit.state !== 'ready' || runner === undefined)
        return send(reply, 503, writer.startup(kit.startupError !== undefined));
      const evaluation = await runner.evaluate(tagsOf(request));
      // A shutdown that began while the checks ran must not be answered with 200.
      if ((kit.state as string) === 'shuttingDown') return send(reply, 503, writer.shutdown());
      return send(reply, statusCodeOf(evaluation.status), writer.evaluation(evaluation));
    },
  );

  // The hot path: no state, no checks, no allocation beyond what Fastify itself does.
  app.get(LIVENESS_PATH, { schema: { hide: true } }, function kitLiveness(_request, reply) {
    reply.header('content-type', JSON_TYPE).header('cache-control', 'no-store').send(ALIVE);
  });

  return endpoints;
}
