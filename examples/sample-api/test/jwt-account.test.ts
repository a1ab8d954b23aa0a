// @test-lines: once - the sample's token-scoped routes through Kit's API
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { TestAuthority } from '@kit/test-support/jwt-authority';
import { buildApp } from '../src/app.js';

describe('sample: the protected account group', () => {
  let authority: TestAuthority;
  let app: FastifyInstance;

  before(async () => {
    authority = await TestAuthority.start();
    app = await buildApp({
      adminApiKey: 'k',
      logger: false,
      jwtAuthority: authority.url,
      jwtAudiences: ['api://kit-tests'],
    });
  });
  after(async () => {
    await app.close();
    await authority.stop();
  });

  it("answers 401 without a token and the caller's own data with one", async () => {
    assert.equal((await app.inject('/api/account/me')).statusCode, 401);
    const headers = { authorization: `Bearer ${await authority.sign({ claims: { sub: '1' } })}` };
    const me = await app.inject({ url: '/api/account/me', headers });
    assert.equal(me.statusCode, 200, me.body);
    assert.equal(me.json<{ subject: string }>().subject, '1');
    const orders = await app.inject({ url: '/api/account/orders', headers });
    assert.deepEqual(
      orders.json<Array<{ id: string }>>().map((o) => o.id),
      ['100'],
    );
  });

  it('the document marks the account routes, and only them, with bearer security', async () => {
    const doc = (await app.inject('/openapi.json')).json<{
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    }>();
    assert.deepEqual(doc.paths['/api/account/me']?.get?.security, [{ bearerAuth: [] }]);
    assert.equal(
      doc.paths['/api/users']?.get?.security,
      undefined,
      'no guard Kit can see, none declared: not claimed public',
    );
    assert.deepEqual(doc.paths['/api/admin/users']?.get?.security, [{ adminKey: [] }]);
  });
});

describe('sample: without JWT_AUTHORITY', () => {
  it('starts with no network and leaves the account group out', async () => {
    const app = await buildApp({ adminApiKey: 'k', logger: false });
    assert.equal((await app.inject('/api/account/me')).statusCode, 404);
    assert.equal((await app.inject('/api/users')).statusCode, 200);
    assert.equal(app.kit.healthChecks.has('jwt'), false);
    await app.close();
  });
});
