// @test-lines: once - the OpenAPI document over inject
// Shared schemas added with addSchema appear in the document as components named by their $id.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { IKitEndpoint } from '@kit/core';
import { kitApp, openApiOf } from './helpers.js';
import { redoclyLint } from '@kit/test-support/redocly';

class MoneyEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    // Added inside a group, as a plugin's generated routes do.
    app.addSchema({
      $id: 'Money',
      type: 'object',
      required: ['amount'],
      properties: { amount: { type: 'number' }, currency: { type: 'string' } },
    });
    app.addSchema({
      $id: 'http://example.com/schemas/note.json',
      type: 'object',
      properties: { text: { type: 'string' } },
    });
    app.get('{id}', { schema: { response: { 200: { $ref: 'Money#' } } } }, async () => ({
      amount: 1,
      currency: 'EUR',
    }));
    app.post(
      '',
      { schema: { body: { $ref: 'http://example.com/schemas/note.json#' } } },
      async () => ({ ok: true }),
    );
  }
}

describe('OpenAPI components', () => {
  it('a schema added with addSchema({ $id }) is the component named by its $id, referenced from the route', async () => {
    const app = await kitApp([MoneyEndpoint]);
    const doc = (await openApiOf(app)) as unknown as {
      components: { schemas: Record<string, unknown> };
      paths: Record<string, Record<string, unknown>>;
    };
    assert.ok(
      doc.components.schemas.Money,
      `components: ${Object.keys(doc.components.schemas).join(', ')}`,
    );
    assert.match(
      JSON.stringify(doc.paths['/api/money/{id}']?.get),
      /"\$ref":"#\/components\/schemas\/Money"/,
    );
    // An $id that is no valid component name keeps swagger's def-N name.
    assert.ok(Object.keys(doc.components.schemas).some((name) => /^def-\d+$/.test(name)));
    assert.deepEqual((await app.inject('/api/money/1')).json(), { amount: 1, currency: 'EUR' });
    const { ok, output } = await redoclyLint(doc);
    assert.ok(ok, output);
    await app.close();
  });
});
