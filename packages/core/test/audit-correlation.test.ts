// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import { addKit, getCorrelationId, useKit } from '@kit/core';
import {
  auditApp,
  connect,
  LogCapture,
  portOf,
  readAll,
  settle,
  type AuditApp,
  type LogLine,
} from './audit-helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A service a handler calls, that reads the id without being handed the request. */
class PaymentsClient {
  async charge(): Promise<string | undefined> {
    await sleep(5);
    await Promise.resolve();
    return getCorrelationId();
  }
}

describe('correlation ids', () => {
  let h: AuditApp;
  before(async () => {
    h = await auditApp({
      routes: (app) => {
        app.get('/context', async (req) => {
          const first = getCorrelationId();
          await sleep(10);
          const afterTimer = getCorrelationId();
          const fromService = await new PaymentsClient().charge();
          const inTimeout = await new Promise<string | undefined>((r) =>
            setTimeout(() => r(getCorrelationId()), 1),
          );
          return { id: req.id, first, afterTimer, fromService, inTimeout };
        });
        app.post('/context', async (req) => ({
          id: req.id,
          cid: getCorrelationId(),
          body: req.body,
        }));
        app.addHook('onRequest', async (req) => {
          (req as { seenInHook?: string }).seenInHook = getCorrelationId();
        });
        app.get('/hook', async (req) => ({
          id: req.id,
          seenInHook: (req as { seenInHook?: string }).seenInHook,
        }));
        app.get('/healthz', async () => ({ cid: getCorrelationId() ?? null }));
      },
      // This suite's own /healthz reports getCorrelationId() on an excluded path.
      kit: (opt) => {
        opt.enableHealthChecks = false;
      },
    });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => h.app.close());

  async function idOf(
    headers: Record<string, string>,
  ): Promise<{ header: string | undefined; requestId: string; entry: LogLine }> {
    h.logs.clear();
    const res = await h.app.inject({ url: '/id', headers });
    await settle();
    const entry = h.logs.audit()[0] as LogLine;
    return {
      header: res.headers['x-correlation-id'] as string | undefined,
      requestId: res.json<{ id: string }>().id,
      entry,
    };
  }

  it('a valid incoming id is forwarded: response header, request.id and the entry', async () => {
    for (const id of [
      'abc-123',
      'A.b_C-9',
      'x',
      'a'.repeat(128),
      '0af7651916cd43dd8448eb211c80319c',
    ]) {
      const r = await idOf({ 'x-correlation-id': id });
      assert.equal(r.header, id);
      assert.equal(r.requestId, id, 'request.id is the correlation id');
      assert.equal(r.entry.CorrelationId, id);
    }
  });

  it('the header name is matched case-insensitively', async () => {
    assert.equal((await idOf({ 'X-CORRELATION-ID': 'upper-case-name' })).header, 'upper-case-name');
  });

  it('an id with CR/LF, 300 characters, non-ASCII, spaces or empty is replaced by a new UUID', async () => {
    const bad = [
      'abc\r\nX-Injected: 1',
      'abc\n',
      'a'.repeat(129),
      'b'.repeat(300),
      'café',
      'идентификатор',
      '日本',
      'has space',
      '',
      'a,b',
      'a/b',
      '<script>',
    ];
    for (const id of bad) {
      const r = await idOf({ 'x-correlation-id': id });
      assert.match(r.header ?? '', UUID, JSON.stringify(id));
      assert.notEqual(r.header, id);
      assert.equal(r.requestId, r.header);
      assert.equal(r.entry.CorrelationId, r.header);
      assert.ok(
        !JSON.stringify(r.entry).includes('X-Injected: 1') ||
          JSON.stringify(r.entry).includes('\\r\\n'),
        'never a raw line break',
      );
    }
  });

  it('over a real socket, non-ASCII bytes and a 300-character id are refused too', async () => {
    for (const id of ['caf\u00e9', 'x'.repeat(300)]) {
      const socket = await connect(portOf(h.app));
      const response = readAll(socket);
      socket.write(
        `GET /id HTTP/1.1\r\nHost: t\r\nX-Correlation-Id: ${id}\r\nConnection: close\r\n\r\n`,
        'latin1',
      );
      const text = await response;
      const header = /\r\nx-correlation-id: ([^\r]*)\r\n/i.exec(text)?.[1];
      assert.match(header ?? '', UUID, text);
    }
  });

  it('without an incoming id, every request gets its own new UUID', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const r = await idOf({});
      assert.match(r.header ?? '', UUID);
      ids.add(r.header as string);
    }
    assert.equal(ids.size, 50);
  });

  it('every log line of the request carries it as reqId', async () => {
    h.logs.clear();
    await h.app.inject({ url: '/boom', headers: { 'x-correlation-id': 'trace-me' } });
    await settle();
    const own = h.logs.lines.filter((l) => l.reqId !== undefined);
    // Fastify's incoming/completed lines are off while the audit trail is on; its error line stays.
    assert.ok(
      own.some((l) => l.msg === 'kaboom'),
      'the error line',
    );
    for (const line of own) assert.equal(line.reqId, 'trace-me');
  });

  it('getCorrelationId() works in the handler, across timers and awaits, in services and in hooks', async () => {
    const res = await h.app.inject({ url: '/context', headers: { 'x-correlation-id': 'ctx-1' } });
    assert.deepEqual(res.json(), {
      id: 'ctx-1',
      first: 'ctx-1',
      afterTimer: 'ctx-1',
      fromService: 'ctx-1',
      inTimeout: 'ctx-1',
    });
    const hook = await h.app.inject({ url: '/hook', headers: { 'x-correlation-id': 'ctx-2' } });
    assert.deepEqual(hook.json(), { id: 'ctx-2', seenInHook: 'ctx-2' });
  });

  it('concurrent requests each see their own id, with bodies parsed, over a real keep-alive socket', async () => {
    {
      const base = `http://127.0.0.1:${portOf(h.app)}`;
      const results = await Promise.all(
        Array.from({ length: 40 }, async (_, i) => {
          const id = `par-${i}`;
          const get = await fetch(`${base}/context`, { headers: { 'x-correlation-id': id } });
          const post = await fetch(`${base}/context`, {
            method: 'POST',
            headers: { 'x-correlation-id': `${id}-post`, 'content-type': 'application/json' },
            body: JSON.stringify({ i }),
          });
          return {
            id,
            get: (await get.json()) as Record<string, unknown>,
            post: (await post.json()) as Record<string, unknown>,
          };
        }),
      );
      for (const r of results) {
        assert.deepEqual(r.get, {
          id: r.id,
          first: r.id,
          afterTimer: r.id,
          fromService: r.id,
          inTimeout: r.id,
        });
        assert.equal(r.post.cid, `${r.id}-post`, 'after body parsing too');
      }
    }
  });

  it('a body that arrives later, in its own packet, is handled with the id of its request', async () => {
    for (let i = 0; i < 3; i++) {
      const socket = await connect(portOf(h.app));
      socket.setNoDelay(true);
      const response = readAll(socket);
      const body = JSON.stringify({ late: i });
      socket.write(
        `POST /context HTTP/1.1\r\nHost: t\r\nX-Correlation-Id: late-${i}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      );
      await sleep(30);
      socket.write(body);
      const text = await response;
      const json = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { cid?: string };
      assert.equal(json.cid, `late-${i}`, text);
    }
  });

  it('a custom body parser that finishes in a context of its own still hands the handler its request id', async () => {
    // A parser that queues bodies for a timer created outside the request (a pooled decoder, say):
    // its `done` runs in the timer's context, not the request's. Fastify runs what follows a
    // parser's `done` in the request's async scope (since 3.25, fastify/fastify#3571), and Kit
    // relies on that instead of entering the context again in a hook of its own.
    const app = Fastify();
    addKit(app, [], (opt) => {
      opt.enableHealthChecks = false;
      opt.configureAuditTrail();
    });
    const queue: Array<() => void> = [];
    const pump = setInterval(() => queue.splice(0).forEach((f) => f()), 2);
    app.addContentTypeParser('application/x-pooled', { parseAs: 'string' }, (_req, body, done) => {
      queue.push(() => done(null, { text: body, seenByParser: getCorrelationId() ?? null }));
    });
    app.post('/pooled', async (req) => ({ cid: getCorrelationId() ?? null, body: req.body }));
    app.put('/pooled', async () => ({ cid: getCorrelationId() ?? null }));
    await useKit(app);
    try {
      for (const method of ['POST', 'PUT'] as const) {
        const res = await app.inject({
          method,
          url: '/pooled',
          headers: {
            'content-type': 'application/x-pooled',
            'x-correlation-id': `pooled-${method}`,
          },
          payload: 'x',
        });
        assert.equal(res.json<{ cid: string }>().cid, `pooled-${method}`);
        if (method === 'POST')
          assert.equal(
            res.json<{ body: { seenByParser: unknown } }>().body.seenByParser,
            null,
            'the parser itself ran outside the request context',
          );
      }
    } finally {
      clearInterval(pump);
      await app.close();
    }
  });

  it('outside a request, and on excluded paths, it is undefined', async () => {
    assert.equal(getCorrelationId(), undefined);
    const res = await h.app.inject({ url: '/healthz', headers: { 'x-correlation-id': 'ignored' } });
    assert.deepEqual(res.json(), { cid: null });
  });
});

describe('correlation id options', () => {
  it('correlationIdHeader renames the header, read and written', async () => {
    const h = await auditApp({
      audit: (a) => {
        a.correlationIdHeader = 'X-Request-Id';
      },
    });
    try {
      const res = await h.app.inject({
        url: '/id',
        headers: { 'x-request-id': 'renamed-1', 'x-correlation-id': 'other' },
      });
      assert.equal(res.headers['x-request-id'], 'renamed-1');
      assert.equal(res.headers['x-correlation-id'], undefined);
      assert.equal(res.json<{ id: string }>().id, 'renamed-1');
    } finally {
      await h.app.close();
    }
  });

  it('forwardCorrelationId = false ignores incoming ids', async () => {
    const h = await auditApp({
      audit: (a) => {
        a.forwardCorrelationId = false;
      },
    });
    try {
      const res = await h.app.inject({
        url: '/id',
        headers: { 'x-correlation-id': 'valid-but-ignored' },
      });
      assert.match(res.headers['x-correlation-id'] as string, UUID);
      assert.equal(res.json<{ id: string }>().id, res.headers['x-correlation-id']);
    } finally {
      await h.app.close();
    }
  });

  it('correlationIdContext = false: getCorrelationId() is undefined, request.id still is the id', async () => {
    const h = await auditApp({
      audit: (a) => {
        a.correlationIdContext = false;
      },
      routes: (app) =>
        app.get('/ctx', async (req) => ({ id: req.id, cid: getCorrelationId() ?? null })),
    });
    try {
      const res = await h.app.inject({ url: '/ctx', headers: { 'x-correlation-id': 'no-ctx' } });
      assert.deepEqual(res.json(), { id: 'no-ctx', cid: null });
      assert.equal(res.headers['x-correlation-id'], 'no-ctx');
    } finally {
      await h.app.close();
    }
  });

  it('off: no header, Fastify request ids, getCorrelationId() undefined', async () => {
    const h = await auditApp({
      off: true,
      routes: (app) =>
        app.get('/ctx', async (req) => ({ id: req.id, cid: getCorrelationId() ?? null })),
    });
    try {
      const res = await h.app.inject({ url: '/ctx', headers: { 'x-correlation-id': 'abc' } });
      assert.equal(res.headers['x-correlation-id'], undefined);
      assert.deepEqual(res.json(), { id: 'req-1', cid: null });
      assert.equal(h.app.kit.audit.enabled, false);
    } finally {
      await h.app.close();
    }
  });
});

describe("the host's own request ids", () => {
  it('a genReqId given to Fastify still names requests on excluded paths; audited ones use the correlation id', async () => {
    let n = 0;
    const logs = new LogCapture();
    const app = Fastify({ logger: { level: 'info', stream: logs }, genReqId: () => `host-${++n}` });
    addKit(app, [], (opt) => opt.configureAuditTrail((a) => a.excludePaths.push('/internal')));
    app.get('/internal/id', async (req) => ({ id: req.id }));
    app.get('/id', async (req) => ({ id: req.id }));
    await useKit(app);
    try {
      const excluded = await app.inject('/internal/id');
      assert.equal(excluded.json<{ id: string }>().id, 'host-1');
      assert.equal(excluded.headers['x-correlation-id'], undefined);
      const audited = await app.inject({ url: '/id', headers: { 'x-correlation-id': 'corr-1' } });
      assert.equal(audited.json<{ id: string }>().id, 'corr-1');
    } finally {
      await app.close();
    }
  });

  it("requestIdHeader: Fastify applies it around Kit's genReqId; the correlation id is unaffected", async () => {
    const app = Fastify({ requestIdHeader: 'x-request-id' });
    addKit(app, [], (opt) => opt.configureAuditTrail((a) => a.excludePaths.push('/internal')));
    app.get('/internal/id', async (req) => ({ id: req.id }));
    app.get('/id', async (req) => ({ id: req.id, cid: getCorrelationId() }));
    await useKit(app);
    try {
      assert.equal(
        (await app.inject({ url: '/internal/id', headers: { 'x-request-id': 'from-lb' } })).json<{
          id: string;
        }>().id,
        'from-lb',
      );
      const withHeader = await app.inject({
        url: '/id',
        headers: { 'x-request-id': 'from-lb', 'x-correlation-id': 'corr-3' },
      });
      assert.deepEqual(withHeader.json(), { id: 'from-lb', cid: 'corr-3' });
      assert.equal(withHeader.headers['x-correlation-id'], 'corr-3');
      const without = await app.inject({ url: '/id', headers: { 'x-correlation-id': 'corr-4' } });
      assert.deepEqual(without.json(), { id: 'corr-4', cid: 'corr-4' });
    } finally {
      await app.close();
    }
  });

  it('setGenReqId after addKit wins for request.id; the correlation id still reaches the header, the entry and getCorrelationId()', async () => {
    const logs = new LogCapture();
    const app = Fastify({ logger: { level: 'info', stream: logs } });
    addKit(app, [], (opt) => opt.configureAuditTrail());
    app.setGenReqId(() => 'mine');
    app.get('/id', async (req) => ({ id: req.id, cid: getCorrelationId() }));
    await useKit(app);
    try {
      const res = await app.inject({ url: '/id', headers: { 'x-correlation-id': 'corr-2' } });
      assert.deepEqual(res.json(), { id: 'mine', cid: 'corr-2' });
      assert.equal(res.headers['x-correlation-id'], 'corr-2');
      await settle();
      assert.equal(logs.audit()[0]?.CorrelationId, 'corr-2');
    } finally {
      await app.close();
    }
  });
});
