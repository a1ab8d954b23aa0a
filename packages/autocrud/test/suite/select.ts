// Field selection and the newer filters on one engine: fields= on the list and the read by key
// (the ETag still the row's version), ilike (Unicode-aware, % and _ literal), and OR groups
// (filter[or][n][field][op]), each bad input a 400 naming the parameter; the repository's OR too.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { KitError } from '@kit/core';
import { KIT_AUTOCRUD, type KitAutoCrud } from '@kit/autocrud';
import {
  assertBadParameter,
  call,
  crudApp,
  Document,
  names,
  Product,
  suiteTables,
  type EngineUnderTest,
} from './fixtures.ts';

const SEED = [
  { name: 'Éclair', price: 4, stock: 3, tag: 'pastry' },
  { name: 'éclair au café', price: 6, stock: null, tag: 'PASTRY' },
  { name: 'Straße', price: 1, stock: 0 },
  { name: 'STRASSE', price: 2, stock: 5, tag: 'street' },
  { name: 'Green TEA', price: 3.5, stock: 10, tag: 'tea' },
  { name: 'tea_pot', price: 25, stock: 1, tag: 'ware' },
  { name: '100% teabag', price: 0.5, stock: 200, tag: 'tea' },
  { name: 'ΣΟΦΙΑ', price: 9, stock: 2, tag: 'σοφια' },
];

export function selectSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud fields=, ilike and OR groups on ${engine.name}`, () => {
    let app: FastifyInstance;
    const ids: Record<string, number> = {};
    const list = async (query: string) =>
      names(await call(app, `/api/product?pageSize=100&${query}`));

    before(async () => {
      for (const statement of suiteTables(engine.flavour)) await engine.sql(statement);
      app = await crudApp(engine);
      for (const product of SEED) {
        const res = await call(app, { method: 'POST', url: '/api/product', payload: product });
        assert.equal(res.statusCode, 201, res.body);
        ids[product.name] = res.json<{ id: number }>().id;
      }
    });
    after(async () => {
      await app?.close();
    });

    it("fields= on the list answers only those fields, in the entity's order; paging and cursors are unchanged", async () => {
      const res = await call(app, '/api/product?fields=price,name&sort=-price&pageSize=2');
      assert.equal(res.statusCode, 200, res.body);
      const page = res.json<{
        items: Array<Record<string, unknown>>;
        total: number;
        next: string;
      }>();
      assert.deepEqual(page.items, [
        { name: 'tea_pot', price: 25 },
        { name: 'ΣΟΦΙΑ', price: 9 },
      ]);
      assert.deepEqual(Object.keys(page.items[0] ?? {}), ['name', 'price']);
      assert.equal(page.total, SEED.length);
      const second = await call(
        app,
        `/api/product?fields=id&sort=-price&pageSize=2&after=${encodeURIComponent(page.next)}`,
      );
      assert.deepEqual(second.json<{ items: unknown[] }>().items, [
        { id: ids['éclair au café'] },
        { id: ids['Éclair'] },
      ]);
      // A nullable field asked for answers its null.
      assert.deepEqual(
        (await call(app, `/api/product?fields=stock&filter[id]=${ids['éclair au café']}`)).json<{
          items: unknown[];
        }>().items,
        [{ stock: null }],
      );
    });

    it("fields= on the read by key: only those fields, the ETag still the row's version, If-None-Match still 304", async () => {
      const id = ids.Straße as number;
      const res = await call(app, `/api/product/${id}?fields=id,tag`);
      assert.equal(res.statusCode, 200, res.body);
      // Straße has no tag: a nullable field answers its null.
      assert.deepEqual(res.json(), { id, tag: null });
      assert.deepEqual((await call(app, `/api/product/${id}?fields=name`)).json(), {
        name: 'Straße',
      });
      const created = await call(app, {
        method: 'POST',
        url: '/api/documents',
        payload: { title: 'partial', words: 4 },
      });
      const doc = created.json<{ id: number }>().id;
      await call(app, {
        method: 'PUT',
        url: `/api/documents/${doc}`,
        payload: { title: 'partial', words: 5 },
      });
      const partial = await call(app, `/api/documents/${doc}?fields=title`);
      assert.deepEqual(partial.json(), { title: 'partial' });
      assert.equal(partial.headers.etag, '"2"');
      assert.equal(
        (
          await call(app, {
            url: `/api/documents/${doc}?fields=title`,
            headers: { 'if-none-match': '"2"' },
          })
        ).statusCode,
        304,
      );
    });

    it('fields= naming an unknown field, a field twice, or nothing is a 400 naming fields', async () => {
      assertBadParameter(
        await call(app, '/api/product?fields=id,weight'),
        'querystring',
        'fields',
        /"weight", which is not a field of Product; fields: id, name/,
      );
      assertBadParameter(
        await call(app, `/api/product/${ids.Straße}?fields=weight`),
        'querystring',
        'fields',
        /not a field of Product/,
      );
      assertBadParameter(
        await call(app, '/api/product?fields=name,name'),
        'querystring',
        'fields',
        /twice/,
      );
      for (const bad of ['', 'name,', 'name;price', 'is-deleted']) {
        assertBadParameter(
          await call(app, `/api/product?fields=${encodeURIComponent(bad)}`),
          'querystring',
          'fields',
          /fields of Product/,
        );
      }
      assertBadParameter(
        await call(app, '/api/product?fields=id&fields=name'),
        'querystring',
        'fields',
      );
    });

    it('ilike: a contains in any case, Unicode-aware (É and é, Σ and σ), ß not SS, % and _ literal', async () => {
      assert.deepEqual(await list('filter[name][ilike]=tea'), [
        'Green TEA',
        'tea_pot',
        '100% teabag',
      ]);
      assert.deepEqual(await list('filter[name][ilike]=ÉCLAIR'), ['Éclair', 'éclair au café']);
      assert.deepEqual(await list('filter[name][ilike]=CAFÉ'), ['éclair au café']);
      assert.deepEqual(await list('filter[name][ilike]=σοφ'), ['ΣΟΦΙΑ']);
      assert.deepEqual(await list('filter[tag][ilike]=Pastry'), ['Éclair', 'éclair au café']);
      // Lower-case mapping, letter by letter: ß is not SS, so Straße and STRASSE do not find each other.
      assert.deepEqual(await list('filter[name][ilike]=straße'), ['Straße']);
      assert.deepEqual(await list('filter[name][ilike]=strasse'), ['STRASSE']);
      assert.deepEqual(await list('filter[name][ilike]=%25'), ['100% teabag']);
      assert.deepEqual(await list('filter[name][ilike]=A_P'), ['tea_pot']);
      assert.deepEqual(await list('filter[name][ilike]=a%25p'), []);
      assert.deepEqual(await list('filter[name][ilike]=%5C'), []);
      // like stays case-sensitive.
      assert.deepEqual(await list('filter[name][like]=tea'), ['tea_pot', '100% teabag']);
      assertBadParameter(
        await call(app, '/api/product?filter[price][ilike]=1'),
        'querystring',
        'filter[price][ilike]',
        /does not apply to the number field price/,
      );
      assertBadParameter(
        await call(app, `/api/product?filter[name][ilike]=${'x'.repeat(201)}`),
        'querystring',
        'filter[name][ilike]',
        /at most 200/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[name][ilike]=%00'),
        'querystring',
        'filter[name][ilike]',
        /NUL/,
      );
    });

    it('OR groups: rows matching the plain filters and all conditions of at least one alternative', async () => {
      assert.deepEqual(await list('filter[or][0][name][ilike]=tea&filter[or][1][price][lt]=2'), [
        'Straße',
        'Green TEA',
        'tea_pot',
        '100% teabag',
      ]);
      // Conditions of one alternative must all hold; plain filters hold for every row.
      assert.deepEqual(
        await list(
          'filter[or][0][name][ilike]=tea&filter[or][0][price][lt]=5&filter[or][1][tag]=pastry',
        ),
        ['Éclair', 'Green TEA', '100% teabag'],
      );
      assert.deepEqual(
        await list(
          'filter[stock][gte]=1&filter[or][0][tag][in]=tea,ware&filter[or][1][stock][null]=true',
        ),
        ['Green TEA', 'tea_pot', '100% teabag'],
      );
      assert.deepEqual(
        await list(
          'filter[stock][null]=false&filter[or][0][tag][null]=true&filter[or][1][tag]=street',
        ),
        ['Straße', 'STRASSE'],
      );
      // Numbers need not start at 0 nor follow each other; one alternative is a plain AND.
      assert.deepEqual(await list('filter[or][3][price]=25&filter[or][9][price][eq]=9'), [
        'tea_pot',
        'ΣΟΦΙΑ',
      ]);
      assert.deepEqual(await list('filter[or][5][price][gt]=8'), ['tea_pot', 'ΣΟΦΙΑ']);
      const both = await call(
        app,
        '/api/product?filter[or][0][name][ilike]=tea&filter[or][1][price][lt]=2&sort=-price&pageSize=2&count=true',
      );
      assert.equal(both.json<{ total: number }>().total, 4);
    });

    it('OR groups page by cursor, and a cursor does not fit another OR group', async () => {
      const query =
        'filter[or][0][name][ilike]=tea&filter[or][1][price][lt]=2&sort=-price&pageSize=3';
      const first = (await call(app, `/api/product?${query}`)).json<{
        items: Array<{ name: string }>;
        next: string;
      }>();
      assert.deepEqual(
        first.items.map((i) => i.name),
        ['tea_pot', 'Green TEA', 'Straße'],
      );
      const second = await call(
        app,
        `/api/product?${query}&after=${encodeURIComponent(first.next)}`,
      );
      assert.deepEqual(names(second), ['100% teabag']);
      const other =
        'filter[or][0][name][ilike]=tea&filter[or][1][price][lt]=3&sort=-price&pageSize=3';
      assertBadParameter(
        await call(app, `/api/product?${other}&after=${encodeURIComponent(first.next)}`),
        'querystring',
        'after',
      );
      const moved =
        'filter[or][0][price][lt]=2&filter[or][1][name][ilike]=tea&sort=-price&pageSize=3';
      assert.equal(
        (await call(app, `/api/product?${moved}&after=${encodeURIComponent(first.next)}`))
          .statusCode,
        400,
        "the alternatives are part of the cursor's scope, in order",
      );
    });

    it('OR groups are bounded: at most 10 alternatives, no nesting, real fields and operators; each a 400 naming the parameter', async () => {
      assertBadParameter(
        await call(app, '/api/product?filter[or][10][name]=x'),
        'querystring',
        'filter[or][10][name]',
        /0 to 9 \(at most 10 alternatives\)/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[or][a][name]=x'),
        'querystring',
        'filter[or][a][name]',
        /alternative of the OR group/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[or]=x'),
        'querystring',
        'filter[or]',
        /alternative/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[or][0][or][0][name]=x'),
        'querystring',
        'filter[or][0][or][0][name]',
        /do not nest/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[or][0][weight]=1'),
        'querystring',
        'filter[or][0][weight]',
        /names no field of Product/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[or][0][price][like]=1'),
        'querystring',
        'filter[or][0][price][like]',
        /does not apply to the number field/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[or][0][price][between]=1'),
        'querystring',
        'filter[or][0][price][between]',
        /unknown operator/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[or][1][price][lt]=cheap'),
        'querystring',
        'filter[or][1][price][lt]',
        /number/,
      );
      assertBadParameter(
        await call(app, '/api/product?filter[or][1][id][in]=1,x'),
        'querystring',
        'filter[or][1][id][in]',
      );
      assertBadParameter(
        await call(app, '/api/product?filter[or][1][name]=a&filter[or][1][name]=b'),
        'querystring',
        'filter[or][1][name]',
      );
      const ten = Array.from({ length: 10 }, (_, i) => `filter[or][${i}][price]=${i}`).join('&');
      assert.equal((await call(app, `/api/product?${ten}`)).statusCode, 200);
    });

    it("the document lists fields, ilike and the OR group's parameters, typed", async () => {
      const doc = (await app.inject('/openapi.json')).json<{
        paths: Record<
          string,
          Record<string, { parameters: Array<{ name: string; schema: { type: string } }> }>
        >;
      }>();
      const listed = new Map(
        doc.paths['/api/product']?.get?.parameters.map((p) => [p.name, p.schema.type]),
      );
      assert.equal(listed.get('fields'), 'string');
      assert.equal(listed.get('filter[name][ilike]'), 'string');
      assert.equal(listed.get('filter[or][0][name][ilike]'), 'string');
      assert.equal(listed.get('filter[or][9][price][lt]'), 'number');
      assert.equal(listed.get('filter[or][9][price]'), 'number');
      assert.equal(listed.get('filter[or][10][price]'), undefined);
      assert.equal(listed.get('filter[price][ilike]'), undefined);
      const get = new Map(
        doc.paths['/api/product/{id}']?.get?.parameters.map((p) => [p.name, p.schema.type]),
      );
      assert.equal(get.get('fields'), 'string');
    });

    it('the repository takes the same OR groups, and refuses more than 10 alternatives or an empty one with a KitError', async () => {
      const products = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD).repository(Product);
      const { rows, total } = await products.list({
        filters: [{ field: 'stock', op: 'gte', value: 1 }],
        or: [
          [{ field: 'name', op: 'ilike', value: 'ÉCL' }],
          [{ field: 'price', op: 'gt', value: 20 }],
        ],
        sort: [],
        offset: 0,
        limit: 10,
      });
      assert.deepEqual(
        rows.map((r) => r.name),
        ['Éclair', 'tea_pot'],
      );
      assert.equal(total, 2);
      const alternative = [{ field: 'price' as const, op: 'gt' as const, value: 1 }];
      const invalid = (err: unknown) =>
        err instanceof KitError && err.code === 'KIT_ERR_INVALID_ARGUMENT';
      await assert.rejects(
        products.list({
          filters: [],
          or: Array.from({ length: 11 }, () => alternative),
          sort: [],
          offset: 0,
          limit: 1,
        }),
        invalid,
      );
      await assert.rejects(
        products.list({ filters: [], or: [[]], sort: [], offset: 0, limit: 1 }),
        invalid,
      );
      await assert.rejects(
        products.list({
          filters: [],
          // @ts-expect-error an unknown field: TypeScript refuses it, and so does the repository at run time
          or: [[{ field: 'weight', op: 'eq', value: 1 }]],
          sort: [],
          offset: 0,
          limit: 1,
        }),
        invalid,
      );
      await assert.rejects(
        products.list({
          filters: [],
          or: [[{ field: 'price', op: 'ilike', value: '1' }]],
          sort: [],
          offset: 0,
          limit: 1,
        }),
        invalid,
      );
      // The document the fields= test made.
      const docs = await app.kit.services
        .resolve<KitAutoCrud>(KIT_AUTOCRUD)
        .repository(Document)
        .list({
          filters: [],
          or: [[{ field: 'title', op: 'ilike', value: 'PART' }]],
          sort: [],
          offset: 0,
          limit: 5,
        });
      assert.equal(docs.total, 1);
    });
  });
}
