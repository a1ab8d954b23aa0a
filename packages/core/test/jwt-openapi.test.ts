// @test-lines: every - child processes on this line
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit } from '@kit/core';
import { jwtApp, TestAuthority } from '@kit/test-support/jwt-authority';

interface Operation {
  security?: Array<Record<string, string[]>>;
  responses?: Record<
    string,
    { content?: Record<string, unknown>; headers?: Record<string, unknown> }
  >;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components?: { securitySchemes?: Record<string, Record<string, unknown>> };
}

const BEARER = [{ bearerAuth: [] }];

/** `redocly lint --extends=recommended`: the error count and the problems for the assertion message. */
function redoclyErrors(doc: unknown): { errors: number; output: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'kit-jwt-openapi-'));
  try {
    const file = path.join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const bin = path.resolve(import.meta.dirname, '../../../node_modules/.bin/redocly');
    const result = spawnSync(bin, ['lint', '--extends=recommended', '--format=json', file], {
      encoding: 'utf8',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    const report = JSON.parse(result.stdout) as {
      totals: { errors: number };
      problems: Array<{ severity: string; message: string }>;
    };
    return {
      errors: report.totals.errors,
      output: JSON.stringify(
        report.problems.filter((p) => p.severity === 'error'),
        null,
        2,
      ),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('OpenAPI document of guarded routes', () => {
  let authority: TestAuthority;
  let app: FastifyInstance;
  let doc: Document;

  before(async () => {
    authority = await TestAuthority.start();
    app = await jwtApp(authority);
    doc = (await app.inject('/openapi.json')).json<Document>();
  });
  after(async () => {
    await app.close();
    await authority.stop();
  });

  it('declares the bearer scheme (http, bearer, JWT)', () => {
    assert.deepEqual(doc.components?.securitySchemes?.bearerAuth?.type, 'http');
    assert.deepEqual(doc.components?.securitySchemes?.bearerAuth?.scheme, 'bearer');
    assert.deepEqual(doc.components?.securitySchemes?.bearerAuth?.bearerFormat, 'JWT');
  });

  it('route-level hooks (single and in an array) declare bearer security', () => {
    assert.deepEqual(doc.paths['/api/catalog/items']?.post?.security, BEARER);
    assert.deepEqual(doc.paths['/api/catalog/items/{id}']?.delete?.security, BEARER);
  });

  it('a group-wide hook, added after the routes, declares bearer security on every route of the group', () => {
    assert.deepEqual(doc.paths['/api/account/me']?.get?.security, BEARER);
    assert.deepEqual(doc.paths['/api/account/orders/{id}']?.get?.security, BEARER);
  });

  it('routes Kit sees no guard on are not declared public: no security of their own, the root says none is declared', () => {
    assert.equal(doc.paths['/api/catalog/items']?.get?.security, undefined);
    assert.deepEqual((doc as { security?: unknown }).security, []);
  });

  it('guarded operations document the 401 problem answer, next to the responses the route declares', () => {
    const unauthorized = doc.paths['/api/account/me']?.get?.responses?.['401'];
    assert.ok(unauthorized?.content?.['application/problem+json']);
    assert.ok(unauthorized?.headers?.['WWW-Authenticate']);
    const own = doc.paths['/api/catalog/items/{id}']?.delete?.responses ?? {};
    assert.deepEqual(Object.keys(own).sort(), ['200', '401', '4XX', '5XX']);
    assert.notDeepEqual(
      own['4XX'],
      { $ref: '#/components/responses/ClientError' },
      "the route's own 4xx response is kept",
    );
    assert.equal(
      doc.paths['/api/catalog/items']?.get?.responses?.['401'],
      undefined,
      'public: no 401',
    );
  });

  it('the document passes redocly lint (recommended) with no errors', () => {
    const { errors, output } = redoclyErrors(doc);
    assert.equal(errors, 0, output);
  });

  it('the guarded operations really answer 401', async () => {
    for (const [url, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const res = await app.inject({
          method: method.toUpperCase() as 'GET',
          url: url.replace('{id}', '1'),
        });
        assert.equal(
          res.statusCode === 401,
          op.security !== undefined && op.security.length === 1,
          `${method} ${url}: ${res.statusCode}`,
        );
      }
    }
  });
});

describe('OpenAPI with configureJwt but nothing guarded', () => {
  it('no unused bearer scheme, everything public, lint clean', async () => {
    const app = Fastify();
    addKit(
      app,
      [
        class PingEndpoint {
          addRoutes(a: FastifyInstance) {
            a.get('', async () => 'pong');
          }
        },
      ],
      (opt) => {
        opt.configureJwt('https://login.example.com/tenant', ['api://x']);
      },
    );
    await useKit(app);
    const doc = (await app.inject('/openapi.json')).json<Document>();
    assert.equal(doc.components?.securitySchemes, undefined);
    assert.equal(doc.paths['/api/ping']?.get?.security, undefined);
    assert.equal(redoclyErrors(doc).errors, 0);
    await app.close();
  });

  it('a route that sets schema.security by hand keeps it', async () => {
    const app = Fastify();
    addKit(
      app,
      [
        class KeysEndpoint {
          addRoutes(a: FastifyInstance) {
            a.get(
              '',
              {
                onRequest: a.kitAuthenticate,
                schema: { security: [{ bearerAuth: ['keys.read'] }] },
              },
              async () => [],
            );
          }
        },
      ],
      (opt) => opt.configureJwt('https://login.example.com/tenant', ['api://x']),
    );
    await useKit(app);
    const doc = (await app.inject('/openapi.json')).json<Document>();
    assert.deepEqual(doc.paths['/api/keys']?.get?.security, [{ bearerAuth: ['keys.read'] }]);
    await app.close();
  });
});
