// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
// What an entry says beside the spec's fields, so an operator can join it to routes, users and
// traces without the application's logs: the route pattern next to the raw path, when the request started, the authenticated subject, and the W3C trace context,
// from an incoming `traceparent` and from the real OpenTelemetry SDK.
import assert from 'node:assert/strict';
import http from 'node:http';
import { readdir, readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { context, propagation, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, AuditTrailFormat, useKit, type AuditLogEntry } from '@kit/core';
import { AUDIENCE, TestAuthority } from '@kit/test-support/jwt-authority';
import { until } from '@kit/test-support/until';
import {
  auditApp,
  LogCapture,
  portOf,
  RecordingSink,
  settle,
  type LogLine,
} from './audit-helpers.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `/api/orders@2/...`: a versioned endpoint group, routes with parameters written both ways. */
class OrdersV2Endpoint {
  addRoutes(app: FastifyInstance): void {
    app.get<{ Params: { id: string } }>('{id}', async (request) => ({ id: request.params.id }));
    app.get('lines/:lineId/notes', async () => ({ notes: [] as string[] }));
  }
}

/** One audit entry through a recording sink. */
async function entryOf(
  app: FastifyInstance,
  sink: RecordingSink,
  url: string,
  headers: Record<string, string> = {},
): Promise<AuditLogEntry> {
  sink.entries.length = 0;
  await app.inject({ url, headers });
  await until(`the entry of ${url}`, () => sink.entries.length === 1, 2000);
  return sink.entries[0] as AuditLogEntry;
}

describe('the route pattern beside the raw path', () => {
  let app: FastifyInstance;
  const sink = new RecordingSink();
  before(async () => {
    app = Fastify();
    addKit(app, [OrdersV2Endpoint], (opt) => {
      opt.configureAuditTrail();
      opt.auditSinkFactory = () => sink;
    });
    await useKit(app);
  });
  after(() => app.close());

  it('a matched route: `route` is its pattern (`/api/orders@2/:id`), `path` what was asked', async () => {
    const entry = await entryOf(app, sink, '/api/orders@2/42?x=1');
    assert.equal(entry.route, '/api/orders@2/:id');
    assert.equal(entry.path, '/api/orders@2/42');
    assert.equal(
      (await entryOf(app, sink, '/api/orders@2/lines/7/notes')).route,
      '/api/orders@2/lines/:lineId/notes',
    );
  });

  it('%40 reaches the same route, with the same pattern', async () => {
    const entry = await entryOf(app, sink, '/api/orders%402/42');
    assert.equal(entry.route, '/api/orders@2/:id');
    assert.equal(entry.statusCode, 200);
  });

  it('a 404 has no route', async () => {
    const entry = await entryOf(app, sink, '/api/nothing/here');
    assert.equal(entry.statusCode, 404);
    assert.equal(entry.route, undefined);
    assert.ok(!('route' in entry));
  });

  it('the text formats carry it as Route, JsonStyle as route', async () => {
    for (const format of [
      AuditTrailFormat.Default,
      AuditTrailFormat.DotnetLogger,
      AuditTrailFormat.Compact,
      AuditTrailFormat.JsonStyle,
    ]) {
      const logs = new LogCapture();
      const logged = Fastify({ logger: { level: 'info', stream: logs } });
      addKit(logged, [OrdersV2Endpoint], (opt) =>
        opt.configureAuditTrail((a) => {
          a.logFormat = format;
        }),
      );
      await useKit(logged);
      try {
        await logged.inject('/api/orders@2/42');
        await settle();
        const line = logs.audit()[0] as LogLine;
        const route =
          format === AuditTrailFormat.JsonStyle
            ? (JSON.parse(line.msg as string) as { route: string }).route
            : line.Route;
        assert.equal(route, '/api/orders@2/:id', format);
      } finally {
        await logged.close();
      }
    }
  });
});

describe('when the request started', () => {
  it('StartedAt is the request start: earlier than the line by the handler time, in both modes', async () => {
    for (const asyncWrite of [false, true]) {
      const h = await auditApp({
        audit: (a) => {
          a.asyncWrite = asyncWrite;
          a.flushIntervalMs = 300;
        },
      });
      try {
        const sent = Date.now();
        await h.app.inject('/slow?ms=200');
        await until('the entry', () => h.logs.audit().length === 1, 3000);
        const line = h.logs.audit()[0] as LogLine & { time: number; StartedAt: string };
        const started = Date.parse(line.StartedAt);
        assert.ok(
          started >= sent - 5 && started <= sent + 100,
          `started ${started - sent} ms after the request was sent`,
        );
        assert.ok(
          line.time - started >= 190,
          `written ${line.time - started} ms after the start (a 200 ms handler, asyncWrite ${asyncWrite})`,
        );
      } finally {
        await h.app.close();
      }
    }
  });
});

describe('the authenticated subject', () => {
  let authority: TestAuthority;
  let app: FastifyInstance;
  const sink = new RecordingSink();
  const logs = new LogCapture();
  before(async () => {
    authority = await TestAuthority.start();
    app = Fastify({ logger: { level: 'info', stream: logs } });
    addKit(app, [], (opt) => {
      opt.configureJwt(authority.url, [AUDIENCE]);
      opt.configureAuditTrail();
      opt.auditSinkFactory = () => sink;
    });
    app.get('/me', { onRequest: app.kitAuthenticate }, async (request) => ({
      sub: request.user?.sub,
    }));
    app.get('/public', async () => ({ ok: true }));
    await useKit(app);
  });
  after(async () => {
    await app.close();
    await authority.stop();
  });

  it("a request app.kitAuthenticate accepted carries the token's subject", async () => {
    const token = await authority.sign({ claims: { sub: 'user-42' } });
    const entry = await entryOf(app, sink, '/me', { authorization: `Bearer ${token}` });
    assert.equal(entry.statusCode, 200);
    assert.equal(entry.user, 'user-42');
    assert.equal(entry.headers.authorization, '***', 'and the token itself stays redacted');
  });

  it('a refused token, no token, or a public route: no subject', async () => {
    const bad = await entryOf(app, sink, '/me', { authorization: 'Bearer not.a.token' });
    assert.equal(bad.statusCode, 401);
    assert.equal(bad.user, undefined);
    assert.equal((await entryOf(app, sink, '/me')).user, undefined);
    assert.equal((await entryOf(app, sink, '/public')).user, undefined);
  });
});

describe('W3C trace context without OpenTelemetry', () => {
  let h: Awaited<ReturnType<typeof auditApp>>;
  const sink = new RecordingSink();
  before(async () => {
    h = await auditApp({
      kit: (opt) => {
        opt.auditSinkFactory = () => sink;
      },
    });
  });
  after(() => h.app.close());

  it("a valid traceparent: its trace id is logged beside the correlation id, which keeps the spec's rules", async () => {
    const forwarded = await entryOf(h.app, sink, '/hello', {
      traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`,
      'x-correlation-id': 'corr-1',
    });
    assert.equal(forwarded.traceId, TRACE_ID);
    assert.equal(forwarded.correlationId, 'corr-1');
    assert.equal(forwarded.spanId, undefined, "the caller's span is not ours");
    const fresh = await entryOf(h.app, sink, '/hello', {
      traceparent: `00-${TRACE_ID}-${PARENT_ID}-00`,
    });
    assert.equal(fresh.traceId, TRACE_ID);
    assert.match(fresh.correlationId, UUID, 'no X-Correlation-Id: a new UUID, not the trace id');
  });

  it('an invalid traceparent is ignored', async () => {
    for (const value of [
      `00-${'0'.repeat(32)}-${PARENT_ID}-01`,
      `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
      `ff-${TRACE_ID}-${PARENT_ID}-01`,
      `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`,
      `00-${TRACE_ID}-${PARENT_ID}-01-extra`,
      `00-${TRACE_ID}-${PARENT_ID}`,
      'garbage',
    ]) {
      assert.equal(
        (await entryOf(h.app, sink, '/hello', { traceparent: value })).traceId,
        undefined,
        value,
      );
    }
    assert.equal(
      (
        await entryOf(h.app, sink, '/hello', {
          traceparent: `cc-${TRACE_ID}-${PARENT_ID}-01-future`,
        })
      ).traceId,
      TRACE_ID,
      'a later version may add fields',
    );
  });

  it('the Default line carries TraceId', async () => {
    const logged = await auditApp();
    try {
      await logged.app.inject({
        url: '/hello',
        headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
      });
      await settle();
      assert.equal(logged.logs.audit()[0]?.TraceId, TRACE_ID);
      assert.equal(logged.logs.audit()[0]?.SpanId, undefined);
    } finally {
      await logged.app.close();
    }
  });
});

describe('with the OpenTelemetry SDK (sdk-trace-base, AsyncLocalStorage context manager, in-memory exporter)', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('kit-audit-test');
  let app: FastifyInstance;
  const sink = new RecordingSink();

  before(async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    // What HTTP server instrumentation does: a SERVER span per request, continuing an incoming
    // traceparent, active while Node's request handler runs.
    app = Fastify({
      serverFactory: (handler) =>
        http.createServer((req, res) => {
          const parent = propagation.extract(ROOT_CONTEXT, req.headers);
          const span = tracer.startSpan(
            `${req.method} ${req.url}`,
            { kind: SpanKind.SERVER },
            parent,
          );
          res.once('close', () => span.end());
          context.with(trace.setSpan(parent, span), () => handler(req, res));
        }),
    });
    addKit(app, [], (opt) => {
      opt.configureAuditTrail();
      opt.auditSinkFactory = () => sink;
    });
    app.get('/traced', async () => ({ active: trace.getActiveSpan()?.spanContext().spanId }));
    await useKit(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await app.close();
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  async function call(
    headers: Record<string, string> = {},
  ): Promise<{ entry: AuditLogEntry; spanId: string; traceId: string; handlerSaw: string }> {
    sink.entries.length = 0;
    exporter.reset();
    const res = await fetch(`http://127.0.0.1:${portOf(app)}/traced`, { headers });
    const handlerSaw = ((await res.json()) as { active: string }).active;
    await until(
      'the entry and the span',
      () => sink.entries.length === 1 && exporter.getFinishedSpans().length === 1,
      2000,
    );
    const span = exporter.getFinishedSpans()[0];
    assert.ok(span);
    return {
      entry: sink.entries[0] as AuditLogEntry,
      spanId: span.spanContext().spanId,
      traceId: span.spanContext().traceId,
      handlerSaw,
    };
  }

  it("the entry carries the trace and span ids of the request's active span, as exported", async () => {
    const { entry, spanId, traceId, handlerSaw } = await call();
    assert.equal(entry.traceId, traceId);
    assert.equal(entry.spanId, spanId);
    assert.equal(handlerSaw, spanId, 'the same span the handler sees');
    assert.match(entry.correlationId, UUID, 'the correlation id is still its own');
  });

  it('an incoming traceparent: the server span continues that trace, and the entry says so', async () => {
    const { entry, spanId, traceId } = await call({
      traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`,
      'x-correlation-id': 'corr-otel',
    });
    assert.equal(traceId, TRACE_ID);
    assert.equal(entry.traceId, TRACE_ID);
    assert.equal(entry.spanId, spanId);
    assert.notEqual(entry.spanId, PARENT_ID);
    assert.equal(entry.correlationId, 'corr-otel');
  });
});

describe('@opentelemetry/api stays optional', () => {
  it("no source file imports it and @kit/core does not depend on it: Kit reads the API's global registry", async () => {
    const dir = new URL('../src/', import.meta.url);
    const files = (await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.ts'));
    assert.ok(files.length > 20);
    for (const file of files)
      assert.doesNotMatch(
        await readFile(new URL(file, dir), 'utf8'),
        /from '@opentelemetry|import\('@opentelemetry/,
        file,
      );
    const pkg = JSON.parse(
      await readFile(new URL('../package.json', import.meta.url), 'utf8'),
    ) as Record<string, Record<string, string> | undefined>;
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies'])
      assert.equal(pkg[field]?.['@opentelemetry/api'], undefined, field);
  });
});
