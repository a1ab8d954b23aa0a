// One server of the telemetry cost bench per process: `node --import tsx bench/telemetry-server.ts
// <scenario>` prints "READY <port>". Every scenario serves the same parametric route
// (GET /api/items/:id, a small JSON answer); Kit scenarios run the audit trail asynchronously (a
// fleet service's usual configuration) into pino on /dev/null.
//
//   bare, bare-fastify-metrics, bare-otel          bare Fastify, then with fastify-metrics or tracing
//   kit, kit-metrics, kit-otel, kit-fastify-metrics Kit, then with configureMetrics(), tracing, or fastify-metrics
//   kit-otel-lean                                   Kit with tracing, @fastify/otel's hook spans off (instrumentHooks: false)
//
// Tracing: the OpenTelemetry SDK (sdk-trace-base, a batch processor and an exporter that drops
// what it gets, so the export costs nothing here), the HTTP server instrumentation and
// @fastify/otel, as a host sets them up; every request sampled.
import { createRequire } from 'node:module';
import type { FastifyPluginAsync } from 'fastify';

const scenario = process.argv[2] ?? 'bare';
const tracing = scenario.endsWith('-otel') || scenario.endsWith('-otel-lean');

if (tracing) {
  const { context, propagation, trace } = await import('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = await import('@opentelemetry/core');
  const { HttpInstrumentation } = await import('@opentelemetry/instrumentation-http');
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const { FastifyOtelInstrumentation } = await import('@fastify/otel');
  const dropping = {
    export: (_spans: unknown[], done: (r: { code: number }) => void) => done({ code: 0 }),
    shutdown: async () => undefined,
  };
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const http = new HttpInstrumentation();
  http.setTracerProvider(provider);
  http.enable();
  // `-otel-lean`: @fastify/otel without a span per hook (its instrumentHooks option).
  const fastifyOtel = new FastifyOtelInstrumentation({
    registerOnInitialization: true,
    ...(scenario.endsWith('-lean') ? { instrumentHooks: false } : {}),
  });
  fastifyOtel.setTracerProvider(provider);
  fastifyOtel.enable();
  createRequire(import.meta.url)('node:http');
}

const { default: Fastify } = await import('fastify');
const { default: pino } = await import('pino');
const { addKit, useKit } = await import('@kit/core');

const logger = pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: false }));
const app = Fastify({ loggerInstance: logger, disableRequestLogging: true });

if (scenario.endsWith('fastify-metrics')) {
  // A CommonJS module: under ESM its `default` is module.exports, whose own `default` is the plugin.
  const loaded = (await import('fastify-metrics')).default as unknown as { default?: unknown };
  const fastifyMetrics = (loaded.default ?? loaded) as FastifyPluginAsync<{
    endpoint: string;
    defaultMetrics: { enabled: boolean };
  }>;
  // Its defaults: per-route histogram and summary, process metrics off to match Kit (which has none).
  await app.register(fastifyMetrics, { endpoint: '/metrics', defaultMetrics: { enabled: false } });
}

if (scenario.startsWith('kit')) {
  class ItemsEndpoint {
    addRoutes(group: typeof app) {
      group.get(':id', async (request) => ({
        id: (request.params as { id: string }).id,
        name: 'item',
      }));
    }
  }
  addKit(app, [ItemsEndpoint], (opt) => {
    opt.openApiPath = false;
    opt.configureAuditTrail((a) => void (a.asyncWrite = true));
    if (scenario === 'kit-metrics') opt.configureMetrics();
  });
  await useKit(app);
} else {
  app.get('/api/items/:id', async (request) => ({
    id: (request.params as { id: string }).id,
    name: 'item',
  }));
}

await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`READY ${(app.server.address() as { port: number }).port}`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
