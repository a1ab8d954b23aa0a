// The sample's customers, orders and order lines: relations declared (an order's customer,
// restrict; an order's lines, cascade), an order created with its lines in one request, on the
// embedded default database (PGlite, tables made by createTables) and on SQLite where node:sqlite exists.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { useKit } from '@kit/core';
import { createApp } from '../src/app.js';

interface OrderTree {
  id: number;
  customerId: number;
  note?: string | null;
  createdAt: string;
  lines: Array<{ id: number; orderId: number; sku: string; quantity: number; price: string }>;
}

const sqlite = typeof process.getBuiltinModule === 'function' && process.getBuiltinModule('node:sqlite') !== undefined;
const dir = mkdtempSync(path.join(tmpdir(), 'kit-shop-'));
after(() => rmSync(dir, { recursive: true, force: true }));

for (const [engine, url] of [['PGlite', 'pglite:'], ['node:sqlite', `sqlite:${path.join(dir, 'shop.db')}`]] as const) {
  describe(`the sample's customers, orders and lines on ${engine}`, { skip: engine === 'node:sqlite' && !sqlite ? 'node:sqlite is not in this Node' : false }, () => {
    let app: FastifyInstance;
    before(async () => {
      app = createApp({ adminApiKey: 'k', logger: false, databaseUrl: url });
      await useKit(app);
      await app.ready();
    });
    after(async () => {
      await app?.close();
    });

    it('creates an order with its lines in one request, and the README example answers as shown', async () => {
      const customer = await app.inject({ method: 'POST', url: '/api/customers', payload: { name: 'Ada Lovelace', email: 'ada@example.com' } });
      assert.equal(customer.statusCode, 201, customer.body);
      const customerId = customer.json<{ id: number }>().id;
      const res = await app.inject({
        method: 'POST',
        url: '/api/customerOrders',
        payload: { customerId, note: 'Gift wrap, please', lines: [{ sku: 'CUP-01', quantity: 2, price: '6.50' }, { sku: 'KETTLE-01', quantity: 1, price: '39' }] },
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
      const bad = await app.inject({ method: 'POST', url: '/api/customerOrders', payload: { customerId, lines: [{ sku: 'CUP-01', quantity: 1, price: '1' }, { sku: 'CUP-02', quantity: 0, price: '1' }] } });
      assert.equal(bad.statusCode, 400, bad.body);
      assert.equal(bad.json<{ errors: Array<{ name: string }> }>().errors[0]?.name, 'lines[1].quantity');
      assert.equal((await app.inject('/api/customerOrders')).json<{ total: number }>().total, 1);
      // An order for a customer that does not exist.
      const missing = await app.inject({ method: 'POST', url: '/api/customerOrders', payload: { customerId: 999_999, lines: [] } });
      assert.equal(missing.statusCode >= 409 && missing.statusCode <= 422, true, missing.body);

      // Restrict: the customer has an order. Cascade: deleting the order deletes its lines.
      assert.equal((await app.inject({ method: 'DELETE', url: `/api/customers/${customerId}` })).statusCode, 409);
      assert.equal((await app.inject({ method: 'DELETE', url: `/api/customerOrders/${order.id}` })).statusCode, 204);
      assert.equal((await app.inject(`/api/orderLines/${order.lines[0]?.id}`)).statusCode, 404);
      assert.equal((await app.inject({ method: 'DELETE', url: `/api/customers/${customerId}` })).statusCode, 204);
    });
  });
}
