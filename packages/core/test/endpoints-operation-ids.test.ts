// @test-lines: once - endpoint mapping over inject
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit, type IKitEndpoint } from '@kit/core';
import { operationIdFor } from '../src/endpoints/operation-ids.js';
import { kitApp, openApiOf, operations } from './helpers.js';

class CatalogEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get('', async () => []);
    app.get('items/:id', async () => ({}));
    app.post('items', async () => ({}));
    app.delete('/items/{id}', async () => ({}));
    app.get('price-list/current', async () => ({}));
    app.get('files/*', async () => ({}));
    app.get('manual', { schema: { operationId: 'listCatalogManually' } }, async () => ({}));
    app.get('by-config', { config: { operationId: 'catalogByConfig' } }, async () => ({}));
    app.route({ method: ['PUT', 'PATCH'], url: 'items/:id', handler: async () => ({}) });
  }
}

describe('operationIds', () => {
  it('are {group}_{METHOD}_{path} with / and - as _, parameters by bare name, {group}_{METHOD} at the root', async () => {
    const app = await kitApp([CatalogEndpoint]);
    const ops = operations(await openApiOf(app));
    const ids = Object.fromEntries(Object.entries(ops).map(([k, v]) => [k, v.operationId]));
    assert.deepEqual(ids, {
      'GET /api/catalog': 'catalog_GET',
      'GET /api/catalog/items/{id}': 'catalog_GET_items_id',
      'POST /api/catalog/items': 'catalog_POST_items',
      'DELETE /api/catalog/items/{id}': 'catalog_DELETE_items_id',
      'PUT /api/catalog/items/{id}': 'catalog_PUT_items_id',
      'PATCH /api/catalog/items/{id}': 'catalog_PATCH_items_id',
      'GET /api/catalog/price-list/current': 'catalog_GET_price_list_current',
      'GET /api/catalog/files/{wildcard}': 'catalog_GET_files_wildcard',
      'GET /api/catalog/manual': 'listCatalogManually',
      'GET /api/catalog/by-config': 'catalogByConfig',
    });
    await app.close();
  });

  it('operationIdFor is the same rule, for hosts that need an id in advance', () => {
    assert.equal(operationIdFor('user', 'get', 'profile'), 'user_GET_profile');
    assert.equal(
      operationIdFor('orders@1', 'POST', 'items/:id(^\\d+)/lines'),
      'orders@1_POST_items_id_lines',
    );
    assert.equal(operationIdFor('user', 'DELETE', ''), 'user_DELETE');
  });

  it('a collision between two routes fails useKit naming both', async () => {
    class A implements IKitEndpoint {
      addRoutes(app: FastifyInstance) {
        app.get('x', { schema: { operationId: 'same' } }, async () => 1);
      }
    }
    class B implements IKitEndpoint {
      addRoutes(app: FastifyInstance) {
        app.post('y', { schema: { operationId: 'same' } }, async () => 1);
      }
    }
    Object.defineProperty(A, 'name', { value: 'AlphaEndpoint' });
    Object.defineProperty(B, 'name', { value: 'BetaEndpoint' });
    await assert.rejects(kitApp([A, B]), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_DUPLICATE_OPERATION_ID');
      assert.match(err.message, /'same'/);
      assert.match(err.message, /GET \/api\/alpha\/x/);
      assert.match(err.message, /POST \/api\/beta\/y/);
      return true;
    });
  });

  it('a hand-set id on a host route outside the groups collides too, and the readiness gate stays closed', async () => {
    const app = Fastify();
    addKit(app, [CatalogEndpoint]);
    app.register(async (scope) => {
      scope.get('/legacy', { schema: { operationId: 'catalog_GET' } }, async () => 1);
    });
    await assert.rejects(
      useKit(app),
      /catalog_GET.*GET \/api\/catalog.*GET \/legacy|catalog_GET.*GET \/legacy.*GET \/api\/catalog/,
    );
    assert.equal(app.kit.state, 'starting');
    await app.close();
  });
});

describe('operationId collisions the document would hide', () => {
  it('a hand-set id equal to an id Kit generates for another route fails, even on a multi-method group', async () => {
    class ProfileEndpoint implements IKitEndpoint {
      addRoutes(app: FastifyInstance) {
        app.get('me', async () => 1);
        app.post('me', { schema: { operationId: 'profile_GET_me' } }, async () => 1);
        app.route({ method: ['PUT', 'PATCH'], url: 'other', handler: async () => 1 });
      }
    }
    await assert.rejects(kitApp([ProfileEndpoint]), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_DUPLICATE_OPERATION_ID');
      assert.match(
        err.message,
        /'profile_GET_me'.*GET \/api\/profile\/me.*POST \/api\/profile\/me/,
      );
      return true;
    });
  });

  it('a route added after useKit with a duplicate id makes ready() fail', async () => {
    const app = Fastify();
    addKit(app, [CatalogEndpoint]);
    await useKit(app);
    app.get('/late', { schema: { operationId: 'catalog_GET' } }, async () => 1);
    await assert.rejects(
      async () => {
        await app.ready();
      },
      { code: 'KIT_ERR_DUPLICATE_OPERATION_ID' },
    );
  });
});

describe('OpenAPI document', () => {
  it('documents routes of host plugins (even registered before addKit) and root routes added after addKit', async () => {
    const app = Fastify();
    app.get('/root-before', async () => 1);
    app.register(async (scope) => {
      scope.get('/before-addkit', async () => 1);
    });
    addKit(app, [CatalogEndpoint]);
    app.get('/root-between', async () => 1);
    app.register(async (scope) => {
      scope.get('/plugin-between', async () => 1);
    });
    await useKit(app);
    app.get('/root-after', async () => 1);
    await app.ready();
    const paths = Object.keys((await openApiOf(app)).paths);
    for (const p of [
      '/before-addkit',
      '/root-between',
      '/plugin-between',
      '/root-after',
      '/api/catalog/items/{id}',
    ]) {
      assert.ok(paths.includes(p), `${p} in ${paths.join(', ')}`);
    }
    // Plugins load lazily, after addKit attached the collector; a root route declared before it is not seen.
    assert.ok(
      !paths.includes('/root-before'),
      'root routes declared before addKit are not documented (README)',
    );
    await app.close();
  });

  it('is OpenAPI 3.1 at /openapi.json with the host package title and version, and serves the reference UI at /docs', async () => {
    const app = await kitApp([CatalogEndpoint], (opt) => {
      opt.openApiInfo = { title: 'Catalog', description: 'things' };
      opt.applicationVersion = '9.8.7';
    });
    const doc = await openApiOf(app);
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.title, 'Catalog');
    assert.equal(doc.info.version, '9.8.7');
    const ui = await app.inject('/docs/');
    assert.equal(ui.statusCode, 200);
    assert.match(String(ui.headers['content-type']), /text\/html/);
    assert.doesNotMatch(
      ui.body,
      /https?:\/\/(cdn|unpkg|cdnjs|jsdelivr)/,
      'assets are served locally',
    );
    const asset = await app.inject('/docs/static/swagger-ui-bundle.js');
    assert.equal(asset.statusCode, 200);
    await app.close();
  });

  it('docsPath=false turns the UI off; openApiPath=false turns both off; custom paths work', async () => {
    const noUi = await kitApp([CatalogEndpoint], (opt) => {
      opt.docsPath = false;
    });
    assert.equal((await noUi.inject('/docs/')).statusCode, 404);
    assert.equal((await noUi.inject('/openapi.json')).statusCode, 200);
    await noUi.close();

    const none = await kitApp([CatalogEndpoint], (opt) => {
      opt.openApiPath = false;
    });
    assert.equal((await none.inject('/openapi.json')).statusCode, 404);
    assert.equal((await none.inject('/docs/')).statusCode, 404);
    assert.equal((await none.inject('/api/catalog/items/1')).statusCode, 200);
    await none.close();

    const custom = await kitApp([CatalogEndpoint], (opt) => {
      opt.openApiPath = '/spec/v1.json';
      opt.docsPath = '/reference';
    });
    assert.equal((await custom.inject('/spec/v1.json')).statusCode, 200);
    assert.equal((await custom.inject('/reference/')).statusCode, 200);
    await custom.close();
  });
});
