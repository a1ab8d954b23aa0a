// @test-lines: once - problem answers over inject
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import { addKit, sendProblem, useKit, type KitConfigure } from '@kit/core';
import { openApiOf } from './helpers.js';
import { redoclyLint } from '@kit/test-support/redocly';

class ThingsEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get(
      '{id}',
      {
        schema: {
          params: { type: 'object', properties: { id: { type: 'integer' } } },
          querystring: {
            type: 'object',
            required: ['limit'],
            properties: { limit: { type: 'integer' } },
          },
          headers: { type: 'object', properties: { 'x-tenant': { type: 'string', minLength: 3 } } },
        },
      },
      async () => ({ ok: true }),
    );
    app.post(
      '',
      {
        schema: {
          body: {
            type: 'object',
            required: ['name'],
            properties: { name: { type: 'string' }, size: { type: 'integer' } },
          },
        },
      },
      async () => ({ ok: true }),
    );
    app.get('boom', async () => {
      const err = new Error('connect ECONNREFUSED postgres://orders:s3cr3t@db.internal:5432');
      (err as Error & { code: string }).code = 'ECONNREFUSED';
      throw err;
    });
    app.get('teapot', async () => {
      throw Object.assign(new Error('I am a teapot'), {
        statusCode: 418,
        code: 'TEA',
        headers: { 'x-brew': 'earl-grey' },
      });
    });
    app.get('thrown-string', async () => {
      throw 'a string, not an Error';
    });
    app.get('gone', async (_request, reply) => {
      reply.code(410);
      throw new Error('This thing was retired.');
    });
    app.get('own-problem', async (_request, reply) =>
      sendProblem(reply, {
        type: 'https://example.com/probs/out-of-stock',
        title: 'Out of stock',
        status: 409,
      }),
    );
    app.get(
      'guarded',
      {
        preHandler: async () => {
          throw Object.assign(new Error('Forbidden for you'), { statusCode: 403 });
        },
      },
      async () => ({ ok: true }),
    );
  }
}

class HookedEndpoint {
  addRoutes(app: FastifyInstance) {
    app.addHook('onRequest', async () => {
      throw Object.assign(new Error('An admin key is required.'), { statusCode: 401 });
    });
    app.get('jobs', async () => []);
  }
}

interface Captured {
  app: FastifyInstance;
  logs: string[];
}

async function problemApp(configure?: KitConfigure): Promise<Captured> {
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logs.push(chunk.toString());
      callback();
    },
  });
  const app = Fastify({ logger: { level: 'info', stream } });
  addKit(app, [ThingsEndpoint, HookedEndpoint], (opt) => {
    opt.docsPath = false;
    opt.configureAuditTrail();
    configure?.(opt);
  });
  // A root route of the host's own: Kit leaves its errors to the host (here Fastify's default).
  app.get('/host/boom', async () => {
    throw new Error('host error message');
  });
  await useKit(app);
  await app.ready();
  return { app, logs };
}

function assertProblem(res: LightMyRequestResponse, status: number): Record<string, unknown> {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json; charset=utf-8$/);
  assert.equal(res.headers['cache-control'], 'no-store');
  const body = res.json<Record<string, unknown>>();
  assert.equal(body.type, body.type === 'about:blank' ? 'about:blank' : body.type);
  assert.equal(body.status, status);
  assert.equal(typeof body.title, 'string');
  // The audit trail gave the request a correlation id: the body carries the same one.
  assert.equal(body.correlationId, res.headers['x-correlation-id']);
  return body;
}

describe('opt.problemDetails (default on): every error of a Kit route is an RFC 9457 problem', () => {
  let captured: Captured;
  let app: FastifyInstance;
  before(async () => {
    captured = await problemApp();
    app = captured.app;
  });
  after(() => app.close());

  it('a query parameter that fails validation: 400 naming it, in `detail` and in `errors`', async () => {
    const body = assertProblem(await app.inject('/api/things/7?limit=many'), 400);
    assert.equal(body.title, 'Bad Request');
    assert.equal(body.code, 'FST_ERR_VALIDATION');
    assert.equal(body.detail, 'querystring/limit must be integer');
    assert.deepEqual(body.errors, [
      { in: 'querystring', name: 'limit', pointer: '#/limit', detail: 'must be integer' },
    ]);
  });

  it('a missing required query parameter, a bad path parameter and a bad header are named too', async () => {
    const missing = assertProblem(await app.inject('/api/things/7'), 400);
    assert.deepEqual(missing.errors, [
      {
        in: 'querystring',
        name: 'limit',
        pointer: '#/limit',
        detail: "must have required property 'limit'",
      },
    ]);
    const param = assertProblem(await app.inject('/api/things/seven?limit=1'), 400);
    assert.deepEqual(param.errors, [
      { in: 'params', name: 'id', pointer: '#/id', detail: 'must be integer' },
    ]);
    const header = assertProblem(
      await app.inject({ url: '/api/things/7?limit=1', headers: { 'x-tenant': 'ab' } }),
      400,
    );
    assert.deepEqual(header.errors, [
      {
        in: 'headers',
        name: 'x-tenant',
        pointer: '#/x-tenant',
        detail: 'must NOT have fewer than 3 characters',
      },
    ]);
  });

  it('a body that fails validation: 400 with a JSON pointer into the body', async () => {
    const missing = assertProblem(
      await app.inject({ method: 'POST', url: '/api/things', payload: {} }),
      400,
    );
    assert.deepEqual(missing.errors, [
      { in: 'body', pointer: '#/name', detail: "must have required property 'name'" },
    ]);
    const wrong = assertProblem(
      await app.inject({ method: 'POST', url: '/api/things', payload: { name: 'x', size: 'big' } }),
      400,
    );
    assert.deepEqual(wrong.errors, [{ in: 'body', pointer: '#/size', detail: 'must be integer' }]);
    const malformed = assertProblem(
      await app.inject({
        method: 'POST',
        url: '/api/things',
        payload: '{"name":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
    );
    assert.equal(malformed.code, 'FST_ERR_CTP_INVALID_JSON_BODY');
  });

  it('a 5xx never carries the message, the code, a stack or a cause; the log has the error, under the same id', async () => {
    const res = await app.inject('/api/things/boom');
    const body = assertProblem(res, 500);
    assert.deepEqual(Object.keys(body).sort(), [
      'correlationId',
      'detail',
      'status',
      'title',
      'type',
    ]);
    assert.equal(body.detail, 'The server could not complete the request.');
    for (const secret of ['s3cr3t', 'postgres', 'ECONNREFUSED', 'db.internal', 'at ', 'stack'])
      assert.ok(!res.body.includes(secret), secret);
    const line = captured.logs
      .join('')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { level: number; reqId?: string; err?: { message?: string } })
      .find((l) => l.level === 50 && l.reqId === body.correlationId);
    assert.ok(line, 'the error is logged at error level with the request id');
    assert.match(String(line.err?.message), /ECONNREFUSED/);
  });

  it('a 4xx error keeps its message, code and headers; a status set on the reply before throwing is kept', async () => {
    const teapot = await app.inject('/api/things/teapot');
    const body = assertProblem(teapot, 418);
    assert.equal(body.title, "I'm a Teapot");
    assert.equal(body.detail, 'I am a teapot');
    assert.equal(body.code, 'TEA');
    assert.equal(teapot.headers['x-brew'], 'earl-grey');
    const gone = assertProblem(await app.inject('/api/things/gone'), 410);
    assert.equal(gone.detail, 'This thing was retired.');
  });

  it('a thrown non-Error is a 500 problem', async () => {
    assertProblem(await app.inject('/api/things/thrown-string'), 500);
  });

  it('errors thrown by hooks (route-level and group-wide) are problems', async () => {
    assert.equal(
      assertProblem(await app.inject('/api/things/guarded'), 403).detail,
      'Forbidden for you',
    );
    assert.equal(
      assertProblem(await app.inject('/api/hooked/jobs'), 401).detail,
      'An admin key is required.',
    );
  });

  it("sendProblem keeps the host's own problem type and adds the correlation id", async () => {
    const body = assertProblem(await app.inject('/api/things/own-problem'), 409);
    assert.equal(body.type, 'https://example.com/probs/out-of-stock');
  });

  it('an unknown route is a 404 problem that does not echo the query string', async () => {
    const res = await app.inject('/api/nothing/here?token=SECRET6');
    const body = assertProblem(res, 404);
    assert.equal(body.detail, 'No route matches GET /api/nothing/here.');
    assert.ok(!res.body.includes('SECRET6'));
  });

  it("the host's own root routes keep the host's error handling", async () => {
    const res = await app.inject('/host/boom');
    assert.equal(res.statusCode, 500);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.equal(res.json<{ message: string }>().message, 'host error message');
  });

  it('the OpenAPI document declares the problem responses and passes redocly lint', async () => {
    const doc = (await openApiOf(app)) as unknown as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      components: { schemas: Record<string, unknown>; responses: Record<string, unknown> };
    };
    const op = doc.paths['/api/things/{id}']?.get;
    assert.ok(op);
    assert.deepEqual(op.responses['4XX'], { $ref: '#/components/responses/ClientError' });
    assert.deepEqual(op.responses['5XX'], { $ref: '#/components/responses/ServerError' });
    assert.ok(doc.components.schemas.ProblemDetails);
    assert.ok(doc.components.responses.ClientError && doc.components.responses.ServerError);
    assert.ok(!JSON.stringify(doc).includes('x-kit-problem-details'));
    const host = doc.paths['/host/boom']?.get;
    assert.ok(
      host && !('4XX' in host.responses),
      'a host root route does not answer problems: none declared',
    );
    const { ok, output } = await redoclyLint(doc);
    assert.ok(ok, output);
    // Only the host's root route, which declares no 4xx and whose errors are the host's, is left.
    assert.match(output, /operation-4xx-response: 1\n/);
  });
});

describe('opt.problemDetails: the other settings', () => {
  it("false keeps Fastify's default error body and 404, and declares nothing", async () => {
    const { app } = await problemApp((opt) => {
      opt.problemDetails = false;
    });
    const res = await app.inject('/api/things/7?limit=many');
    assert.equal(res.statusCode, 400);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.equal(res.json<{ message: string }>().message, 'querystring/limit must be integer');
    assert.equal(res.json<{ error: string }>().error, 'Bad Request');
    assert.match(String((await app.inject('/nope')).headers['content-type']), /^application\/json/);
    const doc = await openApiOf(app);
    assert.ok(!JSON.stringify(doc).includes('ProblemDetails'));
    await app.close();
  });

  it('the correlation id comes from the reply header when the async context is off', async () => {
    const { app } = await problemApp((opt) => {
      opt.configureAuditTrail((a) => {
        a.correlationIdContext = false;
      });
    });
    const res = await app.inject({
      url: '/api/things/7?limit=x',
      headers: { 'x-correlation-id': 'abc-123' },
    });
    assert.equal(res.json<{ correlationId: string }>().correlationId, 'abc-123');
    await app.close();
  });

  it('without the audit trail a problem still carries a correlation id: a new UUID, the header, the error log line', async () => {
    const logs: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logs.push(chunk.toString());
        callback();
      },
    });
    const app = Fastify({ logger: { level: 'info', stream } });
    addKit(app, [ThingsEndpoint], (opt) => {
      opt.docsPath = false;
    });
    await useKit(app);
    try {
      const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
      const first = assertProblem(await app.inject('/api/things/7?limit=x'), 400);
      const second = assertProblem(await app.inject('/api/things/7?limit=x'), 400);
      assert.match(String(first.correlationId), UUID);
      assert.notEqual(first.correlationId, second.correlationId);
      // A valid incoming id is kept, as the audit trail's defaults keep it; an invalid one is replaced.
      const forwarded = await app.inject({
        url: '/api/things/7?limit=x',
        headers: { 'x-correlation-id': 'ticket-42.a' },
      });
      assert.equal(assertProblem(forwarded, 400).correlationId, 'ticket-42.a');
      const replaced = await app.inject({
        url: '/api/things/7?limit=x',
        headers: { 'x-correlation-id': 'two words' },
      });
      assert.match(String(assertProblem(replaced, 400).correlationId), UUID);
      // The 5xx line Kit logs names the id the client was shown (the request id stays Fastify's).
      const boom = assertProblem(await app.inject('/api/things/boom'), 500);
      assert.match(String(boom.correlationId), UUID);
      const line = logs
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { level: number; reqId?: string; correlationId?: string })
        .filter((l) => l.correlationId === boom.correlationId);
      assert.ok(
        line.some((l) => l.level === 50),
        'the error line carries the correlation id',
      );
      assert.ok(line.every((l) => l.reqId === line[0]?.reqId));
      // The 404 of an unknown route too; a route that answers without a problem makes no id.
      assertProblem(await app.inject('/nowhere'), 404);
      const ok = await app.inject('/api/things/7?limit=1');
      assert.equal(ok.statusCode, 200);
      assert.equal(ok.headers['x-correlation-id'], undefined);
    } finally {
      await app.close();
    }
  });

  it('a path the audit trail excludes answers problems without a correlation id, as before', async () => {
    const { app } = await problemApp((opt) => {
      opt.configureAuditTrail((a) => a.excludePaths.push('/api/things'));
    });
    try {
      const res = await app.inject('/api/things/7?limit=x');
      assert.equal(res.statusCode, 400);
      assert.equal(res.headers['x-correlation-id'], undefined);
      assert.equal('correlationId' in res.json<Record<string, unknown>>(), false);
    } finally {
      await app.close();
    }
  });

  it('a not-found handler the host already set fails useKit with KIT_ERR_NOT_FOUND_HANDLER naming the fix', async () => {
    const app = Fastify();
    app.setNotFoundHandler((_request, reply) => reply.code(404).send('nope'));
    addKit(app, [ThingsEndpoint], (opt) => {
      opt.openApiPath = false;
    });
    await assert.rejects(useKit(app), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_NOT_FOUND_HANDLER');
      assert.match(err.message, /opt\.problemDetails = false/);
      return true;
    });
    await app.close();
  });

  it('a value other than a boolean fails addKit with KIT_ERR_INVALID_OPTION', () => {
    assert.throws(
      () =>
        addKit(Fastify(), (opt) => {
          (opt as { problemDetails: unknown }).problemDetails = 'yes';
        }),
      /KIT_ERR_INVALID_OPTION|problemDetails/,
    );
  });
});
