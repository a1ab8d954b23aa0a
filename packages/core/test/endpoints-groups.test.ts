// @test-lines: once - endpoint mapping over inject
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import {
  EndpointGroup,
  KitEndpoint,
  KitHttpMethod,
  KitMethod,
  KitTag,
  type IKitEndpoint,
} from '@kit/core';
import { endpoint, kitApp, openApiOf, operations } from './helpers.js';

@EndpointGroup('admin')
class AdminUsers implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.addHook('onRequest', async (request, reply) => {
      if (request.headers['x-key'] !== 'secret') await reply.code(401).send({ message: 'no key' });
    });
    app.get('users', async () => ['ada']);
  }
}

@EndpointGroup('admin')
class AdminJobs implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get('jobs', async () => ['nightly']);
  }
}

class PublicEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get('hello', async () => 'hi');
  }
}

describe('route groups', () => {
  for (const order of [
    [AdminUsers, AdminJobs, PublicEndpoint],
    [AdminJobs, PublicEndpoint, AdminUsers],
  ]) {
    it(`a hook added by one class of a group guards every route of the group and no other (order ${order.map((c) => c.name).join(', ')})`, async () => {
      const app = await kitApp(order);
      assert.equal((await app.inject('/api/admin/users')).statusCode, 401);
      assert.equal(
        (await app.inject('/api/admin/jobs')).statusCode,
        401,
        'the other class of the group is guarded too',
      );
      assert.equal(
        (await app.inject({ url: '/api/admin/jobs', headers: { 'x-key': 'secret' } })).statusCode,
        200,
      );
      assert.equal(
        (await app.inject('/api/public/hello')).statusCode,
        200,
        'another group is not guarded',
      );
      const ops = operations(await openApiOf(app));
      assert.deepEqual(ops['GET /api/admin/users']?.tags, ['admin']);
      assert.deepEqual(ops['GET /api/admin/jobs']?.tags, ['admin']);
      await app.close();
    });
  }

  it('relative paths: "", "/", "x", "/x", "{id}" and ":id" all land under the group prefix', async () => {
    const app = await kitApp([
      endpoint('ShapesEndpoint', [
        ['GET', ''],
        ['POST', '/'],
        ['GET', 'plain'],
        ['GET', '/slashed'],
        ['GET', 'items/{id}'],
        ['GET', 'things/:thingId/parts/{partId}'],
      ]),
    ]);
    for (const [method, url] of [
      ['GET', '/api/shapes'],
      ['POST', '/api/shapes'],
      ['GET', '/api/shapes/plain'],
      ['GET', '/api/shapes/slashed'],
      ['GET', '/api/shapes/items/7'],
      ['GET', '/api/shapes/things/1/parts/2'],
    ] as const) {
      const res = await app.inject({ method, url });
      assert.equal(res.statusCode, 200, `${method} ${url}`);
    }
    assert.deepEqual((await app.inject('/api/shapes/items/7')).json<{ params: unknown }>().params, {
      id: '7',
    });
    assert.deepEqual(
      (await app.inject('/api/shapes/things/1/parts/2')).json<{ params: unknown }>().params,
      { thingId: '1', partId: '2' },
    );
    assert.equal((await app.inject('/api/shapesplain')).statusCode, 404, 'no glued prefix');
    await app.close();
  });

  it('a plugin registered inside addRoutes keeps its own prefix below the group, in the URL and the operationId', async () => {
    class UserEndpoint implements IKitEndpoint {
      addRoutes(app: FastifyInstance) {
        app.get('', async () => 'root');
        app.register(
          async (sub) => {
            sub.get('', async () => 'settings root');
            sub.get('theme', async () => 'dark');
            sub.get('/items/{id}', async (req) => req.params);
          },
          { prefix: 'settings' },
        );
      }
    }
    const app = await kitApp([UserEndpoint]);
    assert.equal((await app.inject('/api/user')).body, 'root');
    assert.equal((await app.inject('/api/user/settings')).body, 'settings root');
    assert.equal((await app.inject('/api/user/settings/theme')).body, 'dark');
    assert.deepEqual((await app.inject('/api/user/settings/items/3')).json(), { id: '3' });
    assert.equal((await app.inject('/api/user/theme')).statusCode, 404);
    const ids = Object.fromEntries(
      Object.entries(operations(await openApiOf(app))).map(([k, v]) => [k, v.operationId]),
    );
    assert.deepEqual(ids, {
      'GET /api/user': 'user_GET',
      'GET /api/user/settings': 'user_GET_settings',
      'GET /api/user/settings/theme': 'user_GET_settings_theme',
      'GET /api/user/settings/items/{id}': 'user_GET_settings_items_id',
    });
    await app.close();
  });

  it('%40 in a request path reaches the @ route, over inject and a real socket, keeping the query', async () => {
    const app = await kitApp([
      endpoint('OrdersV1Endpoint', [['GET', 'list']], (a) =>
        a.get('echo', async (req) => req.query),
      ),
    ]);
    assert.equal((await app.inject('/api/orders@1/list')).statusCode, 200);
    assert.equal((await app.inject('/api/orders%401/list')).statusCode, 200);
    assert.deepEqual((await app.inject('/api/orders%401/echo?at=%40x')).json(), { at: '@x' });
    assert.equal(
      (await app.inject('/api/orders%402/list')).statusCode,
      404,
      'an unknown version stays 404',
    );
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    const res = await fetch(`${address}/api/orders%401/list`);
    assert.equal(res.status, 200);
    await app.close();
  });
});

describe('tags', () => {
  @KitTag('Orders')
  @KitTag('Public')
  @KitTag('Orders')
  class TaggedEndpoint implements IKitEndpoint {
    addRoutes(app: FastifyInstance) {
      app.get('a', async () => 'a');
      app.get('b', { schema: { tags: ['Special'] } }, async () => 'b');
    }
  }

  @EndpointGroup('shared')
  @KitTag('Zeta')
  class SharedOne implements IKitEndpoint {
    addRoutes(app: FastifyInstance) {
      app.get('one', async () => 1);
    }
  }

  @EndpointGroup('shared')
  @KitTag('Alpha')
  @KitTag('Zeta')
  class SharedTwo implements IKitEndpoint {
    addRoutes(app: FastifyInstance) {
      app.get('two', async () => 2);
    }
  }

  it('@KitTag replaces the default tag, in declaration order, de-duplicated; route-level tags win', async () => {
    const app = await kitApp([
      TaggedEndpoint,
      SharedOne,
      SharedTwo,
      endpoint('PlainEndpoint', [['GET', 'p']]),
    ]);
    const doc = await openApiOf(app);
    const ops = operations(doc);
    assert.deepEqual(ops['GET /api/tagged/a']?.tags, ['Orders', 'Public']);
    assert.deepEqual(ops['GET /api/tagged/b']?.tags, ['Special']);
    assert.deepEqual(
      ops['GET /api/shared/one']?.tags,
      ['Zeta', 'Alpha'],
      'merged across the classes of a group',
    );
    assert.deepEqual(ops['GET /api/shared/two']?.tags, ['Zeta', 'Alpha']);
    assert.deepEqual(ops['GET /api/plain/p']?.tags, ['plain'], 'default tag is the group name');
    assert.deepEqual(
      doc.tags.map((t) => t.name).sort(),
      ['Alpha', 'Orders', 'Public', 'Special', 'Zeta', 'plain'],
      'the top-level tags list every tag in use',
    );
    await app.close();
  });
});

describe('deprecated @KitEndpoint / @KitMethod', () => {
  it('maps each @KitMethod with group, tag and operationId, calls it with (request, reply), warns once per class', async () => {
    @KitEndpoint()
    class LegacyReportsEndpoint {
      readonly prefix = 'report';
      @KitMethod('daily/{day}', KitHttpMethod.GET)
      daily(request: { params: { day: string } }) {
        return { name: `${this.prefix}-${request.params.day}` };
      }
      @KitMethod('', KitHttpMethod.POST)
      create(_request: unknown, reply: { code(n: number): { send(v: unknown): unknown } }) {
        return reply.code(201).send({ created: true });
      }
    }
    const warnings: Error[] = [];
    const onWarning = (w: Error) => {
      if ((w as Error & { code?: string }).code === 'KIT_DEP_KIT_ENDPOINT') warnings.push(w);
    };
    process.on('warning', onWarning);
    try {
      const first = await kitApp([LegacyReportsEndpoint]);
      const second = await kitApp([LegacyReportsEndpoint]);
      await new Promise((r) => setImmediate(r));
      assert.equal(warnings.length, 1, 'one warning per class, however often it is mapped');
      assert.equal(warnings[0]?.name, 'DeprecationWarning');
      assert.match(
        warnings[0]?.message ?? '',
        /LegacyReportsEndpoint.*deprecated since @kit\/core 0\.1\.0 and to be removed in @kit\/core 0\.2\.0.*IKitEndpoint/,
      );
      assert.deepEqual((await first.inject('/api/legacyReports/daily/mon')).json(), {
        name: 'report-mon',
      });
      const created = await first.inject({ method: 'POST', url: '/api/legacyReports' });
      assert.equal(created.statusCode, 201);
      const ops = operations(await openApiOf(first));
      assert.equal(
        ops['GET /api/legacyReports/daily/{day}']?.operationId,
        'legacyReports_GET_daily_day',
      );
      assert.equal(ops['POST /api/legacyReports']?.operationId, 'legacyReports_POST');
      assert.deepEqual(ops['GET /api/legacyReports/daily/{day}']?.tags, ['legacyReports']);
      await first.close();
      await second.close();
    } finally {
      process.off('warning', onWarning);
    }
  });
});
