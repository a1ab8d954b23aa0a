// @test-lines: once - endpoint mapping over inject
// The route-contributor seam: a decorator from another package attaches a function that describes
// routes for a class; Kit registers them inside the class's group, after every addRoutes of the
// group, skipping any method and path the group's hand-written routes already serve. A
// hand-written replacement keeps the contributed route's guard (its onRequest hooks).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RouteOptions,
} from 'fastify';
import {
  addKit,
  EndpointGroup,
  KitRouteContributor,
  KitTag,
  useKit,
  type IKitEndpoint,
  type RouteContributorContext,
} from '@kit/core';
import { kitApp, openApiOf, operations } from './helpers.js';

// What a plugin's decorator looks like: a factory returning KitRouteContributor(fn).
function Crudish(resource: string) {
  return KitRouteContributor((_group, context: RouteContributorContext): RouteOptions[] => [
    {
      method: 'GET',
      url: '',
      handler: async () => ({ from: 'contributor', resource, list: true }),
    },
    {
      method: 'GET',
      url: '{id}',
      handler: async (req) => ({
        from: 'contributor',
        resource,
        params: req.params,
        context: { ...context, services: undefined, endpoints: undefined },
      }),
    },
    {
      method: ['PUT', 'PATCH'],
      url: '{id}',
      handler: async () => ({ from: 'contributor', resource, write: true }),
    },
  ]);
}

@Crudish('widget')
class WidgetEndpoint {}

@Crudish('gadget')
class GadgetEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    // Same method and path as a contributed route, spelled differently: the hand-written one wins.
    app.get(':gadgetId', async (req) => ({ from: 'hand-written', params: req.params }));
    // PATCH is hand-written; PUT at the same path still comes from the contributor.
    app.patch('{id}', async () => ({ from: 'hand-written', patch: true }));
    // A route added by a plugin registered inside addRoutes counts as hand-written too.
    void app.register(async (sub) => {
      sub.get('/', async () => ({ from: 'hand-written plugin' }));
    });
  }
}

@EndpointGroup('tools')
@KitTag('Tools')
@Crudish('hammer')
class HammerEndpoint {}

@EndpointGroup('tools')
class ToolsHooksEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    // A group-wide hook from another class of the group applies to the contributed routes.
    app.addHook('onSend', async (_req, reply) => {
      reply.header('x-group', 'tools');
    });
    app.get('manual', async () => ({ from: 'hand-written' }));
  }
}

// A contributor whose routes depend on the other classes of the app: it sees the app's whole plan.
const seen: Array<readonly unknown[]> = [];
function Planned() {
  return KitRouteContributor((_group, { endpoints }) => {
    seen.push(endpoints);
    return [
      {
        method: 'GET',
        url: 'plan',
        handler: async () =>
          endpoints.map(({ cls, className, group, prefix }) => ({
            cls: cls.name,
            className,
            group,
            prefix,
          })),
      },
    ];
  });
}
@Planned()
class FirstPlannedEndpoint {}
@EndpointGroup('tools')
@Planned()
class LastPlannedEndpoint {}

describe('route contributors (@KitRouteContributor)', () => {
  it("see every endpoint class of the app with its group and prefix, before any group's routes are made; one frozen array per app", async () => {
    seen.length = 0;
    const app = await kitApp([FirstPlannedEndpoint, WidgetEndpoint, LastPlannedEndpoint]);
    const plan = [
      {
        cls: 'FirstPlannedEndpoint',
        className: 'FirstPlannedEndpoint',
        group: 'firstPlanned',
        prefix: '/api/firstPlanned',
      },
      {
        cls: 'WidgetEndpoint',
        className: 'WidgetEndpoint',
        group: 'widget',
        prefix: '/api/widget',
      },
      {
        cls: 'LastPlannedEndpoint',
        className: 'LastPlannedEndpoint',
        group: 'tools',
        prefix: '/api/tools',
      },
    ];
    // The first group's contributor already sees the last class.
    assert.deepEqual((await app.inject('/api/firstPlanned/plan')).json(), plan);
    assert.deepEqual((await app.inject('/api/tools/plan')).json(), plan);
    assert.equal(seen.length, 2);
    assert.equal(seen[0], seen[1]);
    assert.ok(Object.isFrozen(seen[0]));
    await app.close();
  });

  it('make a class without addRoutes an endpoint class; its routes get the group prefix, operationIds and tags', async () => {
    const app = await kitApp([WidgetEndpoint]);
    const list = await app.inject('/api/widget');
    assert.equal(list.statusCode, 200);
    assert.deepEqual(list.json(), { from: 'contributor', resource: 'widget', list: true });
    const one = await app.inject('/api/widget/7');
    assert.deepEqual(one.json<{ params: unknown; context: unknown }>().params, { id: '7' });
    assert.deepEqual(one.json<{ context: unknown }>().context, {
      className: 'WidgetEndpoint',
      group: 'widget',
      prefix: '/api/widget',
    });
    assert.equal((await app.inject({ method: 'PATCH', url: '/api/widget/7' })).statusCode, 200);
    const ops = operations(await openApiOf(app));
    assert.equal(ops['GET /api/widget']?.operationId, 'widget_GET');
    assert.equal(ops['GET /api/widget/{id}']?.operationId, 'widget_GET_id');
    assert.equal(ops['PUT /api/widget/{id}']?.operationId, 'widget_PUT_id');
    assert.equal(ops['PATCH /api/widget/{id}']?.operationId, 'widget_PATCH_id');
    assert.deepEqual(ops['GET /api/widget/{id}']?.tags, ['widget']);
    await app.close();
  });

  it('a hand-written route of the same method and path wins (parameter names and spelling aside), also from a nested plugin', async () => {
    const app = await kitApp([GadgetEndpoint]);
    assert.deepEqual((await app.inject('/api/gadget/3')).json(), {
      from: 'hand-written',
      params: { gadgetId: '3' },
    });
    assert.deepEqual((await app.inject({ method: 'PATCH', url: '/api/gadget/3' })).json(), {
      from: 'hand-written',
      patch: true,
    });
    assert.deepEqual((await app.inject({ method: 'PUT', url: '/api/gadget/3' })).json(), {
      from: 'contributor',
      resource: 'gadget',
      write: true,
    });
    assert.deepEqual((await app.inject('/api/gadget')).json(), { from: 'hand-written plugin' });
    await app.close();
  });

  for (const order of [
    [HammerEndpoint, ToolsHooksEndpoint],
    [ToolsHooksEndpoint, HammerEndpoint],
  ]) {
    it(`contributed routes share the group context with its other classes (order ${order.map((c) => c.name).join(', ')})`, async () => {
      const app = await kitApp(order);
      const res = await app.inject('/api/tools/1');
      assert.equal(res.json<{ resource: string }>().resource, 'hammer');
      assert.equal(
        res.headers['x-group'],
        'tools',
        'the hook of another class of the group applies',
      );
      assert.equal((await app.inject('/api/tools/manual')).statusCode, 200);
      const ops = operations(await openApiOf(app));
      assert.deepEqual(ops['GET /api/tools/{id}']?.tags, ['Tools']);
      await app.close();
    });
  }

  it('two contributors describing the same route in one group fail start-up (Fastify names the route)', async () => {
    @EndpointGroup('twice')
    @Crudish('a')
    class TwiceA {}
    @EndpointGroup('twice')
    @Crudish('b')
    class TwiceB {}
    const app = Fastify();
    addKit(app, [TwiceA, TwiceB]);
    await assert.rejects(useKit(app), /already declared for route '\/api\/twice'/);
  });

  it('a contributor that throws fails start-up with its error', async () => {
    @KitRouteContributor(() => {
      throw new Error('entity Product is not registered');
    })
    class BrokenEndpoint {}
    const app = Fastify();
    addKit(app, [BrokenEndpoint]);
    await assert.rejects(useKit(app), /entity Product is not registered/);
  });

  describe('a hand-written replacement keeps the guard of the route it replaces', () => {
    const calls: string[] = [];
    // A guard as an authentication hook is one: 401 without the header, else on to the route.
    const guard = async (request: FastifyRequest, reply: FastifyReply) => {
      calls.push(request.url);
      if (request.headers['x-token'] !== 'ok') return reply.code(401).send({ guarded: true });
      return undefined;
    };
    const Guarded = KitRouteContributor(() => [
      { method: 'GET', url: '', onRequest: guard, handler: async () => ({ from: 'contributor' }) },
      {
        method: 'GET',
        url: '{id}',
        onRequest: [guard],
        handler: async () => ({ from: 'contributor' }),
      },
      {
        method: ['PUT', 'DELETE'],
        url: '{id}',
        onRequest: guard,
        handler: async () => ({ from: 'contributor' }),
      },
      { method: 'GET', url: 'open', handler: async () => ({ from: 'contributor', open: true }) },
    ]);

    @Guarded
    class VaultEndpoint implements IKitEndpoint {
      addRoutes(app: FastifyInstance) {
        // The docs' replacement: no guard of its own.
        app.get('{vaultId}', async () => ({ from: 'hand-written' }));
        // Its own guard already: not run twice.
        app.put('{id}', { onRequest: guard }, async () => ({ from: 'hand-written put' }));
        // Public on purpose.
        app.delete('{id}', { config: { kitPublic: true } }, async () => ({
          from: 'hand-written public delete',
        }));
        // Replacing a route that had no guard adds none.
        app.get('open', async () => ({ from: 'hand-written open' }));
        // From a plugin registered inside addRoutes, too.
        void app.register(async (sub) => {
          sub.get('/', async () => ({ from: 'hand-written plugin' }));
        });
      }
    }

    it('answers 401 without the token where the generated route would, runs the guard once, and leaves opt-outs and unguarded routes open', async () => {
      const app = await kitApp([VaultEndpoint]);
      try {
        const token = { 'x-token': 'ok' };
        for (const url of ['/api/vault', '/api/vault/7']) {
          assert.equal((await app.inject(url)).statusCode, 401, url);
          assert.equal(
            (await app.inject({ url, headers: token })).json<{ from: string }>().from,
            url.endsWith('7') ? 'hand-written' : 'hand-written plugin',
          );
        }
        assert.equal((await app.inject({ method: 'PUT', url: '/api/vault/7' })).statusCode, 401);
        calls.length = 0;
        assert.equal(
          (await app.inject({ method: 'PUT', url: '/api/vault/7', headers: token })).json<{
            from: string;
          }>().from,
          'hand-written put',
        );
        assert.deepEqual(calls, ['/api/vault/7'], 'the guard runs once');
        assert.deepEqual((await app.inject({ method: 'DELETE', url: '/api/vault/7' })).json(), {
          from: 'hand-written public delete',
        });
        assert.deepEqual((await app.inject('/api/vault/open')).json(), {
          from: 'hand-written open',
        });
      } finally {
        await app.close();
      }
    });
  });

  it('refuses a contributor that is not a function', () => {
    assert.throws(() => KitRouteContributor('nope' as never), { code: 'KIT_ERR_INVALID_ROUTE' });
  });
});
