// @test-lines: once - the OpenAPI document over inject
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import { addKit, useKit, type EndpointApp } from '@kit/core';
import { kitApp } from './helpers.js';
import { redoclyLint } from '@kit/test-support/redocly';

const User = Type.Object({ id: Type.String(), name: Type.String() }, { $id: 'User' });
const NewUser = Type.Object({ name: Type.String({ minLength: 1 }) }, { $id: 'NewUser' });

class UsersEndpoint {
  addRoutes(app: EndpointApp<TypeBoxTypeProvider>) {
    app.get('', { schema: { response: { 200: Type.Array(User) } } }, async () => []);
    app.get(
      '{id}',
      { schema: { params: Type.Object({ id: Type.String() }), response: { 200: User } } },
      async (request) => ({ id: request.params.id, name: 'Ada' }),
    );
    app.post('', { schema: { body: NewUser, response: { 201: User } } }, async (request, reply) =>
      reply.code(201).send({ id: '2', name: request.body.name }),
    );
    app.put(
      '{id}',
      {
        schema: {
          params: Type.Object({ id: Type.String() }),
          body: NewUser,
          response: { 200: User },
        },
      },
      async (request) => ({ id: request.params.id, name: request.body.name }),
    );
  }
}

interface Doc {
  paths: Record<
    string,
    Record<
      string,
      {
        requestBody?: { content: Record<string, { schema: unknown }> };
        responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
      }
    >
  >;
  components: { schemas: Record<string, unknown> };
}

describe('schemas with an $id become named component schemas', () => {
  it('every use in a body or response is a $ref to one component; validation is unchanged; lint passes', async () => {
    const app = await kitApp([UsersEndpoint], (opt) => {
      opt.docsPath = false;
    });
    const doc = (await app.inject('/openapi.json')).json<Doc>();
    const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
    assert.deepEqual(doc.components.schemas.User, {
      type: 'object',
      required: ['id', 'name'],
      properties: { id: { type: 'string' }, name: { type: 'string' } },
    });
    assert.ok(doc.components.schemas.NewUser);
    assert.deepEqual(
      doc.paths['/api/users']?.get?.responses['200']?.content?.['application/json']?.schema,
      { type: 'array', items: ref('User') },
    );
    assert.deepEqual(
      doc.paths['/api/users/{id}']?.get?.responses['200']?.content?.['application/json']?.schema,
      ref('User'),
    );
    assert.deepEqual(
      doc.paths['/api/users']?.post?.requestBody?.content['application/json']?.schema,
      ref('NewUser'),
    );
    assert.deepEqual(
      doc.paths['/api/users/{id}']?.put?.requestBody?.content['application/json']?.schema,
      ref('NewUser'),
    );
    assert.ok(!JSON.stringify(doc).includes('$id'), 'no $id left in the document');
    assert.equal(
      (await app.inject({ method: 'POST', url: '/api/users', payload: { name: '' } })).statusCode,
      400,
    );
    assert.equal(
      (await app.inject({ method: 'POST', url: '/api/users', payload: { name: 'Bo' } })).statusCode,
      201,
    );
    const { ok, output } = await redoclyLint(doc);
    assert.ok(ok, output);
    await app.close();
  });

  it('two different schemas with one $id fail start-up with KIT_ERR_SCHEMA_ID naming both routes', async () => {
    class ClashEndpoint {
      addRoutes(app: EndpointApp<TypeBoxTypeProvider>) {
        app.get('a', { schema: { response: { 200: User } } }, async () => ({ id: '1', name: 'a' }));
        app.get(
          'b',
          { schema: { response: { 200: Type.Object({ id: Type.Integer() }, { $id: 'User' }) } } },
          async () => ({ id: 1 }),
        );
      }
    }
    const app = Fastify();
    addKit(app, [ClashEndpoint]);
    await assert.rejects(useKit(app), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_SCHEMA_ID');
      assert.match(err.message, /GET \/api\/clash\/a/);
      assert.match(err.message, /GET \/api\/clash\/b/);
      return true;
    });
    await app.close();
  });
});
