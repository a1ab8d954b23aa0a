// The conformance suite: every generated route, filter operator, sort, paging edge, soft and hard
// delete, the writable-field rule, a hand-written route winning, and the error answers, on one
// engine. Each engine's test file runs it against its own database.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import {
  assertBadParameter,
  call,
  countRows,
  crudApp,
  names,
  seenBodies,
  suiteTables,
  type EngineUnderTest,
} from './fixtures.ts';

interface ProductRow {
  id: number;
  name: string;
  price: number;
  stock?: number | null;
  tag?: string | null;
  isDeleted: boolean;
}

const SEED = [
  { name: 'apple', price: 1.5, stock: 10, tag: 'fruit' },
  { name: 'banana', price: 0.25, stock: null, tag: 'fruit' },
  { name: 'carrot', price: 0.8, stock: 5 },
  { name: 'dragon_fruit%', price: 7, stock: 0, tag: 'exotic' },
  { name: 'durian', price: 12.5, stock: 2, tag: 'Fruit' },
];

export function crudSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud conformance on ${engine.name}`, () => {
    let app: FastifyInstance;
    const ids: Record<string, number> = {};

    before(async () => {
      for (const statement of suiteTables(engine.flavour)) await engine.sql(statement);
      app = await crudApp(engine);
      for (const product of SEED) {
        const res = await call(app, { method: 'POST', url: '/api/product', payload: product });
        assert.equal(res.statusCode, 201, res.body);
        ids[product.name] = res.json<ProductRow>().id;
      }
    });
    after(async () => {
      await app?.close();
    });

    it('POST answers 201, a Location naming the row, and the row as read back from the database', async () => {
      const res = await call(app, {
        method: 'POST',
        url: '/api/product',
        payload: { name: 'eggplant', price: 3 },
      });
      assert.equal(res.statusCode, 201, res.body);
      const row = res.json<ProductRow>();
      assert.equal(res.headers.location, `/api/product/${row.id}`);
      assert.deepEqual(row, {
        id: row.id,
        name: 'eggplant',
        price: 3,
        stock: null,
        tag: null,
        isDeleted: false,
      });
      assert.deepEqual((await call(app, res.headers.location as string)).json(), row);
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/product/${row.id}` })).statusCode,
        204,
      );
    });

    it('GET / answers { items, total, page, pageSize, totalPages, next }, by primary key', async () => {
      const res = await call(app, '/api/product');
      assert.equal(res.statusCode, 200);
      const body = res.json<{
        items: ProductRow[];
        total: number;
        page: number;
        pageSize: number;
        totalPages: number;
      }>();
      assert.deepEqual(
        { ...body, items: undefined },
        { items: undefined, total: 5, page: 1, pageSize: 20, totalPages: 1, next: null },
      );
      assert.deepEqual(
        body.items.map((i) => i.name),
        SEED.map((s) => s.name),
      );
      assert.deepEqual(body.items[1], {
        id: ids.banana,
        name: 'banana',
        price: 0.25,
        stock: null,
        tag: 'fruit',
        isDeleted: false,
      });
    });

    it('paging: page and pageSize, a page past the end, pageSize clamped to the maximum, out-of-range values refused', async () => {
      const second = await call(app, '/api/product?pageSize=2&page=2');
      assert.deepEqual(names(second), ['carrot', 'dragon_fruit%']);
      assert.equal(second.json<{ totalPages: number }>().totalPages, 3);
      const past = await call(app, '/api/product?pageSize=2&page=9');
      assert.deepEqual(past.json(), {
        items: [],
        total: 5,
        page: 9,
        pageSize: 2,
        totalPages: 3,
        next: null,
      });
      assert.equal(
        (await call(app, '/api/product?pageSize=5000')).json<{ pageSize: number }>().pageSize,
        100,
      );
      // Only decimal integer literals are integers: 1e300 is not one (it was clamped to 100 before).
      assertBadParameter(
        await call(app, '/api/product?pageSize=1e300'),
        'querystring',
        'pageSize',
        /decimal integer/,
      );
      assertBadParameter(await call(app, '/api/product?page=0'), 'querystring', 'page');
      assertBadParameter(await call(app, '/api/product?page=1000001'), 'querystring', 'page');
      assertBadParameter(
        await call(app, '/api/product?page=2.5'),
        'querystring',
        'page',
        /integer/,
      );
      assertBadParameter(await call(app, '/api/product?pageSize=0'), 'querystring', 'pageSize');
      assertBadParameter(await call(app, '/api/product?pageSize=-3'), 'querystring', 'pageSize');
      assertBadParameter(
        await call(app, '/api/product?page=abc'),
        'querystring',
        'page',
        /integer/,
      );
      assert.equal((await call(app, '/api/product?page=1000000')).statusCode, 200);
    });

    it('sort: ascending and descending keys, NULLs last ascending and first descending, only real fields', async () => {
      assert.deepEqual(names(await call(app, '/api/product?sort=-price')), [
        'durian',
        'dragon_fruit%',
        'apple',
        'carrot',
        'banana',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?sort=stock')), [
        'dragon_fruit%',
        'durian',
        'carrot',
        'apple',
        'banana',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?sort=-stock')), [
        'banana',
        'apple',
        'carrot',
        'durian',
        'dragon_fruit%',
      ]);
      // (durian's tag 'Fruit' is left out: where capitals sort depends on the database's collation)
      assert.deepEqual(
        names(await call(app, '/api/product?sort=tag,-name&filter[name][ne]=durian')),
        ['dragon_fruit%', 'banana', 'apple', 'carrot'],
      );
      assertBadParameter(
        await call(app, '/api/product?sort=weight'),
        'querystring',
        'sort',
        /fields of Product/,
      );
      assertBadParameter(
        await call(app, '/api/product?sort=name,-name'),
        'querystring',
        'sort',
        /twice/,
      );
      assertBadParameter(await call(app, '/api/product?sort=is_deleted'), 'querystring', 'sort');
    });

    it('filters: eq (both spellings), ne, gt, gte, lt, lte on numbers; all conditions must hold', async () => {
      assert.deepEqual(names(await call(app, '/api/product?filter[name]=apple')), ['apple']);
      assert.deepEqual(names(await call(app, '/api/product?filter[name][eq]=apple')), ['apple']);
      assert.deepEqual(names(await call(app, '/api/product?filter[price][eq]=0.25')), ['banana']);
      assert.deepEqual(names(await call(app, '/api/product?filter[tag][ne]=fruit')), [
        'dragon_fruit%',
        'durian',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?filter[price][gt]=1.5')), [
        'dragon_fruit%',
        'durian',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?filter[price][gte]=1.5')), [
        'apple',
        'dragon_fruit%',
        'durian',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?filter[price][lt]=0.8')), ['banana']);
      assert.deepEqual(names(await call(app, '/api/product?filter[price][lte]=0.8')), [
        'banana',
        'carrot',
      ]);
      assert.deepEqual(
        names(
          await call(
            app,
            '/api/product?filter[price][gt]=0.5&filter[price][lt]=10&filter[tag]=fruit',
          ),
        ),
        ['apple'],
      );
      assert.deepEqual(
        names(await call(app, `/api/product?filter[id][gte]=${ids.carrot}&sort=-id`)),
        ['durian', 'dragon_fruit%', 'carrot'],
      );
      assert.deepEqual(
        names(await call(app, '/api/product?filter[name][gt]=carrot&filter[name][lte]=durian')),
        ['dragon_fruit%', 'durian'],
      );
      assert.deepEqual(
        names(await call(app, '/api/product?filter[isDeleted]=false&filter[stock][eq]=0')),
        ['dragon_fruit%'],
      );
    });

    it("filters: like is a case-sensitive contains with the caller's % and _ matched literally", async () => {
      assert.deepEqual(names(await call(app, '/api/product?filter[name][like]=an')), [
        'banana',
        'durian',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?filter[tag][like]=Fru')), ['durian']);
      assert.deepEqual(names(await call(app, '/api/product?filter[tag][like]=fru')), [
        'apple',
        'banana',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?filter[name][like]=%25')), [
        'dragon_fruit%',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?filter[name][like]=_')), [
        'dragon_fruit%',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?filter[name][like]=n_f')), [
        'dragon_fruit%',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?filter[name][like]=a%25n')), []);
      assert.deepEqual(names(await call(app, '/api/product?filter[name][like]=%5C')), []);
      assertBadParameter(
        await call(app, '/api/product?filter[price][like]=1'),
        'querystring',
        'filter[price][like]',
        /does not apply to the number field price/,
      );
    });

    it('filters: in and nin take comma-separated values (at most 100), null true/false is IS NULL / IS NOT NULL', async () => {
      assert.deepEqual(
        names(await call(app, `/api/product?filter[id][in]=${ids.apple},${ids.durian},99999`)),
        ['apple', 'durian'],
      );
      assert.deepEqual(
        names(await call(app, '/api/product?filter[name][nin]=apple,banana,carrot')),
        ['dragon_fruit%', 'durian'],
      );
      assert.deepEqual(names(await call(app, '/api/product?filter[price][in]=0.25,7')), [
        'banana',
        'dragon_fruit%',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?filter[stock][null]=true')), ['banana']);
      // The same fields and operators with another null value or list length are other SQL (lists are compiled once per shape).
      assert.deepEqual(names(await call(app, '/api/product?filter[stock][null]=false')), [
        'apple',
        'carrot',
        'dragon_fruit%',
        'durian',
      ]);
      assert.deepEqual(names(await call(app, '/api/product?filter[price][in]=7')), [
        'dragon_fruit%',
      ]);
      assert.deepEqual(
        names(await call(app, '/api/product?filter[tag][null]=false&filter[stock][null]=false')),
        ['apple', 'dragon_fruit%', 'durian'],
      );
      const hundred = Array.from({ length: 100 }, (_, i) => i + 1).join(',');
      assert.equal((await call(app, `/api/product?filter[id][in]=${hundred}`)).statusCode, 200);
      assertBadParameter(
        await call(app, `/api/product?filter[id][in]=${hundred},101`),
        'querystring',
        'filter[id][in]',
        /1 to 100 integer values/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[id][in]=1,two'),
        'querystring',
        'filter[id][in]',
      );
      assertBadParameter(
        await call(app, '/api/product?filter[id][in]=9999999999999999'),
        'querystring',
        'filter[id][in]',
        /safe integer/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[id][in]='),
        'querystring',
        'filter[id][in]',
      );
      assertBadParameter(
        await call(app, '/api/product?filter[stock][null]=maybe'),
        'querystring',
        'filter[stock][null]',
        /true or false/,
      );
      assertBadParameter(
        await call(app, `/api/product?filter[name][in]=a,${'x'.repeat(201)}`),
        'querystring',
        'filter[name][in]',
        /at most 200 characters/,
      );
    });

    it('filters: only real fields and operators; malformed values for the type and over-long values are refused', async () => {
      assertBadParameter(
        await call(app, '/api/product?filter[weight]=1'),
        'querystring',
        'filter[weight]',
        /names no field of Product/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[price][between]=1'),
        'querystring',
        'filter[price][between]',
        /unknown operator/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[price][lt]=cheap'),
        'querystring',
        'filter[price][lt]',
        /must be a decimal number/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[id]=1.5'),
        'querystring',
        'filter[id]',
        /integer/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[isDeleted][gt]=true'),
        'querystring',
        'filter[isDeleted][gt]',
        /does not apply/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[isDeleted]=yes'),
        'querystring',
        'filter[isDeleted]',
        /true or false/,
      );
      assertBadParameter(
        await call(app, `/api/product?filter[name]=${'x'.repeat(201)}`),
        'querystring',
        'filter[name]',
        /at most 200 characters/,
      );
      assert.equal(
        (await call(app, `/api/product?filter[name]=${'x'.repeat(200)}`)).statusCode,
        200,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[name]=a&filter[name]=b'),
        'querystring',
        'filter[name]',
        /must be a string/,
      );
      assertBadParameter(
        await call(app, '/api/product?limit=5'),
        'querystring',
        'limit',
        /not accepted/,
      );
    });

    it('GET /{pk}: the row, 404 for none, 400 for a wrong-typed key', async () => {
      assert.equal((await call(app, `/api/product/${ids.apple}`)).json<ProductRow>().name, 'apple');
      const missing = await call(app, '/api/product/424242');
      assert.equal(missing.statusCode, 404);
      assert.match(String(missing.headers['content-type']), /^application\/problem\+json/);
      assert.equal(missing.json<{ title: string }>().title, 'Not Found');
      assertBadParameter(await call(app, '/api/product/apple'), 'params', 'id', /integer/);
      assertBadParameter(await call(app, '/api/product/1.5'), 'params', 'id', /integer/);
      assertBadParameter(await call(app, '/api/product/99999999999999999999'), 'params', 'id');
    });

    it('PUT /{pk} replaces the writable fields (left-out optional ones become null) and answers the stored row', async () => {
      const res = await call(app, {
        method: 'PUT',
        url: `/api/product/${ids.carrot}`,
        payload: { name: 'carrot', price: 0.9, tag: 'veg' },
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), {
        id: ids.carrot,
        name: 'carrot',
        price: 0.9,
        stock: null,
        tag: 'veg',
        isDeleted: false,
      });
      const back = await call(app, {
        method: 'PUT',
        url: `/api/product/${ids.carrot}`,
        payload: { name: 'carrot', price: 0.8, stock: 5, tag: null },
      });
      assert.deepEqual(back.json(), {
        id: ids.carrot,
        name: 'carrot',
        price: 0.8,
        stock: 5,
        tag: null,
        isDeleted: false,
      });
      assert.equal(
        (
          await call(app, {
            method: 'PUT',
            url: '/api/product/424242',
            payload: { name: 'x', price: 1 },
          })
        ).statusCode,
        404,
      );
    });

    it('the writable-field rule: the primary key, the soft-delete field and unknown fields are refused, nothing is written', async () => {
      const before = (await call(app, `/api/product/${ids.apple}`)).json();
      assertBadParameter(
        await call(app, {
          method: 'PUT',
          url: `/api/product/${ids.apple}`,
          payload: { id: 77, name: 'apple', price: 1 },
        }),
        'body',
        'id',
        /read-only/,
      );
      assertBadParameter(
        await call(app, {
          method: 'PUT',
          url: `/api/product/${ids.apple}`,
          payload: { name: 'apple', price: 1, isDeleted: true },
        }),
        'body',
        'isDeleted',
        /read-only/,
      );
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/product',
          payload: { name: 'fig', price: 1, colour: 'purple' },
        }),
        'body',
        'colour',
        /not a field of Product/,
      );
      assertBadParameter(
        await call(app, { method: 'POST', url: '/api/product', payload: { price: 1 } }),
        'body',
        'name',
        /required/,
      );
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/product',
          payload: { name: 'fig', price: '1' },
        }),
        'body',
        'price',
        /must be a number/,
      );
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/product',
          payload: { name: 'fig', price: -1 },
        }),
        'body',
        'price',
        />= 0/,
      );
      assertBadParameter(
        await call(app, { method: 'POST', url: '/api/product', payload: { name: '', price: 1 } }),
        'body',
        'name',
      );
      // An array is a bulk create (the atomic suite); any other JSON that is not an object is refused.
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/product',
          headers: { 'content-type': 'application/json' },
          payload: '"fig"',
        }),
        'body',
        '',
        /JSON object/,
      );
      assertBadParameter(
        await call(app, {
          method: 'PUT',
          url: '/api/product/zero',
          payload: { name: 'fig', price: 1 },
        }),
        'params',
        'id',
      );
      assert.deepEqual((await call(app, `/api/product/${ids.apple}`)).json(), before);
      assert.equal((await call(app, '/api/product')).json<{ total: number }>().total, 5);
    });

    it('a unique violation is 409 and writes nothing; a foreign-key violation is 409', async () => {
      const clash = await call(app, {
        method: 'PUT',
        url: `/api/product/${ids.apple}`,
        payload: { name: 'banana', price: 9 },
      });
      assert.equal(clash.statusCode, 409, clash.body);
      assert.match(String(clash.headers['content-type']), /^application\/problem\+json/);
      assert.equal((await call(app, `/api/product/${ids.apple}`)).json<ProductRow>().price, 1.5);
      assert.equal(
        (
          await call(app, {
            method: 'POST',
            url: '/api/product',
            payload: { name: 'apple', price: 2 },
          })
        ).statusCode,
        409,
      );
      const orphan = await call(app, {
        method: 'POST',
        url: '/api/reviews',
        payload: { productId: 424242, text: 'no such product' },
      });
      assert.equal(orphan.statusCode, 409, orphan.body);
    });

    it('DELETE soft-deletes: 204, then the row is gone from every read and write, yet still in the table', async () => {
      const id = ids.durian;
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/product/${id}` })).statusCode,
        204,
      );
      assert.equal((await call(app, `/api/product/${id}`)).statusCode, 404);
      assert.ok(!names(await call(app, '/api/product')).includes('durian'));
      assert.ok(
        !(await call(app, '/api/product/all'))
          .json<ProductRow[]>()
          .some((p) => p.name === 'durian'),
      );
      assert.deepEqual(names(await call(app, '/api/product?filter[isDeleted]=true')), []);
      assert.equal(
        (
          await call(app, {
            method: 'PUT',
            url: `/api/product/${id}`,
            payload: { name: 'durian', price: 1 },
          })
        ).statusCode,
        404,
      );
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/product/${id}` })).statusCode,
        404,
      );
      const [raw] = await engine.sql(`select name, is_deleted from products where id = ${id}`);
      assert.equal(raw?.name, 'durian');
      assert.ok(
        raw?.is_deleted === true || raw?.is_deleted === 1,
        `is_deleted is ${String(raw?.is_deleted)}`,
      );
    });

    it('DELETE of an entity without soft delete removes the row', async () => {
      const created = await call(app, {
        method: 'POST',
        url: '/api/reviews',
        payload: { productId: ids.apple, text: 'crisp' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json<{ id: number }>().id;
      assert.deepEqual(created.json(), { id, productId: ids.apple, text: 'crisp' });
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/reviews/${id}` })).statusCode,
        204,
      );
      assert.deepEqual(await engine.sql(`select id from reviews where id = ${id}`), []);
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/reviews/${id}` })).statusCode,
        404,
      );
    });

    it('GET /all only with ListAll: the whole table, by primary key', async () => {
      const all = await call(app, '/api/product/all');
      assert.equal(all.statusCode, 200);
      assert.deepEqual(
        all.json<ProductRow[]>().map((p) => p.name),
        ['apple', 'banana', 'carrot', 'dragon_fruit%'],
      );
      // Reviews do not allow ListAll: /all is a primary key there, and not an integer.
      assertBadParameter(await call(app, '/api/reviews/all'), 'params', 'id');
    });

    it('only the allowed operations exist, and a hand-written route of the same method and path wins', async () => {
      const note = await call(app, {
        method: 'POST',
        url: '/api/notes',
        payload: { title: 'buy milk', done: false },
      });
      assert.equal(note.statusCode, 201, note.body);
      assert.deepEqual(note.json(), {
        id: note.json<{ id: number }>().id,
        title: 'buy milk',
        done: false,
        rank: null,
      });
      const put = await call(app, {
        method: 'PUT',
        url: `/api/notes/${note.json<{ id: number }>().id}`,
        payload: { title: 'x' },
      });
      assert.deepEqual(put.json(), {
        handWritten: true,
        params: { noteId: String(note.json<{ id: number }>().id) },
      });
      assert.equal(
        (await call(app, { method: 'DELETE', url: '/api/notes/1' })).statusCode,
        404,
        'Delete is not allowed on notes',
      );
      assert.deepEqual(
        (await call(app, '/api/notes?filter[done]=false')).json<{ items: unknown[] }>().items
          .length,
        1,
      );
    });

    it('a string primary key with format uuid is generated on create and checked on every route', async () => {
      const created = await call(app, {
        method: 'POST',
        url: '/api/tags',
        payload: { label: 'organic' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const { id } = created.json<{ id: string }>();
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.deepEqual((await call(app, `/api/tags/${id}`)).json(), { id, label: 'organic' });
      assert.deepEqual(names(await call(app, `/api/tags?filter[id][in]=${id}`)).length, 1);
      assertBadParameter(await call(app, '/api/tags/not-a-uuid'), 'params', 'id', /uuid/);
      assertBadParameter(
        await call(app, '/api/tags?filter[id]=nope'),
        'querystring',
        'filter[id]',
        /uuid/,
      );
      assertBadParameter(
        await call(app, '/api/tags?filter[id][like]=a'),
        'querystring',
        'filter[id][like]',
        /does not apply/,
      );
      assert.equal((await call(app, { method: 'DELETE', url: `/api/tags/${id}` })).statusCode, 204);
    });

    it('bodies that are not JSON objects are problem answers too (400, 415)', async () => {
      const broken = await call(app, {
        method: 'POST',
        url: '/api/product',
        headers: { 'content-type': 'application/json' },
        payload: '{"name": "fig",',
      });
      assert.equal(broken.statusCode, 400);
      assert.match(String(broken.headers['content-type']), /^application\/problem\+json/);
      const xml = await call(app, {
        method: 'POST',
        url: '/api/product',
        headers: { 'content-type': 'application/xml' },
        payload: '<name>fig</name>',
      });
      assert.equal(xml.statusCode, 415);
      assert.match(String(xml.headers['content-type']), /^application\/problem\+json/);
      // Fastify parses text/plain itself; the body is still not JSON: 415, as for any other type, and nothing is written.
      for (const type of [
        'text/plain',
        'text/plain; charset=utf-8',
        'application/x-www-form-urlencoded',
        'application/jsonx',
      ]) {
        const plain = await call(app, {
          method: 'POST',
          url: '/api/product',
          headers: { 'content-type': type },
          payload: '{"name":"fig","price":1}',
        });
        assert.equal(plain.statusCode, 415, `${type}: ${plain.body}`);
        assert.match(String(plain.headers['content-type']), /^application\/problem\+json/);
      }
      const put = await call(app, {
        method: 'PUT',
        url: `/api/product/${ids.apple}`,
        headers: { 'content-type': 'text/plain' },
        payload: '{"name":"fig","price":1}',
      });
      assert.equal(put.statusCode, 415, put.body);
      assert.equal(await countRows(engine, 'products', "name = 'fig'"), 0);
      // JSON with parameters, and +json types a host parses, are JSON.
      assert.equal(
        (
          await call(app, {
            method: 'POST',
            url: '/api/product',
            headers: { 'content-type': 'application/json; charset=utf-8' },
            payload: '[]',
          })
        ).statusCode,
        400,
      );
      const empty = await call(app, { method: 'POST', url: '/api/product' });
      assert.equal(empty.statusCode, 400, empty.body);
    });

    it('the database check is healthy with its latency in data', async () => {
      const res = await app.inject('/healthz');
      const check = res.json<{
        checks: Record<
          string,
          { status: string; description: string; data: { latencyMs: number } }
        >;
      }>().checks.database;
      assert.equal(check?.status, 'healthy');
      assert.equal(check?.description, 'Database answered SELECT 1');
      assert.equal(typeof check?.data.latencyMs, 'number');
    });

    it('no answer carried SQL, constraint or table internals', () => {
      assert.ok(seenBodies.length > 100);
      for (const body of seenBodies) {
        assert.doesNotMatch(
          // A problem's correlationId member (cor-relation-Id) is not a database relation.
          body.replace(/"correlationId":"[^"]*"/g, ''),
          /\b(select|insert|update|delete)\b.*\b(from|into|set)\b|constraint|products_|_key\b|syntax|sqlite|postgres|relation|\bat .*\.(js|ts):\d+/i,
          body,
        );
      }
    });
  });
}
