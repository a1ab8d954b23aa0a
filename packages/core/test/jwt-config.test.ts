// @test-lines: once - JWT options
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, HealthCheckResult, KitError, useKit, type KitOption } from '@kit/core';
import { TestAuthority } from '@kit/test-support/jwt-authority';

function addKitError(configure: (opt: KitOption) => void): KitError {
  try {
    addKit(Fastify(), configure);
  } catch (err) {
    assert.ok(err instanceof KitError, String(err));
    return err;
  }
  assert.fail('addKit should have thrown');
}

describe('configureJwt configuration errors', () => {
  const badAuthorities: unknown[] = [
    '',
    'login.example.com/tenant',
    '/tenant',
    'ftp://login.example.com',
    'https://user:secret@login.example.com',
    'https://login.example.com/tenant?x=1',
    'https://login.example.com/tenant#frag',
    42,
    undefined,
  ];
  for (const authority of badAuthorities) {
    it(`authority ${JSON.stringify(authority)}: KIT_ERR_INVALID_OPTION naming the option`, () => {
      const err = addKitError((opt) => opt.configureJwt(authority as string, ['api://x']));
      assert.equal(err.code, 'KIT_ERR_INVALID_OPTION');
      assert.match(err.message, /configureJwt\(authority\)/);
      assert.ok(!err.message.includes('secret'), 'credentials are not echoed whole');
    });
  }

  for (const audiences of [[], [''], [42], 'api://x', undefined]) {
    it(`audiences ${JSON.stringify(audiences)}: KIT_ERR_INVALID_OPTION naming the option`, () => {
      const err = addKitError((opt) =>
        opt.configureJwt('https://login.example.com/tenant', audiences as string[]),
      );
      assert.equal(err.code, 'KIT_ERR_INVALID_OPTION');
      assert.match(err.message, /configureJwt\(audiences\)/);
    });
  }

  it('a host check named "jwt" conflicts with the automatic one', () => {
    const err = addKitError((opt) => {
      opt.healthChecksConfigure = (hc) => hc.addCheck('jwt', () => HealthCheckResult.healthy());
      opt.configureJwt('https://login.example.com/tenant', ['api://x']);
    });
    assert.equal(err.code, 'KIT_ERR_DUPLICATE_HEALTH_CHECK');
    assert.match(err.message, /configureJwt/);
  });

  it('valid configuration registers the jwt check and fetches nothing at start-up', async () => {
    // A real authority that counts what it is asked: start-up must not depend on it.
    const authority = await TestAuthority.start();
    const app = Fastify();
    try {
      const kit = addKit(app, [], (opt) => opt.configureJwt(authority.url, ['api://x']));
      assert.deepEqual(
        kit.healthChecks.registrations().map((r) => r.name),
        ['jwt'],
      );
      await useKit(app);
      await app.ready();
      assert.deepEqual(authority.counts, { discovery: 0, jwks: 0, other: 0 });
    } finally {
      await app.close();
      await authority.stop();
    }
  });
});

describe('app.kitAuthenticate without configureJwt', () => {
  it('the decoration exists on every Kit app', () => {
    const app = Fastify();
    addKit(app, []);
    assert.ok(app.hasDecorator('kitAuthenticate'));
  });

  const RouteLevel = class OrdersEndpoint {
    addRoutes(app: FastifyInstance) {
      app.get('', { onRequest: app.kitAuthenticate }, async () => []);
    }
  };
  const GroupLevel = class AccountEndpoint {
    addRoutes(app: FastifyInstance) {
      app.addHook('onRequest', app.kitAuthenticate);
      app.get('me', async () => ({}));
    }
  };
  for (const cls of [RouteLevel, GroupLevel]) {
    it(`${cls.name}: useKit rejects with KIT_ERR_JWT_NOT_CONFIGURED instead of mapping an unprotected route`, async () => {
      const app = Fastify();
      addKit(app, [cls]);
      await assert.rejects(useKit(app), (err: unknown) => {
        assert.ok(err instanceof KitError);
        assert.equal(err.code, 'KIT_ERR_JWT_NOT_CONFIGURED');
        assert.match(err.message, /opt\.configureJwt\(authority, audiences\)/);
        return true;
      });
    });
  }

  it('apps that never touch it are unaffected, and no jwt check or bearer scheme appears', async () => {
    const app = Fastify();
    const kit = addKit(app, [
      class PingEndpoint {
        addRoutes(a: FastifyInstance) {
          a.get('', async () => 'pong');
        }
      },
    ]);
    await useKit(app);
    assert.equal((await app.inject('/api/ping')).body, 'pong');
    assert.equal(kit.healthChecks.has('jwt'), false);
    const doc = (await app.inject('/openapi.json')).json<{
      components?: { securitySchemes?: object };
    }>();
    assert.equal(doc.components?.securitySchemes, undefined);
    await app.close();
  });
});
