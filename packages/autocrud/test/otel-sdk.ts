// The OpenTelemetry SDK as a host sets it up, registered before Fastify or `http` is loaded (import
// this module first): sdk-trace-base with an in-memory exporter, the AsyncLocalStorage context
// manager, W3C trace context, the HTTP server instrumentation (the SERVER span, continuing an
// incoming traceparent) and @fastify/otel registered on every Fastify instance created
// (`registerOnInitialization`, so its hooks load after the host's own, as with the Node SDK).
import { createRequire } from 'node:module';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { FastifyOtelInstrumentation } from '@fastify/otel';

export const exporter = new InMemorySpanExporter();
export const provider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(exporter)],
});

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(provider);
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

const http = new HttpInstrumentation();
http.setTracerProvider(provider);
http.enable();
export const fastifyOtel = new FastifyOtelInstrumentation({ registerOnInitialization: true });
fastifyOtel.setTracerProvider(provider);
fastifyOtel.enable();
// The HTTP instrumentation patches `http` when it is next required.
createRequire(import.meta.url)('node:http');
