// @test-lines: once - the OpenAPI document over inject
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { addKit, EndpointGroup, useKit, type EndpointClass } from '@kit/core';
import { kitApp } from './helpers.js';
import { redoclyLint } from '@kit/test-support/redocly';

interface Op {
  security?: Array<Record<string, string[]>>;
}
interface Doc {
  security?: unknown[];
  paths: Record<string, Record<string, Op>>;
  components?: { securitySchemes?: Record<string, unknown> };
}

const ADMIN_KEY = { type: 'apiKey', in: 'header', name: 'x-admin-key' } as const;

async function requireAdminKey(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.headers['x-admin-key'] !== 'k') await reply.code(401).send();
}

@EndpointGroup('admin', { security: { adminKey: ADMIN_KEY } })
class AdminUsersEndpoint {
  addRoutes(app: FastifyInstance) {
    app.addHook('onRequest', requireAdminKey);
    app.get('users', async () => []);
    // A route of a guarded group that is public on purpose says so itself.
    app.get('status', { schema: { security: [] } }, async () => 'ok');
  }
}

// The second class of the group declares nothing: the group's declaration covers its routes too.
@EndpointGroup('admin')
class AdminJobsEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get('jobs', async () => []);
  }
}

// Guarded by a hook Kit cannot see through, and nothing declared.
class ReportsEndpoint {
  addRoutes(app: FastifyInstance) {
    app.addHook('onRequest', requireAdminKey);
    app.get('daily', async () => []);
  }
}

@EndpointGroup('catalog', { security: {} })
class CatalogEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get('items', async () => []);
  }
}

async function docOf(classes: EndpointClass[], jwt = false): Promise<Doc> {
  const app = await kitApp(classes, (opt) => {
    opt.docsPath = false;
    if (jwt) opt.configureJwt('https://login.example.com/tenant', ['api://tests']);
  });
  const doc = (await app.inject('/openapi.json')).json<Doc>();
  await app.close();
  return doc;
}

describe('groups declare their security for the OpenAPI document', () => {
  it('every route of a group with @EndpointGroup(name, { security }) requires the scheme, declared in components', async () => {
    const doc = await docOf([
      AdminUsersEndpoint,
      AdminJobsEndpoint,
      ReportsEndpoint,
      CatalogEndpoint,
    ]);
    assert.deepEqual(doc.paths['/api/admin/users']?.get?.security, [{ adminKey: [] }]);
    assert.deepEqual(doc.paths['/api/admin/jobs']?.get?.security, [{ adminKey: [] }]);
    assert.deepEqual(doc.components?.securitySchemes, { adminKey: ADMIN_KEY });
    assert.deepEqual(
      doc.paths['/api/admin/status']?.get?.security,
      [],
      "a route's own schema.security wins",
    );
    assert.ok(!JSON.stringify(doc).includes('x-kit-security-schemes'));
  });

  it('a route guarded by a hook Kit cannot see is not declared public; `security: {}` declares a group public', async () => {
    const doc = await docOf([
      AdminUsersEndpoint,
      AdminJobsEndpoint,
      ReportsEndpoint,
      CatalogEndpoint,
    ]);
    assert.equal(doc.paths['/api/reports/daily']?.get?.security, undefined);
    assert.deepEqual(doc.security, [], 'the root states the API-wide default');
    assert.deepEqual(doc.paths['/api/catalog/items']?.get?.security, []);
    const { ok, output } = await redoclyLint(doc);
    assert.ok(ok, output);
  });

  it('no root security when every operation declares its own', async () => {
    const doc = await docOf([AdminUsersEndpoint, CatalogEndpoint]);
    assert.equal(doc.security, undefined);
    assert.ok((await redoclyLint(doc)).ok);
  });

  it('a declared group that also runs app.kitAuthenticate requires both the scheme and the bearer token', async () => {
    @EndpointGroup('ops', { security: { adminKey: ADMIN_KEY } })
    class OpsEndpoint {
      addRoutes(app: FastifyInstance) {
        app.get('restart', { onRequest: app.kitAuthenticate }, async () => 'ok');
        app.get('ping', async () => 'pong');
      }
    }
    const doc = await docOf([OpsEndpoint], true);
    assert.deepEqual(doc.paths['/api/ops/restart']?.get?.security, [
      { adminKey: [], bearerAuth: [] },
    ]);
    assert.deepEqual(doc.paths['/api/ops/ping']?.get?.security, [{ adminKey: [] }]);
    assert.deepEqual(Object.keys(doc.components?.securitySchemes ?? {}).sort(), [
      'adminKey',
      'bearerAuth',
    ]);
    assert.ok((await redoclyLint(doc)).ok);
  });

  it('two groups declaring one name differently fail useKit with KIT_ERR_SECURITY_SCHEME naming both', async () => {
    @EndpointGroup('billing', {
      security: { adminKey: { type: 'apiKey', in: 'query', name: 'key' } },
    })
    class BillingEndpoint {
      addRoutes(app: FastifyInstance) {
        app.get('', async () => []);
      }
    }
    const app = Fastify();
    addKit(app, [AdminUsersEndpoint, BillingEndpoint], (opt) => {
      opt.openApiPath = false;
    });
    await assert.rejects(useKit(app), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_SECURITY_SCHEME');
      assert.match(err.message, /AdminUsersEndpoint/);
      assert.match(err.message, /BillingEndpoint/);
      return true;
    });
    await app.close();
  });

  it('an invalid scheme, name or the reserved bearerAuth fail at the decorator with KIT_ERR_INVALID_GROUP', () => {
    const bad: unknown[] = [
      { adminKey: { type: 'apiKey', name: 'x' } },
      { adminKey: { type: 'basic' } },
      { 'admin key': ADMIN_KEY },
      { bearerAuth: { type: 'http', scheme: 'bearer' } },
      [ADMIN_KEY],
    ];
    for (const security of bad) {
      assert.throws(
        () => EndpointGroup('x', { security: security as Record<string, typeof ADMIN_KEY> }),
        (err: Error & { code?: string }) => err.code === 'KIT_ERR_INVALID_GROUP',
        JSON.stringify(security),
      );
    }
  });
});
