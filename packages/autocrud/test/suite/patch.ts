// PATCH /{pk} with a JSON Merge Patch on one engine: only the named fields change, null clears a
// nullable field, every bad input is a 400 naming it with nothing changed, If-Match and
// requireIfMatch as for PUT, and of N concurrent patches holding one ETag exactly one wins.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { KitError } from '@kit/core';
import { KIT_AUTOCRUD, type KitAutoCrud } from '@kit/autocrud';
import {
  assertBadParameter,
  assertProblem,
  call,
  crudApp,
  Document,
  racingWrites,
  Product,
  suiteTables,
  type EngineUnderTest,
} from './fixtures.ts';

interface DocumentRow {
  id: number;
  title: string;
  words?: number | null;
  version: number;
  isArchived: boolean;
}

const MERGE_PATCH = 'application/merge-patch+json';

function patch(
  app: FastifyInstance,
  url: string,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return call(app, {
    method: 'PATCH',
    url,
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    headers: { 'content-type': MERGE_PATCH, ...headers },
  });
}

export function patchSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud PATCH (JSON Merge Patch) on ${engine.name}`, () => {
    let app: FastifyInstance;
    const stored = async (table: string, id: number) =>
      (await engine.sql(`select * from ${table} where id = ${id}`))[0];
    const product = async (name: string, extra: Record<string, unknown> = {}) => {
      const res = await call(app, {
        method: 'POST',
        url: '/api/product',
        payload: { name, price: 2, stock: 7, tag: 'kept', ...extra },
      });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: number }>().id;
    };
    const document = async (title: string) => {
      const res = await call(app, {
        method: 'POST',
        url: '/api/documents',
        payload: { title, words: 3 },
      });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<DocumentRow>().id;
    };

    before(async () => {
      for (const statement of suiteTables(engine.flavour)) await engine.sql(statement);
      app = await crudApp(engine);
    });
    after(async () => {
      await app?.close();
    });

    it('changes only the fields the patch names, as application/merge-patch+json and as application/json, and answers the stored row', async () => {
      const id = await product('patched');
      const res = await patch(app, `/api/product/${id}`, { price: 3.5 });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), {
        id,
        name: 'patched',
        price: 3.5,
        stock: 7,
        tag: 'kept',
        isDeleted: false,
      });
      const plain = await call(app, {
        method: 'PATCH',
        url: `/api/product/${id}`,
        payload: { tag: 'plain json' },
      });
      assert.equal(plain.statusCode, 200, plain.body);
      assert.deepEqual(plain.json(), {
        id,
        name: 'patched',
        price: 3.5,
        stock: 7,
        tag: 'plain json',
        isDeleted: false,
      });
      const charset = await patch(
        app,
        `/api/product/${id}`,
        { stock: 8 },
        { 'content-type': `${MERGE_PATCH}; charset=utf-8` },
      );
      assert.equal(charset.json<{ stock: number }>().stock, 8);
      const row = await stored('products', id);
      assert.deepEqual(
        [row?.name, Number(row?.price), Number(row?.stock), row?.tag],
        ['patched', 3.5, 8, 'plain json'],
      );
      assert.deepEqual((await call(app, `/api/product/${id}`)).json(), charset.json());
    });

    it('null clears a nullable field; null for a field that is not nullable is a 400 naming it, nothing changed', async () => {
      const id = await product('nulls');
      const cleared = await patch(app, `/api/product/${id}`, { stock: null, tag: null });
      assert.equal(cleared.statusCode, 200, cleared.body);
      assert.deepEqual(cleared.json(), {
        id,
        name: 'nulls',
        price: 2,
        stock: null,
        tag: null,
        isDeleted: false,
      });
      const row = await stored('products', id);
      assert.equal(row?.stock, null);
      assert.equal(row?.tag, null);
      for (const field of ['name', 'price']) {
        assertBadParameter(
          await patch(app, `/api/product/${id}`, { [field]: null, stock: 1 }),
          'body',
          field,
        );
      }
      const after = await stored('products', id);
      assert.deepEqual([after?.name, Number(after?.price), after?.stock], ['nulls', 2, null]);
    });

    it('a read-only, unknown, prototype or wrongly typed key is a 400 naming it, and nothing changes', async () => {
      const id = await product('hostile');
      const before = await stored('products', id);
      const cases: Array<[string, string, RegExp?]> = [
        ['{"id": 99, "price": 9}', 'id', /read-only/],
        ['{"isDeleted": true}', 'isDeleted', /read-only/],
        ['{"weight": 1, "price": 9}', 'weight', /not a field of Product/],
        ['{"price": 9, "__proto__": {"isDeleted": true}}', '__proto__', /not a field/],
        ['{"price": 9, "\\u005f_proto__": {"isDeleted": true}}', '__proto__', /not a field/],
        ['{"constructor": {"prototype": {"isDeleted": true}}}', 'constructor', /not a field/],
        ['{"price": "9"}', 'price', /number/],
        ['{"price": {"amount": 9}}', 'price', /number/],
        ['{"price": -1}', 'price'],
        ['{"name": ""}', 'name'],
        ['{"stock": 1.5}', 'stock'],
        ['{"tag": "\\u0000"}', 'tag', /NUL/],
        ['{"stock": 9007199254740993}', 'stock', /safe integer/],
      ];
      for (const [payload, name, detail] of cases)
        assertBadParameter(await patch(app, `/api/product/${id}`, payload), 'body', name, detail);
      for (const payload of ['[]', '"price"', '3', 'null'])
        assertBadParameter(await patch(app, `/api/product/${id}`, payload), 'body', '', /object/);
      assertProblem(await patch(app, `/api/product/${id}`, '{"price": 9'), 400);
      assertProblem(
        await call(app, {
          method: 'PATCH',
          url: `/api/product/${id}`,
          payload: 'price=9',
          headers: { 'content-type': 'text/plain' },
        }),
        415,
      );
      assertBadParameter(await patch(app, '/api/product/abc', { price: 9 }), 'params', 'id');
      assert.deepEqual(await stored('products', id), before);
      assert.equal(
        ({} as Record<string, unknown>).isDeleted,
        undefined,
        'no prototype was touched',
      );
    });

    it('an empty patch writes nothing: 200 with the row as it is, the version unchanged (a stale If-Match is still 412)', async () => {
      const id = await document('empty');
      const res = await patch(app, `/api/documents/${id}`, {});
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers.etag, '"1"');
      assert.deepEqual(res.json(), { id, title: 'empty', words: 3, version: 1, isArchived: false });
      assert.equal(Number((await stored('documents', id))?.version), 1);
      assert.equal(
        (await patch(app, `/api/documents/${id}`, {}, { 'if-match': '"1"' })).statusCode,
        200,
      );
      assertProblem(await patch(app, `/api/documents/${id}`, {}, { 'if-match': '"7"' }), 412);
      assertProblem(await patch(app, '/api/documents/424242', {}), 404);
    });

    it('If-Match as for PUT: the current ETag writes and answers the next one; a stale one is 412 with the current ETag; a malformed one 400; nothing changed', async () => {
      const id = await document('conditional');
      const first = await patch(app, `/api/documents/${id}`, { words: 10 }, { 'if-match': '"1"' });
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(first.headers.etag, '"2"');
      assert.deepEqual(first.json(), {
        id,
        title: 'conditional',
        words: 10,
        version: 2,
        isArchived: false,
      });
      const stale = await patch(app, `/api/documents/${id}`, { words: 99 }, { 'if-match': '"1"' });
      assertProblem(stale, 412, 'Precondition Failed');
      assert.equal(stale.headers.etag, '"2"');
      assertBadParameter(
        await patch(app, `/api/documents/${id}`, { words: 99 }, { 'if-match': '2' }),
        'headers',
        'If-Match',
      );
      assert.equal(
        (await patch(app, `/api/documents/${id}`, { title: 'starred' }, { 'if-match': '*' }))
          .headers.etag,
        '"3"',
      );
      const row = await stored('documents', id);
      assert.deepEqual([row?.title, Number(row?.words), Number(row?.version)], ['starred', 10, 3]);
      // Without If-Match a patch writes unconditionally, and still increments the version.
      assert.equal((await patch(app, `/api/documents/${id}`, { words: 11 })).headers.etag, '"4"');
    });

    it('a soft-deleted or missing row is 404; requireIfMatch makes a patch without If-Match 428', async () => {
      const id = await document('gone');
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/documents/${id}` })).statusCode,
        204,
      );
      assertProblem(await patch(app, `/api/documents/${id}`, { words: 1 }), 404);
      assertProblem(
        await patch(app, `/api/documents/${id}`, { words: 1 }, { 'if-match': '"2"' }),
        404,
      );
      assert.equal(Number((await stored('documents', id))?.words), 3);
      const ledger = (
        await call(app, {
          method: 'POST',
          url: '/api/ledgers',
          payload: { label: 'rent', amount: 900 },
        })
      ).json<{ id: number }>().id;
      assertProblem(
        await patch(app, `/api/ledgers/${ledger}`, { amount: 1 }),
        428,
        'Precondition Required',
      );
      assert.equal(Number((await stored('ledgers', ledger))?.amount), 900);
      const ok = await patch(app, `/api/ledgers/${ledger}`, { amount: 950 }, { 'if-match': '"1"' });
      assert.equal(ok.statusCode, 200, ok.body);
      assert.deepEqual(ok.json(), { id: ledger, label: 'rent', amount: 950, revision: 2 });
    });

    it('of ten concurrent patches holding one ETag exactly one wins, the others are 412 (the check is in the UPDATE itself)', async (t) => {
      const id = await document('race');
      const { answers, queued } = await racingWrites(engine, 'documents', 10, (i) =>
        patch(app, `/api/documents/${id}`, { words: 100 + i }, { 'if-match': '"1"' }),
      );
      const won = answers.filter((r) => r.statusCode === 200);
      assert.equal(won.length, 1, answers.map((r) => r.statusCode).join(','));
      assert.equal(answers.filter((r) => r.statusCode === 412).length, 9);
      const row = await stored('documents', id);
      assert.equal(Number(row?.words), won[0]?.json<DocumentRow>().words);
      assert.equal(row?.title, 'race');
      assert.equal(Number(row?.version), 2);
      t.diagnostic(
        `winner: words ${String(row?.words)}${queued ? ' (all ten queued at the table first)' : ''}`,
      );
    });

    it('the repository patches too, and refuses an unknown or read-only field, a wrong-typed value or a null with a KitError, writing nothing', async () => {
      const crud = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD);
      const products = crud.repository(Product);
      const id = await product('repository');
      assert.deepEqual(await products.patch(id, { price: 4 }), {
        id,
        name: 'repository',
        price: 4,
        stock: 7,
        tag: 'kept',
        isDeleted: false,
      });
      for (const bad of [
        { weight: 1 },
        { id: 5 },
        { isDeleted: true },
        { price: '5' },
        { name: 5 },
        { name: null },
        JSON.parse('{"__proto__": {"x": 1}}') as Record<string, unknown>,
      ]) {
        await assert.rejects(
          products.patch(id, bad),
          (err: unknown) => err instanceof KitError && err.code === 'KIT_ERR_INVALID_ARGUMENT',
          JSON.stringify(bad),
        );
      }
      assert.equal(Number((await stored('products', id))?.price), 4);
      assert.equal(await products.patch(424242, { price: 1 }), undefined);
      const documents = crud.repository(Document);
      const doc = await document('repository');
      assert.equal((await documents.patch(doc, { words: 5 }, { ifVersion: [1] }))?.version, 2);
      await assert.rejects(
        documents.patch(doc, { words: 6 }, { ifVersion: [1] }),
        (err: Error & { currentVersion?: number }) => err.currentVersion === 2,
      );
      await assert.rejects(
        documents.patch(doc, {}, { ifVersion: [1] }),
        (err: Error & { currentVersion?: number }) => err.currentVersion === 2,
      );
    });

    it('the document: operationId {group}_PATCH_id, the {name}Patch body (no field required) as merge-patch+json and json, and no PATCH where the class did not ask for it', async () => {
      const doc = (await app.inject('/openapi.json')).json<{
        paths: Record<
          string,
          Record<
            string,
            { operationId: string; requestBody?: { content: Record<string, { schema: unknown }> } }
          >
        >;
        components: {
          schemas: Record<string, { required?: string[]; properties: Record<string, unknown> }>;
        };
      }>();
      const op = doc.paths['/api/product/{id}']?.patch;
      assert.equal(op?.operationId, 'product_PATCH_id');
      assert.deepEqual(Object.keys(op?.requestBody?.content ?? {}).sort(), [
        'application/json',
        MERGE_PATCH,
      ]);
      const body = doc.components.schemas.ProductPatch;
      assert.equal(body?.required, undefined);
      assert.deepEqual(Object.keys(body?.properties ?? {}), ['name', 'price', 'stock', 'tag']);
      assert.equal(doc.paths['/api/documents/{id}']?.patch?.operationId, 'documents_PATCH_id');
      // CrudOperations.All does not include Patch: the reviews class (All) has none.
      assert.equal(doc.paths['/api/reviews/{id}']?.patch, undefined);
      assert.equal(doc.components.schemas.ReviewPatch, undefined);
      assert.equal(
        (await call(app, { method: 'PATCH', url: '/api/reviews/1', payload: { text: 'x' } }))
          .statusCode,
        404,
      );
    });
  });
}
