// Cursor (keyset) paging on one engine: walking a list with `after=<next>` gives the offset
// listing for every sort (NULLs, ties, mixed directions, filters), is stable while rows are
// inserted before the cursor, `count=false` skips the count, and a cursor that was altered, made
// up, or issued for another query is a 400 naming `after`, never a database error.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { KIT_AUTOCRUD, type KitAutoCrud } from '@kit/autocrud';
import {
  assertBadParameter,
  call,
  crudApp,
  names,
  Product,
  ProductEndpoint,
  suiteTables,
  type EngineUnderTest,
} from './fixtures.ts';

interface Page {
  items: Array<{ id: number; name: string; price: number }>;
  total?: number;
  page?: number;
  pageSize: number;
  totalPages?: number;
  next: string | null;
}

const SECRET = 'a-test-secret-of-at-least-32-characters';
const PRICES = [5, 3, 5, 1, 3, 5, 2, 2, 4, 1, 5, 3];
const STOCK = [null, 4, 1, null, 4, 0, null, 2, 2, 9, null, 4];
const TAGS = ['b', null, 'a', 'b', null, 'a', 'c', null, 'a', 'b', 'c', null];

/** A cursor signed as the documented format says, with the test's secret: a forgery by someone who has the key. */
function forge(scope: string, values: unknown[]): string {
  const payload = Buffer.from(JSON.stringify(values)).toString('base64url');
  const tag = createHmac('sha256', SECRET)
    .update(`kit-autocrud-cursor-v1\0${scope}\0${payload}`)
    .digest()
    .subarray(0, 16);
  return `${payload}.${tag.toString('base64url')}`;
}

export function cursorSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud cursor paging on ${engine.name}`, () => {
    let app: FastifyInstance;
    const page = async (query: string): Promise<Page> => {
      const res = await call(app, `/api/product?${query}`);
      assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
      return res.json<Page>();
    };
    /** Every page of a query, following `next`. */
    const walk = async (query: string, pageSize: number): Promise<string[]> => {
      const seen: string[] = [];
      let result = await page(`${query}&pageSize=${pageSize}`);
      for (let guard = 0; ; guard++) {
        seen.push(...result.items.map((i) => i.name));
        if (result.next === null) return seen;
        assert.ok(guard < 100, 'the walk ends');
        result = await page(
          `${query}&pageSize=${pageSize}&after=${encodeURIComponent(result.next)}`,
        );
        assert.equal(result.page, undefined, 'a cursor page has no page number');
      }
    };

    before(async () => {
      for (const statement of suiteTables(engine.flavour)) await engine.sql(statement);
      app = await crudApp(engine, { cursorSecret: SECRET }, undefined, [ProductEndpoint]);
      const products = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD).repository(Product);
      for (let i = 0; i < PRICES.length; i++) {
        await products.create({
          name: `p${String(i + 1).padStart(2, '0')}`,
          price: PRICES[i] as number,
          stock: STOCK[i],
          tag: TAGS[i],
        });
      }
    });
    after(async () => {
      await app?.close();
    });

    it('walking a list with after=next gives the offset listing for every sort, with NULLs, ties and filters; next is null on the last page', async (t) => {
      const queries = [
        'sort=-price',
        'sort=price,-name',
        'sort=stock',
        'sort=-stock',
        'sort=tag,-price',
        'sort=-tag,stock',
        'sort=-id',
        'filter[price][lt]=5&sort=-price',
        'filter[tag][null]=false&sort=-stock,price',
      ];
      for (const query of ['', ...queries]) {
        const expected = names(await call(app, `/api/product?${query}&pageSize=100`));
        for (const size of [1, 3, 5])
          assert.deepEqual(await walk(query, size), expected, `${query} by ${size}`);
      }
      t.diagnostic(`${queries.length + 1} orders walked page by page (sizes 1, 3, 5)`);
    });

    it('a cursor page counts unless count=false; an offset page too; page sizes may change between pages', async () => {
      const first = await page('sort=-price&pageSize=4');
      assert.deepEqual([first.total, first.page, first.pageSize, first.totalPages], [12, 1, 4, 3]);
      assert.equal(typeof first.next, 'string');
      const second = await page(
        `sort=-price&pageSize=4&after=${encodeURIComponent(first.next as string)}`,
      );
      assert.deepEqual([second.total, second.page, second.totalPages], [12, undefined, 3]);
      const uncounted = await page(
        `sort=-price&pageSize=5&count=false&after=${encodeURIComponent(first.next as string)}`,
      );
      assert.deepEqual(Object.keys(uncounted).sort(), ['items', 'next', 'pageSize']);
      assert.deepEqual(
        uncounted.items.slice(0, 4).map((i) => i.name),
        second.items.map((i) => i.name),
      );
      assert.deepEqual(Object.keys(await page('count=false&page=2&pageSize=3')).sort(), [
        'items',
        'next',
        'page',
        'pageSize',
      ]);
    });

    it('stable under concurrent inserts and deletes: rows written before the cursor neither repeat nor shift the next page', async () => {
      const before = await page('sort=-price&pageSize=4');
      const expectedSecond = (await page('sort=-price&pageSize=4&page=2')).items.map((i) => i.name);
      for (const name of ['q1', 'q2', 'q3'])
        assert.equal(
          (await call(app, { method: 'POST', url: '/api/product', payload: { name, price: 100 } }))
            .statusCode,
          201,
        );
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/product/${before.items[0]?.id}` }))
          .statusCode,
        204,
      );
      const second = await page(
        `sort=-price&pageSize=4&after=${encodeURIComponent(before.next as string)}`,
      );
      assert.deepEqual(
        second.items.map((i) => i.name),
        expectedSecond,
      );
      // The offset page 2 shifted: it now repeats rows of the first page.
      const shifted = (await page('sort=-price&pageSize=4&page=2')).items.map((i) => i.name);
      assert.ok(
        shifted.some((n) => before.items.some((i) => i.name === n)),
        shifted.join(','),
      );
      // The walk from the cursor on ends with no duplicates, and a row inserted after the cursor appears.
      assert.equal(
        (
          await call(app, {
            method: 'POST',
            url: '/api/product',
            payload: { name: 'q4', price: 0 },
          })
        ).statusCode,
        201,
      );
      let result = second;
      const rest = [...second.items.map((i) => i.name)];
      while (result.next) {
        result = await page(`sort=-price&pageSize=4&after=${encodeURIComponent(result.next)}`);
        rest.push(...result.items.map((i) => i.name));
      }
      assert.equal(new Set(rest).size, rest.length);
      assert.equal(rest.at(-1), 'q4');
      assert.ok(!rest.some((n) => /^q[123]$/.test(n)));
    });

    it('a cursor is bound to its query: another sort or other filters, or page with after, is a 400', async () => {
      const { next } = await page('sort=-price&filter[price][gt]=1&pageSize=2');
      const after = encodeURIComponent(next as string);
      assert.equal(
        (await call(app, `/api/product?sort=-price&filter[price][gt]=1&pageSize=7&after=${after}`))
          .statusCode,
        200,
      );
      assertBadParameter(
        await call(app, `/api/product?sort=price&filter[price][gt]=1&after=${after}`),
        'querystring',
        'after',
        /same sort and filters/,
      );
      assertBadParameter(
        await call(app, `/api/product?sort=-price&after=${after}`),
        'querystring',
        'after',
      );
      assertBadParameter(
        await call(app, `/api/product?sort=-price&filter[price][gt]=2&after=${after}`),
        'querystring',
        'after',
      );
      assertBadParameter(
        await call(app, `/api/product?sort=-price&filter[price][gt]=1&page=2&after=${after}`),
        'querystring',
        'page',
        /after/,
      );
      // page=1 too: a cursor page has no page number, whichever one is sent with it.
      assertBadParameter(
        await call(app, `/api/product?sort=-price&filter[price][gt]=1&page=1&after=${after}`),
        'querystring',
        'page',
        /after/,
      );
    });

    it('an altered, made-up or oversized cursor is a 400 problem naming after, never a database error', async () => {
      const { next } = await page('sort=-price&pageSize=2');
      const token = next as string;
      const [payload = '', tag = ''] = token.split('.');
      const flip = (s: string, i: number) =>
        s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
      const altered = [
        `${flip(payload, 2)}.${tag}`,
        `${payload}.${flip(tag, 3)}`,
        payload,
        `.${tag}`,
        `${payload}.`,
        `${Buffer.from('[1e308,1]').toString('base64url')}.${tag}`,
        `${Buffer.from('["\'; drop table products; --",1]').toString('base64url')}.${tag}`,
        'not a cursor',
        '%00',
        '{"price":5}',
      ];
      for (const bad of altered)
        assertBadParameter(
          await call(app, `/api/product?sort=-price&after=${encodeURIComponent(bad)}`),
          'querystring',
          'after',
        );
      assertBadParameter(
        await call(app, `/api/product?sort=-price&after=${'A'.repeat(9000)}`),
        'querystring',
        'after',
      );
      assertBadParameter(
        await call(app, '/api/product?sort=-price&after='),
        'querystring',
        'after',
      );
      assert.equal((await call(app, '/api/product?count=false')).statusCode, 200);
      assertBadParameter(
        await call(app, '/api/product?count=maybe'),
        'querystring',
        'count',
        /true or false/,
      );
    });

    it('a cursor signed with the key but holding values of the wrong type or number is refused; right ones page', async () => {
      const scope = 'Product\u0001-price,id\u0001';
      const query = (values: unknown[]) =>
        `/api/product?sort=-price&after=${encodeURIComponent(forge(scope, values))}`;
      for (const values of [
        ['five', 1],
        [5, 'x'],
        [5, 1.5],
        [5],
        [5, 1, 2],
        [5, null],
        [true, 1],
        [{ $gt: 1 }, 1],
        [5, 2 ** 60],
      ]) {
        assertBadParameter(await call(app, query(values)), 'querystring', 'after');
      }
      const last = await call(app, query([1, 0]));
      assert.equal(last.statusCode, 200, last.body);
      assert.deepEqual(names(last), ['p04', 'p10', 'q4']);
    });

    it("instances sharing cursorSecret accept each other's cursors; an instance with another key refuses them", async () => {
      const { next } = await page('sort=name&pageSize=3');
      const url = `/api/product?sort=name&pageSize=3&after=${encodeURIComponent(next as string)}`;
      const twin = await crudApp(engine, { cursorSecret: SECRET }, undefined, [ProductEndpoint]);
      const stranger = await crudApp(engine, { cursorSecret: `${SECRET}-other` }, undefined, [
        ProductEndpoint,
      ]);
      try {
        assert.deepEqual(names(await call(twin, url)), names(await call(app, url)));
        assertBadParameter(
          await call(stranger, url),
          'querystring',
          'after',
          /issued for this query/,
        );
      } finally {
        await twin.close();
        await stranger.close();
      }
    });

    it('the repository pages by keyset too, and refuses a position of the wrong length', async () => {
      const products = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD).repository(Product);
      const sort = [{ field: 'price' as const, descending: true }];
      const first = await products.list({ filters: [], sort, offset: 0, limit: 3, count: false });
      assert.equal(first.total, undefined);
      const last = first.rows.at(-1);
      assert.ok(last);
      const second = await products.list({
        filters: [],
        sort,
        offset: 0,
        limit: 3,
        after: [last.price, last.id],
      });
      const offset = await products.list({ filters: [], sort, offset: 3, limit: 3 });
      assert.deepEqual(second.rows, offset.rows);
      await assert.rejects(
        products.list({ filters: [], sort, offset: 0, limit: 3, after: [last.price] }),
        { code: 'KIT_ERR_INVALID_ARGUMENT' },
      );
    });
  });
}
