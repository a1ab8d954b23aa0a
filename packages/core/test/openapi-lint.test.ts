// @test-lines: once - the OpenAPI document over inject
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { EndpointGroup, KitTag, type IKitEndpoint } from '@kit/core';
import { kitApp, openApiOf } from './helpers.js';
import { redoclyLint } from '@kit/test-support/redocly';

class OddShapesEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get('', async () => []);
    app.post('/', async () => ({}));
    app.get('files/*', async () => '');
    app.get('items/{id}', async () => ({}));
    app.get('things/:thingId/parts/{partId}', async () => ({}));
    app.route({ method: ['PUT', 'PATCH'], url: 'items/:id', handler: async () => ({}) });
    app.register(async (sub) => sub.get('theme', async () => 'dark'), { prefix: 'settings' });
  }
}

@EndpointGroup('accounts')
@KitTag('Accounts')
class GuardedEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.addHook('onRequest', app.kitAuthenticate);
    app.get('me', async () => ({}));
  }
}

class OrdersV2Endpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get('', async () => []);
  }
}

describe('the generated document passes redocly lint (recommended) with no errors', () => {
  it('for wildcards, multi-method routes, group roots, nested plugins, parameters, version markers and a guarded group', async () => {
    const app = await kitApp([OddShapesEndpoint, GuardedEndpoint, OrdersV2Endpoint], (opt) => {
      opt.configureJwt('https://login.example.com/tenant', ['api://tests']);
    });
    const doc = await openApiOf(app);
    await app.close();
    const { ok, output } = await redoclyLint(doc);
    assert.ok(ok, output);
  });

  it('and the lint fails when the document is broken (the check can fail)', async () => {
    const app = await kitApp([OrdersV2Endpoint]);
    const doc = await openApiOf(app);
    await app.close();
    const op = Object.values(doc.paths)[0]?.get;
    assert.ok(op);
    doc.paths['/duplicate'] = { get: { ...op } };
    const { ok, output } = await redoclyLint(doc);
    assert.equal(ok, false);
    assert.match(output, /operation-operationId-unique/);
  });
});
