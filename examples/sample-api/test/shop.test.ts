// @test-lines: once - the sample's shop routes through Kit's API
// The sample's customers, orders and order lines: relations declared (an order's customer,
// restrict; an order's lines, cascade), an order created with its lines in one request, orders and
// lines owned by their customer (a row check on the token's sub), on the embedded default database
// (PGlite, tables made by createTables) and on SQLite where node:sqlite exists.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { useKit } from '@kit/core';
import { TestAuthority } from '@kit/test-support/jwt-authority';
import { createApp } from '../src/app.js';

interface OrderTree {
  id: number;
  customerId: number;
  note?: string | null;
  createdAt: string;
  lines: Array<{
    id: number;
    orderId: number;
    customerId?: number | null;
    sku: string;
    quantity: number;
    price: string;
  }>;
}

type Headers = Record<string, string>;

const sqlite =
  typeof process.getBuiltinModule === 'function' &&
  process.getBuiltinModule('node:sqlite') !== undefined;
const dir = mkdtempSync(path.join(tmpdir(), 'kit-shop-'));
after(() => rmSync(dir, { recursive: true, force: true }));

for (const [engine, url] of [
  ['PGlite', 'pglite:'],
  ['node:sqlite', `sqlite:${path.join(dir, 'shop.db')}`],
] as const) {
  describe(
    `the sample's customers, orders and lines on ${engine}`,
    { skip: engine === 'node:sqlite' && !sqlite ? 'node:sqlite is not in this Node' : false },
    () => {
      let app: FastifyInstance;
      let authority: TestAuthority;
      let staff: Headers;
      const customer = async (id: number): Promise<Headers> => ({
        authorization: `Bearer ${await authority.sign({ claims: { sub: String(id), roles: ['customer'] } })}`,
      });
      before(async () => {
        authority = await TestAuthority.start();
        app = createApp({
          adminApiKey: 'k',
          logger: false,
          databaseUrl: url,
          jwtAuthority: authority.url,
          jwtAudiences: ['api://kit-tests'],
        });
        await useKit(app);
        await app.ready();
        staff = {
          authorization: `Bearer ${await authority.sign({ claims: { sub: 'clerk', roles: ['staff'] } })}`,
        };
      });
      after(async () => {
        await app?.close();
        await authority?.stop();
      });

      it('creates an order with its lines in one request, and the README example answers as shown', async () => {
        const customer = await app.inject({
          method: 'POST',
          url: '/api/customers',
          payload: { name: 'Ada Lovelace', email: 'ada@example.com' },
        });
        assert.equal(customer.statusCode, 201, customer.body);
        const customerId = customer.json<{ id: number }>().id;
        const res = await app.inject({
          method: 'POST',
          url: '/api/customerOrders',
          headers: staff,
          payload: {
            customerId,
            note: 'Gift wrap, please',
            lines: [
              { sku: 'CUP-01', quantity: 2, price: '6.50' },
              { sku: 'KETTLE-01', quantity: 1, price: '39' },
            ],
          },
        });
        assert.equal(res.statusCode, 201, res.body);
        const order = res.json<OrderTree>();
        assert.equal(res.headers.location, `/api/customerOrders/${order.id}`);
        assert.deepEqual(
          order.lines.map((l) => [l.orderId, l.sku, l.quantity, l.price]),
          [
            [order.id, 'CUP-01', 2, '6.50'],
            [order.id, 'KETTLE-01', 1, '39.00'],
          ],
        );
        // A bad line: nothing written, the line named.
        const bad = await app.inject({
          method: 'POST',
          url: '/api/customerOrders',
          headers: staff,
          payload: {
            customerId,
            lines: [
              { sku: 'CUP-01', quantity: 1, price: '1' },
              { sku: 'CUP-02', quantity: 0, price: '1' },
            ],
          },
        });
        assert.equal(bad.statusCode, 400, bad.body);
        assert.equal(
          bad.json<{ errors: Array<{ name: string }> }>().errors[0]?.name,
          'lines[1].quantity',
        );
        assert.equal(
          (await app.inject({ url: '/api/customerOrders', headers: staff })).json<{
            total: number;
          }>().total,
          1,
        );
        // An order for a customer that does not exist.
        const missing = await app.inject({
          method: 'POST',
          url: '/api/customerOrders',
          headers: staff,
          payload: { customerId: 999_999, lines: [] },
        });
        assert.equal(missing.statusCode >= 409 && missing.statusCode <= 422, true, missing.body);

        // Restrict: the customer has an order. Cascade: deleting the order deletes its lines.
        assert.equal(
          (await app.inject({ method: 'DELETE', url: `/api/customers/${customerId}` })).statusCode,
          409,
        );
        assert.equal(
          (
            await app.inject({
              method: 'DELETE',
              url: `/api/customerOrders/${order.id}`,
              headers: staff,
            })
          ).statusCode,
          204,
        );
        assert.equal(
          (await app.inject({ url: `/api/orderLines/${order.lines[0]?.id}`, headers: staff }))
            .statusCode,
          404,
        );
        assert.equal(
          (await app.inject({ method: 'DELETE', url: `/api/customers/${customerId}` })).statusCode,
          204,
        );
      });

      it("orders and lines are owned by their customer: another customer's order is a 404 and never counted, a create is the caller's, included and nested-listed rows are the caller's", async () => {
        const ids: number[] = [];
        for (const [name, email] of [
          ['Grace Hopper', 'grace@example.com'],
          ['Alan Turing', 'alan@example.com'],
        ]) {
          const res = await app.inject({
            method: 'POST',
            url: '/api/customers',
            payload: { name, email },
          });
          assert.equal(res.statusCode, 201, res.body);
          ids.push(res.json<{ id: number }>().id);
        }
        const [grace, alan] = ids as [number, number];
        const asGrace = await customer(grace);
        const asAlan = await customer(alan);
        const count = async () =>
          (await app.inject({ url: '/api/customerOrders?pageSize=1', headers: staff })).json<{
            total: number;
          }>().total;
        const before = await count();
        // A create naming another customer: refused, nothing written.
        const forAlan = await app.inject({
          method: 'POST',
          url: '/api/customerOrders',
          headers: asGrace,
          payload: { customerId: alan, note: "on Alan's account" },
        });
        assert.equal(forAlan.statusCode, 403, forAlan.body);
        assert.equal(await count(), before);
        // Her own, with a line: the line is hers too (its customerId from the token).
        const created = await app.inject({
          method: 'POST',
          url: '/api/customerOrders',
          headers: asGrace,
          payload: {
            customerId: grace,
            note: 'mine',
            lines: [{ sku: 'TEA-01', quantity: 1, price: '4.20' }],
          },
        });
        assert.equal(created.statusCode, 201, created.body);
        const order = created.json<OrderTree>();
        assert.equal(order.lines[0]?.customerId, grace);
        const alans = await app.inject({
          method: 'POST',
          url: '/api/customerOrders',
          headers: asAlan,
          payload: { customerId: alan, lines: [{ sku: 'TAPE-01', quantity: 3, price: '1' }] },
        });
        assert.equal(alans.statusCode, 201, alans.body);
        // Alan cannot read Grace's order (404, as a missing one), nor its lines, and lists only his own.
        assert.equal(
          (await app.inject({ url: `/api/customerOrders/${order.id}`, headers: asAlan }))
            .statusCode,
          404,
        );
        assert.equal(
          (await app.inject({ url: `/api/orderLines/${order.lines[0]?.id}`, headers: asAlan }))
            .statusCode,
          404,
        );
        const list = await app.inject({
          url: '/api/customerOrders?include=lines',
          headers: asAlan,
        });
        assert.equal(list.statusCode, 200, list.body);
        const page = list.json<{ items: OrderTree[]; total: number }>();
        assert.equal(page.total, 1);
        assert.deepEqual(
          page.items.map((o) => [o.customerId, o.lines.map((l) => l.sku)]),
          [[alan, ['TAPE-01']]],
        );
        // Grace's orders through her customer row: Alan's token sees none of them; hers, hers.
        assert.equal(
          (await app.inject({ url: `/api/customers/${grace}/orders`, headers: asAlan })).json<{
            total: number;
          }>().total,
          0,
        );
        assert.equal(
          (await app.inject({ url: `/api/customers/${grace}/orders`, headers: asGrace })).json<{
            total: number;
          }>().total,
          1,
        );
        // A customer's token may not change or delete an order, its own included (the rule allows list, get and create).
        assert.equal(
          (
            await app.inject({
              method: 'DELETE',
              url: `/api/customerOrders/${order.id}`,
              headers: asGrace,
            })
          ).statusCode,
          403,
        );
        // Without a token: 401.
        assert.equal((await app.inject('/api/customerOrders')).statusCode, 401);
      });
    },
  );
}
