// One benchmark server per process: `node --import tsx bench/server.ts <scenario>` prints
// "READY <port>" once it listens. Every scenario logs at info level to /dev/null through the same
// pino destination, so the comparison is about the work done, not where it goes.
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import pino from 'pino';
import { pinoHttp } from 'pino-http';
import { addKit, HealthCheckResult, useKit, type IAuditSink, type IKitEndpoint } from '@kit/core';

const scenario = process.argv[2] ?? 'bare';
const destination = pino.destination({ dest: '/dev/null', sync: false });
const logger = pino({ level: 'info' }, destination);

class HelloEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get('', async () => ({ hello: 'world' }));
  }
}

let checkRuns = 0;

// Fastify's own "incoming request" / "request completed" lines are off except in the scenario
// that measures them.
const make = (opts: { disableRequestLogging?: boolean } = {}) =>
  Fastify({ loggerInstance: logger, logController: new LogController({ disableRequestLogging: opts.disableRequestLogging ?? false }) });

async function build(): Promise<ReturnType<typeof make>> {
  switch (scenario) {
    case 'bare': {
      const app = make({ disableRequestLogging: true });
      app.get('/api/hello', async () => ({ hello: 'world' }));
      return app;
    }
    case 'bare-livez': {
      // The denominator of the /livez bar: the same bytes and headers from a bare route.
      const app = make({ disableRequestLogging: true });
      app.get('/livez', (_request, reply) => {
        reply.header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store').send('{"status":"alive"}');
      });
      return app;
    }
    case 'fastify-logging': {
      const app = make();
      app.get('/api/hello', async () => ({ hello: 'world' }));
      return app;
    }
    case 'pino-http': {
      const app = make({ disableRequestLogging: true });
      const httpLogger = pinoHttp({ logger });
      app.addHook('onRequest', (request, reply, done) => {
        httpLogger(request.raw, reply.raw);
        done();
      });
      app.get('/api/hello', async () => ({ hello: 'world' }));
      return app;
    }
    case 'kit':
    case 'kit-audit-sync':
    case 'kit-audit-async':
    case 'kit-audit-sync-noctx':
    case 'kit-audit-capture':
    case 'kit-audit-async-noctx':
    case 'kit-audit-hung-sink':
    case 'kit-health': {
      const app = make({ disableRequestLogging: true });
      addKit(app, [HelloEndpoint], (opt) => {
        opt.openApiPath = false;
        if (scenario === 'kit-audit-sync') opt.configureAuditTrail();
        if (scenario === 'kit-audit-async') opt.configureAuditTrail((a) => { a.asyncWrite = true; });
        // Without the AsyncLocalStorage behind getCorrelationId(), to show what it costs.
        if (scenario === 'kit-audit-capture') opt.configureAuditTrail((a) => { a.successLogLevel = 'debug'; });
        if (scenario === 'kit-audit-sync-noctx') opt.configureAuditTrail((a) => { a.correlationIdContext = false; });
        if (scenario === 'kit-audit-async-noctx') opt.configureAuditTrail((a) => { a.asyncWrite = true; a.correlationIdContext = false; });
        if (scenario === 'kit-audit-hung-sink') {
          opt.configureAuditTrail((a) => { a.asyncWrite = true; });
          const hung: IAuditSink = { writeAsync: () => new Promise<void>(() => {}) };
          opt.auditSinkFactory = () => hung;
        }
        if (scenario === 'kit-health') {
          opt.healthChecksConfigure = (hc) =>
            hc
              .addCheck('fast-a', () => HealthCheckResult.healthy())
              .addCheck('fast-b', async () => HealthCheckResult.healthy())
              .addCheck('slow', async () => {
                checkRuns++;
                await new Promise((r) => setTimeout(r, 50));
                return HealthCheckResult.healthy();
              });
        }
      });
      await useKit(app);
      app.get('/bench/stats', async () => ({ checkRuns, audit: app.kit.audit.stats(), memory: process.memoryUsage(), cpu: process.cpuUsage() }));
      return app;
    }
    default:
      throw new Error(`unknown scenario ${scenario}`);
  }
}

const app = await build();
if (!app.hasRoute({ method: 'GET', url: '/bench/stats' })) {
  app.get('/bench/stats', async () => ({ checkRuns, memory: process.memoryUsage(), cpu: process.cpuUsage() }));
}
await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`READY ${(app.server.address() as { port: number }).port}\n`);
process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});
