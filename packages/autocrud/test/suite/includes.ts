// Includes and nested list routes on one engine: include=customer (many-to-one), include=lines
// (one-to-many, bounded per parent with a cut marker), include=lines.product (one nested level),
// fields[path]= for included rows, soft-deleted related rows never answered, the nested route
// GET /api/customer/{id}/rel_orders with the child's filters, sort, paging and cursors (404 for a
// missing or soft-deleted parent), and hostile include values refused with nothing leaked.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud, AutoCrud, defineEntity } from '@kit/autocrud';
import {
  assertBadParameter,
  assertProblem,
  call,
  crudApp,
  type EngineUnderTest,
} from './fixtures.ts';
import { dropRelationTables, RELATION_ENDPOINTS } from './relations.ts';

interface Line {
  id: number;
  orderId: number;
  quantity: number;
  productId?: number | null;
  product?: { id: number; name: string } | null;
}
interface Order {
  id: number;
  customerId: number;
  customer?: { id: number; name: string; isDeleted: boolean } | null;
  lines?: Line[];
  linesCut?: boolean;
  rel_memos?: Array<{ id: number; text: string }>;
}

const ClashParent = defineEntity({
  name: 'ClashParent',
  table: 'clash_parents',
  schema: Type.Object({ id: Type.Integer(), kids: Type.String() }),
  writable: ['kids'],
});
const ClashChild = defineEntity({
  name: 'ClashChild',
  table: 'clash_children',
  schema: Type.Object({ id: Type.Integer(), parentId: Type.Integer() }),
  writable: ['parentId'],
  references: { parentId: { entity: ClashParent, many: 'kids' } },
});
@AutoCrud(ClashParent)
class ClashParentEndpoint {}
@AutoCrud(ClashChild)
class ClashChildEndpoint {}

export function includesSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud includes and nested routes on ${engine.name}`, () => {
    let app: FastifyInstance;
    const post = async (path: string, payload: Record<string, unknown>) => {
      const res = await call(app, { method: 'POST', url: `/api/${path}`, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: number }>().id;
    };
    const get = async <T>(url: string) => {
      const res = await call(app, url);
      assert.equal(res.statusCode, 200, res.body);
      return res.json<T>();
    };
    // Rows soft-deleted behind Kit's back, where a delete through the API would be refused (restrict).
    const softDelete = (table: string, column: string, id: number) =>
      engine.sql(
        `update ${table} set "${column}" = ${engine.flavour === 'sqlite' ? 1 : 'true'} where id = ${id}`,
      );
    const ids = {
      ada: 0,
      gone: 0,
      kettle: 0,
      lost: 0,
      full: 0,
      empty: 0,
      orphan: 0,
      lines: [] as number[],
      orphanLines: [] as number[],
      memoKept: 0,
      memoGone: 0,
    };

    before(async () => {
      await dropRelationTables(engine);
      app = await crudApp(engine, {}, undefined, RELATION_ENDPOINTS);
      ids.ada = await post('customer', { name: 'Ada' });
      ids.gone = await post('customer', { name: 'Gone' });
      ids.kettle = await post('item', { name: 'Kettle' });
      ids.lost = await post('item', { name: 'Lost' });
      ids.full = await post('order', { customerId: ids.ada, note: 'full' });
      ids.empty = await post('order', { customerId: ids.ada, note: 'empty' });
      ids.orphan = await post('order', { customerId: ids.gone, note: 'orphan' });
      ids.lines.push(await post('line', { orderId: ids.full, quantity: 1, productId: ids.kettle }));
      ids.lines.push(await post('line', { orderId: ids.full, quantity: 2, productId: ids.lost }));
      ids.lines.push(await post('line', { orderId: ids.full, quantity: 3 }));
      for (let q = 1; q <= 5; q++)
        ids.orphanLines.push(await post('line', { orderId: ids.orphan, quantity: q }));
      ids.memoKept = await post('memo', { orderId: ids.full, text: 'kept' });
      ids.memoGone = await post('memo', { orderId: ids.full, text: 'gone' });
      // Soft deletes: an item through the API (its lines' rule is set null), a memo, and a customer behind Kit's back.
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/item/${ids.lost}` })).statusCode,
        204,
      );
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/memo/${ids.memoGone}` })).statusCode,
        204,
      );
      await softDelete('rel_customers', 'isDeleted', ids.gone);
    });
    after(async () => {
      await app?.close();
    });

    it('include=customer,lines on the read by key: the customer, the lines by primary key, no ETag', async () => {
      const res = await call(app, `/api/order/${ids.full}?include=customer,lines`);
      assert.equal(res.statusCode, 200, res.body);
      const order = res.json<Order>();
      assert.deepEqual(order.customer, { id: ids.ada, name: 'Ada', isDeleted: false });
      assert.deepEqual(
        order.lines?.map((l) => [l.id, l.quantity]),
        ids.lines.map((id, i) => [id, i + 1]),
      );
      assert.equal(order.linesCut, undefined);
      assert.equal(res.headers.etag, undefined);
      // Serialized apart from the route's schema, as JSON all the same (fields= answers had no content type).
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(
        (await call(app, `/api/order/${ids.full}?fields=id`)).headers['content-type'],
        'application/json; charset=utf-8',
      );
      assert.equal(
        (await call(app, '/api/order?fields=id')).headers['content-type'],
        'application/json; charset=utf-8',
      );
      // The parameter repeated, as generated clients send an array, reads the same.
      assert.deepEqual(
        await get<Order>(`/api/order/${ids.full}?include=customer&include=lines`),
        order,
      );
    });

    it('a many-to-one include of a soft-deleted row answers null; an order without lines answers []', async () => {
      assert.equal((await get<Order>(`/api/order/${ids.orphan}?include=customer`)).customer, null);
      const empty = await get<Order>(`/api/order/${ids.empty}?include=lines`);
      assert.deepEqual(empty.lines, []);
      assert.equal(empty.linesCut, undefined);
    });

    it('soft-deleted children never appear (include=rel_memos)', async () => {
      const order = await get<Order>(`/api/order/${ids.full}?include=rel_memos`);
      assert.deepEqual(
        order.rel_memos?.map((m) => m.id),
        [ids.memoKept],
      );
    });

    it('include=lines.product: one nested level; a soft-deleted or absent product is null', async () => {
      const order = await get<Order>(`/api/order/${ids.full}?include=lines.product`);
      assert.deepEqual(
        order.lines?.map((l) => l.product?.name ?? null),
        ['Kettle', null, null],
      );
      assert.equal(order.customer, undefined);
    });

    it('limit[lines] bounds the lines per order, the first by primary key, and marks the cut', async () => {
      const order = await get<Order>(`/api/order/${ids.orphan}?include=lines&limit[lines]=2`);
      assert.deepEqual(
        order.lines?.map((l) => l.id),
        ids.orphanLines.slice(0, 2),
      );
      assert.equal(order.linesCut, true);
      const exact = await get<Order>(`/api/order/${ids.orphan}?include=lines&limit[lines]=5`);
      assert.equal(exact.lines?.length, 5);
      assert.equal(exact.linesCut, undefined);
      // On a list, per order: the full order's 3 lines are cut to 2, the empty one is not cut.
      const page = await get<{ items: Order[] }>('/api/order?include=lines&limit[lines]=2&sort=id');
      assert.deepEqual(
        page.items.map((o) => [o.id, o.lines?.length, o.linesCut ?? false]),
        [
          [ids.full, 2, true],
          [ids.empty, 0, false],
          [ids.orphan, 2, true],
        ],
      );
      assertBadParameter(
        await call(app, `/api/order/${ids.orphan}?include=lines&limit[lines]=1001`),
        'querystring',
        'limit[lines]',
      );
      assertBadParameter(
        await call(app, `/api/order/${ids.orphan}?include=lines&limit[lines]=0`),
        'querystring',
        'limit[lines]',
      );
    });

    it("fields[path]= selects the fields of included rows; fields= still selects the order's", async () => {
      const page = await get<{ items: Array<Record<string, unknown>> }>(
        '/api/order?sort=id&fields=id&include=customer,lines.product&fields[customer]=name&fields[lines]=quantity&fields[lines.product]=name',
      );
      assert.deepEqual(page.items[0], {
        id: ids.full,
        customer: { name: 'Ada' },
        lines: [
          { quantity: 1, product: { name: 'Kettle' } },
          { quantity: 2, product: null },
          { quantity: 3, product: null },
        ],
      });
      assert.deepEqual(page.items[2], {
        id: ids.orphan,
        customer: null,
        lines: [1, 2, 3, 4, 5].map((quantity) => ({ quantity, product: null })),
      });
      const one = await get<Record<string, unknown>>(
        `/api/order/${ids.full}?include=customer&fields[customer]=id`,
      );
      assert.deepEqual(one.customer, { id: ids.ada });
      assertBadParameter(
        await call(app, `/api/order/${ids.full}?fields[customer]=name`),
        'querystring',
        'fields[customer]',
        /needs include=customer/,
      );
      assertBadParameter(
        await call(app, `/api/order/${ids.full}?include=customer&fields[customer]=nope`),
        'querystring',
        'fields[customer]',
        /"nope", which is not a field of RelCustomer/,
      );
    });

    it('an unknown, too deep or hostile include is a 400 naming it, with nothing leaked', async () => {
      const hostile = [
        ['__proto__', /"__proto__", which is not one of: customer, customer\.rel_orders, lines/],
        ['constructor', /"constructor"/],
        ['a.b.c.d', /"a\.b\.c\.d"/],
        ['lines.order.customer', /"lines\.order\.customer"/],
        ['customer,', /""/],
        ['customer'.concat(',customer'.repeat(2000)), /at most/],
      ] as const;
      for (const [value, detail] of hostile) {
        for (const url of [
          `/api/order/${ids.full}?include=${encodeURIComponent(value)}`,
          `/api/order?include=${encodeURIComponent(value)}`,
          `/api/customer/${ids.ada}/rel_orders?include=${encodeURIComponent(value)}`,
        ]) {
          const res = await call(app, url);
          assertBadParameter(res, 'querystring', 'include', detail);
          assert.doesNotMatch(res.body, /select|rel_lines|row_number|json_each|stack/i);
        }
      }
      const many = await call(
        app,
        `/api/order?${Array.from({ length: 500 }, () => 'include=customer').join('&')}`,
      );
      assertBadParameter(many, 'querystring', 'include', /at most/);
      assertBadParameter(
        await call(app, '/api/order?fields[__proto__]=id'),
        'querystring',
        'fields[__proto__]',
      );
      assertBadParameter(
        await call(app, `/api/order/${ids.full}?include=customer&fields[customer]=__proto__`),
        'querystring',
        'fields[customer]',
      );
    });

    it('GET /api/customer/{id}/rel_orders: the orders list scoped to the customer, with filters, sort, paging, cursors and include', async () => {
      const all = await get<{ items: Order[]; total: number }>(
        `/api/customer/${ids.ada}/rel_orders`,
      );
      assert.deepEqual(
        all.items.map((o) => o.id),
        [ids.full, ids.empty],
      );
      assert.equal(all.total, 2);
      const filtered = await get<{ items: Order[] }>(
        `/api/customer/${ids.ada}/rel_orders?filter[note]=empty`,
      );
      assert.deepEqual(
        filtered.items.map((o) => o.id),
        [ids.empty],
      );
      const first = await get<{ items: Order[]; next: string }>(
        `/api/customer/${ids.ada}/rel_orders?sort=-id&pageSize=1`,
      );
      assert.deepEqual(
        first.items.map((o) => o.id),
        [ids.empty],
      );
      const second = await get<{ items: Order[]; next: string | null }>(
        `/api/customer/${ids.ada}/rel_orders?sort=-id&pageSize=1&after=${encodeURIComponent(first.next)}`,
      );
      assert.deepEqual(
        second.items.map((o) => o.id),
        [ids.full],
      );
      assert.equal(second.next, null);
      // A cursor is bound to its parent: another customer's nested list refuses it.
      const kept = await post('customer', { name: 'Kept' });
      assertBadParameter(
        await call(
          app,
          `/api/customer/${kept}/rel_orders?sort=-id&pageSize=1&after=${encodeURIComponent(first.next)}`,
        ),
        'querystring',
        'after',
      );
      const included = await get<{ items: Order[] }>(
        `/api/customer/${ids.ada}/rel_orders?include=lines&fields=id&fields[lines]=id`,
      );
      assert.deepEqual(included.items, [
        { id: ids.full, lines: ids.lines.map((id) => ({ id })) },
        { id: ids.empty, lines: [] },
      ]);
      assert.deepEqual(
        (await get<{ items: Order[] }>(`/api/customer/${kept}/rel_orders`)).items,
        [],
      );
      assertBadParameter(
        await call(app, `/api/customer/${ids.ada}/rel_orders?filter[nope]=1`),
        'querystring',
        'filter[nope]',
      );
    });

    it('the nested route is a 404 when the parent does not exist or is soft-deleted', async () => {
      assertProblem(await call(app, '/api/customer/987654/rel_orders'), 404);
      assertProblem(await call(app, `/api/customer/${ids.gone}/rel_orders`), 404);
      assertBadParameter(await call(app, '/api/customer/abc/rel_orders'), 'params', 'id');
    });

    it('a relation named like a field of the entity fails start-up naming both', async () => {
      const clash = Fastify();
      addKit(clash, [ClashParentEndpoint, ClashChildEndpoint]);
      addKitAutoCrud(clash, engine.connection, { createTables: true });
      await assert.rejects(useKit(clash), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'KIT_ERR_AUTOCRUD_ENTITY');
        assert.match(
          err.message,
          /Relations of ClashParent: the relation 'kids' \(ClashChild\.parentId -> ClashParent\) has the name of its field 'kids'/,
        );
        return true;
      });
      await clash.close();
    });

    it('the document types the included shapes and lists the relations include takes', async () => {
      const doc = (await call(app, '/openapi.json')).json<{
        paths: Record<
          string,
          Record<
            string,
            {
              operationId: string;
              parameters: Array<{ name: string; schema: { items?: { enum?: string[] } } }>;
            }
          >
        >;
        components: { schemas: Record<string, { properties: Record<string, unknown> }> };
      }>();
      const read = doc.paths['/api/order/{id}']?.get;
      const include = read?.parameters.find((p) => p.name === 'include');
      assert.deepEqual(include?.schema.items?.enum?.slice(0, 4), [
        'customer',
        'customer.rel_orders',
        'lines',
        'lines.order',
      ]);
      assert.ok(include?.schema.items?.enum?.includes('lines.product'));
      assert.ok(read?.parameters.some((p) => p.name === 'fields[lines.product]'));
      assert.deepEqual(doc.components.schemas.RelOrder?.properties.customer, {
        anyOf: [{ $ref: '#/components/schemas/RelCustomer' }, { type: 'null' }],
        description: 'With include=customer: the RelCustomer (null when it is missing or deleted).',
      });
      assert.deepEqual(
        (doc.components.schemas.RelOrder?.properties.lines as { items: unknown }).items,
        { $ref: '#/components/schemas/RelLine' },
      );
      assert.ok(doc.components.schemas.RelLine?.properties.product);
      assert.equal(
        doc.paths['/api/customer/{id}/rel_orders']?.get?.operationId,
        'customer_GET_id_rel_orders',
      );
    });
  });
}
