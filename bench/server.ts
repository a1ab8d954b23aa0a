// One benchmark server per process: `node --import tsx bench/server.ts <scenario>` prints
// "READY <port>" once it listens. Every scenario logs at info level to /dev/null through the same
// pino destination, so the comparison is about the work done, not where it goes.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import pino from 'pino';
import { pinoHttp } from 'pino-http';
import {
  addKit,
  DEFAULT_REDACT_HEADERS,
  HealthCheckResult,
  useKit,
  type IAuditSink,
  type IKitEndpoint,
} from '@kit/core';
import { gcStats, startGcStats } from './gc-stats.js';
import { procStats } from './proc-stats.js';

const scenario = process.argv[2] ?? 'bare';
// `real`: the realistic route (POST /api/orders, a 1 KB JSON body in, a 2 KB JSON answer out)
// instead of the hello route.
const realistic = process.argv[3] === 'real';
const destination = pino.destination({ dest: '/dev/null', sync: false });
// The `-pinopath` scenarios give the logger an identity `formatters.log`, which keeps Kit's audit
// lines on pino's own `logger[level](fields, message)` call: what the direct lines save.
const logger = pino(
  {
    level: 'info',
    ...(scenario.endsWith('-pinopath')
      ? { formatters: { log: (o: Record<string, unknown>) => o } }
      : {}),
  },
  destination,
);

/** The realistic route's answer: the order priced line by line, about 2 KB of JSON. */
function priceOrder(body: unknown): unknown {
  const order = body as {
    customerId: string;
    currency: string;
    lines: Array<{ sku: string; name: string; quantity: number; unitPrice: number }>;
  };
  const lines = order.lines.map((l, i) => ({
    ...l,
    line: i + 1,
    total: Math.round(l.quantity * l.unitPrice * 100) / 100,
    taxRate: 0.2,
    status: 'reserved',
    warehouse: 'eu-west-1a',
  }));
  const net = lines.reduce((sum, l) => sum + l.total, 0);
  return {
    id: 'ord_7f3c9a2e',
    customerId: order.customerId,
    currency: order.currency,
    status: 'accepted',
    lines,
    net,
    tax: Math.round(net * 20) / 100,
    createdAt: '2026-11-23T10:00:00.000Z',
    links: { self: '/api/orders/ord_7f3c9a2e', customer: `/api/customers/${order.customerId}` },
  };
}

class HelloEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get('', async () => ({ hello: 'world' }));
  }
}

class OrdersEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.post('', async (request) => priceOrder(request.body));
  }
}

let checkRuns = 0;

// Fastify's own "incoming request" / "request completed" lines are off except in the scenario
// that measures them.
const make = (opts: { disableRequestLogging?: boolean } = {}) =>
  Fastify({
    loggerInstance: logger,
    logController: new LogController({
      disableRequestLogging: opts.disableRequestLogging ?? false,
    }),
  });

/** The route under test on a bare instance: hello, or the realistic one. */
function addRoute(app: ReturnType<typeof make>): void {
  if (realistic) app.post('/api/orders', async (request) => priceOrder(request.body));
  else app.get('/api/hello', async () => ({ hello: 'world' }));
}

/**
 * A hand-written audit on a bare instance: a UUID correlation header on every response, and the
 * line `lineOf` makes for each request pushed to an array, written once per turn of the event loop.
 * `onId` receives each request's id in its first hook.
 */
function handWrittenAudit(
  lineOf: (request: FastifyRequest, reply: FastifyReply) => string,
  onId?: (id: string) => void,
): ReturnType<typeof make> {
  const app = make({ disableRequestLogging: true });
  const pending: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    destination.write(pending.join(''));
    pending.length = 0;
  };
  app.addHook('onRequest', (_request, reply, done) => {
    const id = randomUUID();
    reply.header('x-correlation-id', id);
    onId?.(id);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    pending.push(lineOf(request, reply));
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
    done();
  });
  addRoute(app);
  return app;
}

async function build(): Promise<ReturnType<typeof make>> {
  switch (scenario) {
    case 'bare': {
      const app = make({ disableRequestLogging: true });
      addRoute(app);
      return app;
    }
    case 'hooks-empty': {
      // What any audit built on Fastify's hooks pays before doing anything.
      const app = make({ disableRequestLogging: true });
      app.addHook('onRequest', (_request, _reply, done) => done());
      app.addHook('onResponse', (_request, _reply, done) => done());
      addRoute(app);
      return app;
    }
    case 'uuid-header': {
      const app = make({ disableRequestLogging: true });
      app.addHook('onRequest', (_request, reply, done) => {
        reply.header('x-correlation-id', randomUUID());
        done();
      });
      addRoute(app);
      return app;
    }
    case 'floor':
    case 'floor-context': {
      // The hand-written minimal audit a real implementation should beat, since it does nothing
      // clever: a UUID header, JSON.stringify(request.headers), one Default-format line per
      // request pushed to an array and written once per turn of the event loop. `floor-context`
      // also makes the id readable anywhere in the request, as Kit's getCorrelationId() does by
      // default: an AsyncLocalStorage entered in the first hook.
      const prefix = `{"level":30,"time":`;
      const suffix = `,"pid":${process.pid},"hostname":${JSON.stringify(logger.bindings().hostname ?? '')},"msg":`;
      const context = scenario === 'floor-context' ? new AsyncLocalStorage<string>() : undefined;
      return handWrittenAudit(
        (request, reply) => {
          const message = `HTTP ${request.method} ${request.url} responded ${reply.statusCode} in ${reply.elapsedTime.toFixed(3)}ms [CorrelationId: ${String(reply.getHeader('x-correlation-id'))}] Headers=${JSON.stringify(request.headers)}`;
          return `${prefix}${Date.now()}${suffix}${JSON.stringify(message)}}\n`;
        },
        context && ((id) => context.enterWith(id)),
      );
    }
    case 'floor-fields': {
      // The same hand-written hook writing what Kit's Default line holds: the message template's
      // placeholders as structured fields beside the rendered message, the route pattern and the
      // start time, the spec's default headers redacted. A plain object through JSON.stringify,
      // as one would write it by hand. It separates what the Default format costs from what Kit's
      // implementation of it costs.
      const prefix = `{"level":30,"time":`;
      const suffix = `,"pid":${process.pid},"hostname":${JSON.stringify(logger.bindings().hostname ?? '')}`;
      const redacted = new Set(DEFAULT_REDACT_HEADERS.map((name) => name.toLowerCase()));
      return handWrittenAudit((request, reply) => {
        const headers: Record<string, unknown> = {};
        for (const name in request.headers)
          headers[name] = redacted.has(name) ? '[REDACTED]' : request.headers[name];
        const url = request.url;
        const q = url.indexOf('?');
        const path = q === -1 ? url : url.slice(0, q);
        const query = q === -1 ? '' : url.slice(q);
        const elapsed = Math.round(reply.elapsedTime * 1000) / 1000;
        const id = String(reply.getHeader('x-correlation-id'));
        const headersJson = JSON.stringify(headers);
        const fields = {
          Method: request.method,
          Path: path,
          Query: query,
          StatusCode: reply.statusCode,
          ElapsedMs: elapsed,
          CorrelationId: id,
          Headers: headers,
          StartedAt: new Date(Date.now() - reply.elapsedTime).toISOString(),
          Route: request.routeOptions.url,
          msg: `HTTP ${request.method} ${path}${query} responded ${reply.statusCode} in ${elapsed}ms [CorrelationId: ${id}] Headers=${headersJson}`,
        };
        return `${prefix}${Date.now()}${suffix},${JSON.stringify(fields).slice(1)}\n`;
      });
    }
    case 'bare-livez': {
      // The denominator of the /livez bar: the same bytes and headers from a bare route.
      const app = make({ disableRequestLogging: true });
      app.get('/livez', (_request, reply) => {
        reply
          .header('content-type', 'application/json; charset=utf-8')
          .header('cache-control', 'no-store')
          .send('{"status":"alive"}');
      });
      return app;
    }
    case 'fastify-logging': {
      const app = make();
      addRoute(app);
      return app;
    }
    case 'pino-http': {
      const app = make({ disableRequestLogging: true });
      const httpLogger = pinoHttp({ logger });
      app.addHook('onRequest', (request, reply, done) => {
        httpLogger(request.raw, reply.raw);
        done();
      });
      addRoute(app);
      return app;
    }
    case 'kit':
    case 'kit-audit-sync':
    case 'kit-audit-async':
    case 'kit-audit-sync-pinopath':
    case 'kit-audit-async-pinopath':
    case 'kit-audit-sync-noctx':
    case 'kit-audit-capture':
    case 'kit-audit-async-noctx':
    case 'kit-audit-hung-sink':
    case 'kit-health': {
      const app = make({ disableRequestLogging: true });
      addKit(app, [realistic ? OrdersEndpoint : HelloEndpoint], (opt) => {
        opt.openApiPath = false;
        if (scenario === 'kit-audit-sync' || scenario === 'kit-audit-sync-pinopath')
          opt.configureAuditTrail();
        if (scenario === 'kit-audit-async' || scenario === 'kit-audit-async-pinopath')
          opt.configureAuditTrail((a) => {
            a.asyncWrite = true;
          });
        // Without the AsyncLocalStorage behind getCorrelationId(), to show what it costs.
        if (scenario === 'kit-audit-capture')
          opt.configureAuditTrail((a) => {
            a.successLogLevel = 'debug';
          });
        if (scenario === 'kit-audit-sync-noctx')
          opt.configureAuditTrail((a) => {
            a.correlationIdContext = false;
          });
        if (scenario === 'kit-audit-async-noctx')
          opt.configureAuditTrail((a) => {
            a.asyncWrite = true;
            a.correlationIdContext = false;
          });
        if (scenario === 'kit-audit-hung-sink') {
          opt.configureAuditTrail((a) => {
            a.asyncWrite = true;
          });
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
      app.get('/bench/stats', async (request) => ({
        checkRuns,
        audit: app.kit.audit.stats(),
        memory: process.memoryUsage(),
        cpu: process.cpuUsage(),
        gc: gcStats('collect' in (request.query as object)),
        proc: procStats(),
      }));
      return app;
    }
    default:
      throw new Error(`unknown scenario ${scenario}`);
  }
}

const app = await build();
if (!app.hasRoute({ method: 'GET', url: '/bench/stats' })) {
  app.get('/bench/stats', async (request) => ({
    checkRuns,
    memory: process.memoryUsage(),
    cpu: process.cpuUsage(),
    gc: gcStats('collect' in (request.query as object)),
    proc: procStats(),
  }));
}
startGcStats();
await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`READY ${(app.server.address() as { port: number }).port}\n`);
process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});
