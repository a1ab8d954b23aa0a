// @test-lines: every - async context: spans carried by the tracing context
// Traces of an AutoCrud service with the real OpenTelemetry SDK (sdk-trace-base, in-memory
// exporter), the HTTP server instrumentation and @fastify/otel, over real sockets and a real
// PostgreSQL: each request has its server span (continuing an incoming traceparent), each
// statement AutoCrud runs is a CLIENT span under it named by operation and table (never values),
// and the audit entry carries the trace id and the id of the request's span.
import './otel-sdk.ts';
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit, type AuditLogEntry, type IAuditSink } from '@kit/core';
import { addKitAutoCrud, AutoCrud, CrudOperations, defineEntity } from '@kit/autocrud';
import { describePostgres, PostgresServer } from '@kit/test-support/postgres';
import { until } from '@kit/test-support/until';
import { exporter, provider } from './otel-sdk.ts';

const Gadget = defineEntity({
  name: 'Gadget',
  table: 'gadgets',
  schema: Type.Object({
    id: Type.Integer(),
    name: Type.String(),
    secret: Type.String(),
    version: Type.Integer(),
  }),
  writable: ['name', 'secret'],
  version: 'version',
});
@AutoCrud(Gadget, { operations: CrudOperations.All })
class GadgetsEndpoint {}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const SERVER = 1;
const CLIENT = 2;

class MemorySink implements IAuditSink {
  readonly entries: AuditLogEntry[] = [];
  async writeAsync(entry: AuditLogEntry): Promise<void> {
    this.entries.push(entry);
  }
}

const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;

describePostgres('traces: HTTP server span, @fastify/otel, AutoCrud statements, audit ids', () => {
  let database: PostgresServer;
  let app: FastifyInstance;
  let base: string;
  const sink = new MemorySink();

  before(async () => {
    database = await PostgresServer.start();
    app = Fastify();
    addKit(app, [GadgetsEndpoint], (opt) => {
      opt.configureAuditTrail();
      opt.auditSinkFactory = () => sink;
    });
    addKitAutoCrud(app, database.url, { createTables: true });
    await useKit(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  });
  after(async () => {
    await app?.close();
    await provider.shutdown();
    await database?.dispose();
  });

  /** One request; resolves with its answer, its audit entry and the spans of its trace. */
  async function call(
    method: string,
    path: string,
    init: { body?: unknown; headers?: Record<string, string> } = {},
  ) {
    sink.entries.length = 0;
    exporter.reset();
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    await until(
      'the entry and the spans',
      () =>
        sink.entries.length === 1 &&
        exporter
          .getFinishedSpans()
          .some(
            (s) =>
              s.kind === SERVER &&
              (parentOf(s) !== undefined) === 'traceparent' in (init.headers ?? {}),
          ),
    );
    const entry = sink.entries[0]!;
    const spans = exporter
      .getFinishedSpans()
      .filter((s) => s.spanContext().traceId === entry.traceId);
    const server = spans.find(
      (s) =>
        s.kind === SERVER && s.instrumentationScope.name === '@opentelemetry/instrumentation-http',
    );
    const request = spans.find(
      (s) => s.name === 'request' && s.instrumentationScope.name === '@fastify/otel',
    );
    const statements = spans.filter((s) => s.instrumentationScope.name === '@kit/autocrud');
    assert.ok(server, `a server span among ${spans.map((s) => s.name).join(', ')}`);
    assert.ok(request, 'a @fastify/otel request span');
    // Every statement span descends from the request span.
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    for (const s of statements) {
      let up = parentOf(s);
      while (up !== undefined && up !== request.spanContext().spanId)
        up = byId.get(up) && parentOf(byId.get(up)!);
      assert.equal(up, request.spanContext().spanId, `${s.name} is inside the request`);
      assert.equal(s.kind, CLIENT);
    }
    return { status: res.status, body: text, entry, server, request, statements, spans };
  }

  it('an incoming traceparent: one trace from the caller through the server span to each statement, and the audit entry names it', async () => {
    const created = await call('POST', '/api/gadgets', {
      body: { name: 'lamp', secret: 'hunter2-value' },
      headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    });
    assert.equal(created.status, 201, created.body);
    assert.equal(created.entry.traceId, TRACE_ID);
    assert.equal(parentOf(created.server), PARENT_ID, 'the server span continues the caller');
    assert.equal(parentOf(created.request), created.server.spanContext().spanId);
    assert.equal(
      created.entry.spanId,
      created.request.spanContext().spanId,
      "the entry's span is the request's",
    );
    const insert = created.statements.find((s) => s.name === 'INSERT gadgets');
    assert.ok(insert, created.statements.map((s) => s.name).join(', '));
    assert.deepEqual(insert.attributes, {
      'db.system.name': 'postgresql',
      'db.operation.name': 'INSERT',
      'db.collection.name': 'gadgets',
    });
    // Never a value: not the body's, not the SQL text.
    const everything = JSON.stringify(created.spans.map((s) => [s.name, s.attributes, s.events]));
    assert.doesNotMatch(everything, /hunter2|lamp/);
    assert.doesNotMatch(everything, /insert into/i);
  });

  it('reads, updates and deletes: a span per statement with its operation and table, on both of AutoCrud paths (prepared statements and the builder)', async () => {
    const created = await call('POST', '/api/gadgets', {
      body: { name: 'desk', secret: 's3cret' },
    });
    const id = (JSON.parse(created.body) as { id: number }).id;
    assert.equal(created.entry.spanId, created.request.spanContext().spanId);
    assert.equal(parentOf(created.server), undefined, 'a new trace');

    const read = await call('GET', `/api/gadgets/${id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(
      read.statements.map((s) => s.name),
      ['SELECT gadgets'],
    );
    const etag = JSON.parse(read.body) as { version: number };

    const updated = await call('PUT', `/api/gadgets/${id}`, {
      body: { name: 'desk', secret: 'other-s3cret' },
      headers: { 'if-match': `"${etag.version}"` },
    });
    assert.equal(updated.status, 200, updated.body);
    assert.ok(
      updated.statements.some((s) => s.name === 'UPDATE gadgets'),
      updated.statements.map((s) => s.name).join(', '),
    );

    const list = await call('GET', '/api/gadgets?pageSize=5');
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.statements.map((s) => s.name).sort(),
      ['SELECT gadgets', 'SELECT gadgets'],
      'the page and its count',
    );

    const removed = await call('DELETE', `/api/gadgets/${id}`);
    assert.equal(removed.status, 204);
    assert.ok(removed.statements.some((s) => s.name === 'DELETE gadgets'));
    for (const r of [read, updated, list, removed])
      assert.equal(r.entry.spanId, r.request.spanContext().spanId);
    assert.doesNotMatch(JSON.stringify(updated.spans.map((s) => s.attributes)), /s3cret/);
  });

  it('a statement that fails: its span is an error with the SQLSTATE, not the message', async () => {
    await database.sql('alter table gadgets add constraint short_name check (length(name) < 20)');
    const failed = await call('POST', '/api/gadgets', {
      body: { name: 'a name far too long for it', secret: 'x' },
    });
    assert.ok(failed.status >= 400, failed.body);
    const insert = failed.statements.find((s) => s.name === 'INSERT gadgets');
    assert.ok(insert);
    assert.equal(insert.status.code, 2);
    assert.equal(insert.attributes['db.response.status_code'], '23514');
    assert.doesNotMatch(
      JSON.stringify([insert.attributes, insert.status, insert.events]),
      /far too long/,
    );
  });
});
