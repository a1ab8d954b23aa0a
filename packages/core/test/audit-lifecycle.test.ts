// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { asValue } from 'awilix';
import { LoggingAuditSink, type AuditLogEntry, type IAuditSink } from '@kit/core';
import {
  auditApp,
  connect,
  LEVEL,
  portOf,
  readAll,
  RecordingSink,
  settle,
  type AuditApp,
  type LogLine,
} from './audit-helpers.js';
import { until } from '@kit/test-support/until';

/** What the upload handler saw before it read the body itself. */
interface UploadReport {
  bytes: number;
  flowingAtStart: boolean | null;
  dataListenersAtStart: number;
  bytesReadBeforeHandler: number;
}

describe('request lifecycle (real sockets)', () => {
  let h: AuditApp;
  let handlerStarted: () => void = () => {};
  before(async () => {
    h = await auditApp({
      routes: (app) => {
        // The body is handed over untouched: the handler streams it itself.
        app.addContentTypeParser('application/octet-stream', (_req, payload, done) =>
          done(null, payload),
        );
        app.post('/upload', async (request: FastifyRequest) => {
          const raw = request.raw;
          const report: UploadReport = {
            bytes: 0,
            flowingAtStart: raw.readableFlowing,
            dataListenersAtStart: raw.listenerCount('data'),
            bytesReadBeforeHandler: raw.socket.bytesRead,
          };
          for await (const chunk of raw) report.bytes += (chunk as Buffer).length;
          return report;
        });
        app.get('/wait', async () => {
          handlerStarted();
          await sleep(400);
          return { late: true };
        });
      },
    });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => h.app.close());

  it('a handler that throws: 500, the header, one entry at error level', async () => {
    h.logs.clear();
    const res = await fetch(`http://127.0.0.1:${portOf(h.app)}/boom`, {
      headers: { 'x-correlation-id': 'thrown-1' },
    });
    assert.equal(res.status, 500);
    assert.equal(res.headers.get('x-correlation-id'), 'thrown-1');
    await until('the entry', () => h.logs.audit().length === 1, 2000);
    const line = h.logs.audit()[0] as LogLine;
    assert.equal(line.level, LEVEL.error);
    assert.equal(line.StatusCode, 500);
    assert.equal(line.CorrelationId, 'thrown-1');
  });

  it('the entry is written when the response completes, not before', async () => {
    h.logs.clear();
    const pending = fetch(`http://127.0.0.1:${portOf(h.app)}/slow?ms=150`);
    await sleep(60);
    assert.equal(h.logs.audit().length, 0, 'nothing while the handler runs');
    assert.equal((await pending).status, 200);
    await until('the entry', () => h.logs.audit().length === 1, 2000);
  });

  it('a client that goes away mid-request: entry with aborted = true (status 499, warn level)', async () => {
    h.logs.clear();
    const started = new Promise<void>((resolve) => (handlerStarted = resolve));
    const socket = await connect(portOf(h.app));
    socket.write('GET /wait HTTP/1.1\r\nHost: t\r\nX-Correlation-Id: gone-1\r\n\r\n');
    await started;
    const destroyedAt = performance.now();
    socket.destroy();
    await until('the aborted entry', () => h.logs.audit().length === 1, 2000);
    const line = h.logs.audit()[0] as LogLine;
    assert.equal(line.Aborted, true);
    assert.equal(line.StatusCode, 499);
    assert.equal(line.level, LEVEL.warn);
    assert.equal(line.CorrelationId, 'gone-1');
    assert.ok(
      (line.ElapsedMs as number) < 400,
      `written at the abort (${line.ElapsedMs as number} ms), not when the handler ends`,
    );
    assert.match(
      line.msg as string,
      /^HTTP GET \/wait responded 499 in [\d.]+ms \[CorrelationId: gone-1\] Headers=\{.*\} \(aborted\)$/,
    );
    assert.ok(performance.now() - destroyedAt < 400);
    // The handler finishing later adds nothing.
    await sleep(450);
    assert.equal(h.logs.audit().length, 1);
  });

  it('an upload cut off mid-body is recorded as aborted too', async () => {
    h.logs.clear();
    const socket = await connect(portOf(h.app));
    socket.write(
      'POST /upload HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n',
    );
    socket.write(Buffer.alloc(64 * 1024, 1));
    await sleep(50);
    socket.destroy();
    await until('the aborted upload entry', () => h.logs.audit().length === 1, 2000);
    assert.equal(h.logs.audit()[0]?.Aborted, true);
  });

  it('a streaming upload is not consumed by the audit: the handler gets every byte, from the first', async () => {
    h.logs.clear();
    const total = 4 * 1024 * 1024;
    const chunk = Buffer.alloc(256 * 1024, 7);
    const socket = await connect(portOf(h.app));
    const response = readAll(socket);
    socket.write(
      `POST /upload HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\nContent-Length: ${total}\r\nConnection: close\r\n\r\n`,
    );
    for (let sent = 0; sent < total; sent += chunk.length) {
      socket.write(chunk);
      await sleep(2);
    }
    const text = await response;
    assert.match(text, /^HTTP\/1\.1 200 /);
    const report = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as UploadReport;
    assert.equal(report.bytes, total, 'every byte reached the handler');
    assert.equal(report.flowingAtStart, null, 'nobody had started reading the body');
    assert.equal(report.dataListenersAtStart, 0, 'no data listener before the handler');
    assert.ok(
      report.bytesReadBeforeHandler < total,
      'the handler started before the upload was complete',
    );
    await until('the entry', () => h.logs.audit().length === 1, 2000);
    const line = h.logs.audit()[0] as LogLine;
    assert.equal(line.StatusCode, 200);
    assert.equal((line.Headers as Record<string, string>)['content-length'], String(total));
    assert.ok(!JSON.stringify(line).includes('\u0007'), 'no body in the entry');
  });
});

describe('synchronous mode with a custom sink', () => {
  it('the sink is called after the response is sent; a slow sink does not delay it', async () => {
    let release: () => void = () => {};
    const calls: Array<{ entry: AuditLogEntry; at: number }> = [];
    const slow: IAuditSink = {
      writeAsync: (entry) => {
        calls.push({ entry, at: performance.now() });
        return new Promise<void>((resolve) => (release = resolve));
      },
    };
    const h = await auditApp({
      kit: (opt) => {
        opt.auditSinkFactory = () => slow;
      },
    });
    try {
      const res = await h.app.inject({
        url: '/hello?token=x',
        headers: { 'x-correlation-id': 'sink-1', cookie: 'c=1' },
      });
      assert.equal(res.statusCode, 200);
      await settle();
      assert.equal(calls.length, 1);
      assert.equal(h.app.kit.audit.stats().written, 0, 'not settled yet');
      const { entry } = calls[0] as { entry: AuditLogEntry };
      assert.deepEqual(Object.keys(entry), [
        'timestamp',
        'method',
        'path',
        'query',
        'statusCode',
        'durationMs',
        'correlationId',
        'headers',
        'route',
      ]);
      assert.deepEqual(
        { ...entry, timestamp: '', durationMs: 0 },
        {
          timestamp: '',
          method: 'GET',
          path: '/hello',
          query: 'token=***',
          statusCode: 200,
          durationMs: 0,
          correlationId: 'sink-1',
          headers: {
            'x-correlation-id': 'sink-1',
            cookie: '***',
            'user-agent': 'lightMyRequest',
            host: 'localhost:80',
          },
          route: '/hello',
        },
      );
      assert.equal(
        JSON.parse(JSON.stringify(entry)).correlationId,
        'sink-1',
        'a plain, serialisable object',
      );
      release();
      await until('written', () => h.app.kit.audit.stats().written === 1, 1000);
      assert.deepEqual(h.app.kit.audit.stats(), {
        enqueued: 1,
        written: 1,
        dropped: 0,
        failed: 0,
        queueDepth: 0,
      });
    } finally {
      release(); // a failed assertion above must not leave close() waiting on the sink
      await h.app.close();
    }
  });

  it('a sink that throws or rejects never fails the request; failed counts, and the failure is logged once', async () => {
    let n = 0;
    const broken: IAuditSink = {
      writeAsync: async () => {
        n++;
        if (n % 2 === 0) throw new Error('sink down (async)');
        await Promise.resolve();
        throw new Error('sink down');
      },
    };
    const syncThrow: IAuditSink = {
      writeAsync: () => {
        throw new Error('sync throw');
      },
    };
    for (const sink of [broken, syncThrow]) {
      const h = await auditApp({
        kit: (opt) => {
          opt.auditSinkFactory = () => sink;
        },
      });
      try {
        for (let i = 0; i < 20; i++) assert.equal((await h.app.inject('/hello')).statusCode, 200);
        await until('failures counted', () => h.app.kit.audit.stats().failed === 20, 1000);
        assert.deepEqual(h.app.kit.audit.stats(), {
          enqueued: 20,
          written: 0,
          dropped: 0,
          failed: 20,
          queueDepth: 0,
        });
        const reports = h.logs.lines.filter(
          (l) =>
            typeof l.msg === 'string' && l.msg.startsWith('Kit audit trail: the audit sink failed'),
        );
        assert.equal(reports.length, 1, 'rate-limited');
        assert.equal(reports[0]?.level, LEVEL.error);
      } finally {
        await h.app.close();
      }
    }
  });

  it('app.close() waits for pending sink writes (up to writeTimeoutMs)', async () => {
    const sink = new RecordingSink();
    const slow: IAuditSink = {
      writeAsync: async (e, s) => {
        await sleep(100);
        await sink.writeAsync(e, s);
      },
    };
    const h = await auditApp({
      kit: (opt) => {
        opt.auditSinkFactory = () => slow;
      },
    });
    for (let i = 0; i < 5; i++) await h.app.inject('/hello');
    await h.app.close();
    assert.equal(sink.entries.length, 5);
    assert.equal(h.app.kit.audit.stats().written, 5);
  });
});

describe('the sink factory', () => {
  it('receives the service container and resolves registered services', async () => {
    const store = new RecordingSink();
    class ContainerSink implements IAuditSink {
      readonly #store: RecordingSink;
      constructor(deps: { auditStore: RecordingSink }) {
        this.#store = deps.auditStore;
      }
      writeAsync(entry: AuditLogEntry): Promise<void> {
        return this.#store.writeAsync(entry);
      }
    }
    const h = await auditApp({
      kit: (opt) => {
        opt.auditSinkFactory = (services) => services.build(ContainerSink);
      },
      routes: (app) => app.kit.services.register({ auditStore: asValue(store) }),
    });
    try {
      await h.app.inject('/hello');
      await settle();
      assert.equal(store.entries.length, 1);
      assert.equal(store.entries[0]?.path, '/hello');
    } finally {
      await h.app.close();
    }
  });

  it('a LoggingAuditSink of your own (here: Compact) writes through the logger', async () => {
    let appRef: FastifyInstance | undefined;
    const h = await auditApp({
      kit: (opt) => {
        // The host has its app in scope; the factory runs in useKit, after addKit.
        opt.auditSinkFactory = () =>
          new LoggingAuditSink((appRef as FastifyInstance).log, {
            logFormat: 'Compact',
            successLogLevel: 'debug',
          });
      },
      routes: (app) => (appRef = app),
    });
    try {
      await h.app.inject('/hello');
      await settle();
      const line = h.logs.audit()[0] as LogLine;
      assert.match(line.msg as string, /^GET \/hello 200 [\d.]+ms$/);
      assert.equal(line.level, LEVEL.debug);
    } finally {
      await h.app.close();
    }
  });
});
