// @test-lines: once - endpoint mapping over inject
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EndpointFormat, type KitOption } from '@kit/core';
import { endpoint, kitApp, openApiOf, operations } from './helpers.js';

async function groupOf(
  className: string,
  configure?: (opt: KitOption) => void,
): Promise<{ url: string; tag: string | undefined }> {
  const app = await kitApp([endpoint(className, [['GET', 'ping']])], configure);
  const ops = operations(await openApiOf(app));
  const [key, op] = Object.entries(ops)[0] ?? [];
  await app.close();
  assert.ok(key && op, 'one operation');
  return { url: key.replace(/^GET /, ''), tag: op.tags?.[0] };
}

describe('group names', () => {
  // The spec's table: class-derived group name TestUser.
  const table: Array<[EndpointFormat, string]> = [
    [EndpointFormat.CamelCase, 'testUser'],
    [EndpointFormat.SnakeCase, 'test_user'],
    [EndpointFormat.ToLower, 'testuser'],
    [EndpointFormat.UnChanged, 'TestUser'],
  ];
  for (const [format, group] of table) {
    it(`${format}: TestUserEndpoint -> group ${group}, URL /api/${group}/...`, async () => {
      const { url, tag } = await groupOf('TestUserEndpoint', (opt) => {
        opt.format = format;
      });
      assert.equal(url, `/api/${group}/ping`);
      assert.equal(tag, group);
      const app = await kitApp([endpoint('TestUserEndpoint', [['GET', 'ping']])], (opt) => {
        opt.format = format;
      });
      assert.equal((await app.inject(`/api/${group}/ping`)).statusCode, 200);
      await app.close();
    });
  }

  it('CamelCase is the default and lowers a leading capital run like JSON camel-casing', async () => {
    assert.equal((await groupOf('TestUserEndpoint')).url, '/api/testUser/ping');
    assert.equal((await groupOf('HTTPServerEndpoint')).url, '/api/httpServer/ping');
  });

  it('strips Endpoint, Service and Controller at the end, case-insensitively', async () => {
    assert.equal((await groupOf('UsersEndpoint')).url, '/api/users/ping');
    assert.equal((await groupOf('BillingService')).url, '/api/billing/ping');
    assert.equal((await groupOf('CartController')).url, '/api/cart/ping');
    assert.equal((await groupOf('Cartcontroller')).url, '/api/cart/ping');
    assert.equal(
      (await groupOf('EndpointCatalog')).url,
      '/api/endpointCatalog/ping',
      'only at the end',
    );
  });

  it('rewrites the version marker V<n> as @<n>', async () => {
    assert.equal((await groupOf('OrdersV1Endpoint')).url, '/api/orders@1/ping');
    assert.equal((await groupOf('OrdersV12Endpoint')).url, '/api/orders@12/ping');
    assert.equal(
      (
        await groupOf('OrdersV2Endpoint', (opt) => {
          opt.format = EndpointFormat.SnakeCase;
        })
      ).url,
      '/api/orders@2/ping',
    );
  });

  it('custom suffix pattern with a V-digits lookahead and a -v$1 replacement: TestServiceV2 -> /api/test-v2', async () => {
    const custom = (opt: KitOption) => {
      opt.groupNameSuffixPattern =
        '(endpoint|service|services|controller|controllers|apicontroller)(?=V?\\d*$)';
      opt.versionFormatReplacement = '-v$1';
    };
    assert.deepEqual(await groupOf('TestServiceV2', custom), {
      url: '/api/test-v2/ping',
      tag: 'test-v2',
    });
    assert.equal((await groupOf('TestServicesV3', custom)).url, '/api/test-v3/ping');
    assert.equal((await groupOf('TestApiControllerV2', custom)).url, '/api/test-v2/ping');
    assert.equal((await groupOf('TestController', custom)).url, '/api/test/ping');
    assert.equal(
      (
        await groupOf('TestServiceV2', (opt) => {
          custom(opt);
          opt.format = EndpointFormat.UnChanged;
        })
      ).url,
      '/api/Test-v2/ping',
    );
  });

  it('custom version pattern and replacement, given as RegExp', async () => {
    const { url } = await groupOf('ReportsVersion3Endpoint', (opt) => {
      opt.versionFormatPattern = /Version(\d+)/;
      opt.versionFormatReplacement = '_v$1';
    });
    assert.equal(url, '/api/reports_v3/ping');
  });

  it('apiPrefix: custom, multi-segment and empty', async () => {
    assert.equal(
      (
        await groupOf('UserEndpoint', (opt) => {
          opt.apiPrefix = 'svc';
        })
      ).url,
      '/svc/user/ping',
    );
    assert.equal(
      (
        await groupOf('UserEndpoint', (opt) => {
          opt.apiPrefix = '/api/v1/';
        })
      ).url,
      '/api/v1/user/ping',
    );
    assert.equal(
      (
        await groupOf('UserEndpoint', (opt) => {
          opt.apiPrefix = '';
        })
      ).url,
      '/user/ping',
    );
  });

  it('refuses class names changed by a bundler, with a fix in the message', async () => {
    for (const name of ['UsersEndpoint2', '_UsersEndpoint', 'a', 'Zb']) {
      await assert.rejects(
        kitApp([endpoint(name, [['GET', 'x']])]),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'KIT_ERR_CLASS_NAME');
          assert.match(err.message, new RegExp(`'${name}'`));
          assert.match(err.message, /@EndpointGroup/);
          assert.match(err.message, /keep-names/);
          return true;
        },
      );
    }
  });

  it('refuses "." and ".." as group names, explicit or derived', async () => {
    const { EndpointGroup } = await import('@kit/core');
    assert.throws(() => EndpointGroup('..'), { code: 'KIT_ERR_INVALID_GROUP' });
    assert.throws(() => EndpointGroup('.'), { code: 'KIT_ERR_INVALID_GROUP' });
    await assert.rejects(
      kitApp([endpoint('DotsEndpoint', [['GET', 'x']])], (opt) => {
        opt.versionFormatPattern = /^Dots$/;
        opt.versionFormatReplacement = '..';
      }),
      { code: 'KIT_ERR_CLASS_NAME' },
    );
  });
});
