// Relations on one engine: references declared in defineEntity become real foreign keys with an
// index (createTables), a write naming a missing or soft-deleted row is a 422 naming the field and
// the key, and a delete follows the declared rule (restrict: 409 naming who still refers; cascade;
// set null), each refusal proving nothing was written.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { AutoCrud, CrudOperations, defineEntity } from '@kit/autocrud';
import { assertProblem, call, countRows, crudApp, type EngineUnderTest } from './fixtures.ts';

// Soft-deleted: the database's foreign key cannot see a soft delete, Kit checks it.
export const Customer = defineEntity({
  name: 'RelCustomer',
  table: 'rel_customers',
  schema: Type.Object({
    id: Type.Integer(),
    name: Type.String({ maxLength: 100 }),
    isDeleted: Type.Boolean(),
  }),
  writable: ['name'],
  softDelete: 'isDeleted',
});

// Hard delete; refers to a customer (restrict, the default), and is referred to by lines
// (cascade), memos (set null) and shipments (restrict).
export const Order = defineEntity({
  name: 'RelOrder',
  table: 'rel_orders',
  schema: Type.Object({
    id: Type.Integer(),
    customerId: Type.Integer(),
    note: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
  }),
  writable: ['customerId', 'note'],
  columns: { customerId: 'customer_id' },
  references: { customerId: Customer },
});

// Soft-deleted, referred to by lines (include=lines.product).
export const Item = defineEntity({
  name: 'RelItem',
  table: 'rel_items',
  schema: Type.Object({
    id: Type.Integer(),
    name: Type.String({ maxLength: 100 }),
    deleted: Type.Boolean(),
  }),
  writable: ['name'],
  softDelete: 'deleted',
});

export const Line = defineEntity({
  name: 'RelLine',
  table: 'rel_lines',
  schema: Type.Object({
    id: Type.Integer(),
    orderId: Type.Integer(),
    quantity: Type.Integer({ minimum: 1 }),
    productId: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  }),
  writable: ['orderId', 'quantity', 'productId'],
  references: {
    orderId: { entity: () => Order, onDelete: 'cascade', many: 'lines' },
    productId: { entity: Item, as: 'product', onDelete: 'set null' },
  },
});

export const Memo = defineEntity({
  name: 'RelMemo',
  table: 'rel_memos',
  schema: Type.Object({
    id: Type.Integer(),
    orderId: Type.Union([Type.Integer(), Type.Null()]),
    text: Type.String({ maxLength: 100 }),
    removed: Type.Boolean(),
  }),
  writable: ['orderId', 'text'],
  softDelete: 'removed',
  references: { orderId: { entity: Order, onDelete: 'set null' } },
});

export const Shipment = defineEntity({
  name: 'RelShipment',
  table: 'rel_shipments',
  schema: Type.Object({
    id: Type.Integer(),
    orderId: Type.Integer(),
    carrier: Type.String({ maxLength: 40 }),
  }),
  writable: ['orderId', 'carrier'],
  references: { orderId: Order },
  // For the upsert's reference checks.
  unique: [['orderId', 'carrier']],
});

const ALL = CrudOperations.All | CrudOperations.Patch;
@AutoCrud(Customer, { operations: ALL })
class CustomerEndpoint {}
@AutoCrud(Order, { operations: ALL })
class OrderEndpoint {}
@AutoCrud(Line, { operations: ALL })
class LineEndpoint {}
@AutoCrud(Memo, { operations: ALL })
class MemoEndpoint {}
@AutoCrud(Shipment, { operations: ALL })
class ShipmentEndpoint {}
@AutoCrud(Item, { operations: ALL })
class ItemEndpoint {}

// Children listed first: createTables must create the referenced tables before them.
export const RELATION_ENDPOINTS = [
  ShipmentEndpoint,
  MemoEndpoint,
  LineEndpoint,
  OrderEndpoint,
  CustomerEndpoint,
  ItemEndpoint,
];

/** Drops the suite's tables, children first. */
export async function dropRelationTables(engine: EngineUnderTest): Promise<void> {
  for (const table of [
    'rel_shipments',
    'rel_memos',
    'rel_lines',
    'rel_orders',
    'rel_customers',
    'rel_items',
  ])
    await engine.sql(`drop table if exists ${table}`);
}

interface ForeignKey {
  table: string;
  column: string;
  references: string;
  onDelete: string;
}

async function foreignKeys(engine: EngineUnderTest, table: string): Promise<ForeignKey[]> {
  if (engine.flavour === 'sqlite') {
    const rows = await engine.sql(`select * from pragma_foreign_key_list('${table}')`);
    return rows.map((r) => ({
      table,
      column: String(r.from),
      references: `${String(r.table)}.${String(r.to)}`,
      onDelete: String(r.on_delete).toLowerCase(),
    }));
  }
  const rows = await engine.sql(`
    select a.attname as column, c.confrelid::regclass::text as target, ta.attname as target_column, c.confdeltype as rule
    from pg_constraint c
      join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
      join pg_attribute ta on ta.attrelid = c.confrelid and ta.attnum = c.confkey[1]
    where c.contype = 'f' and c.conrelid = '${table}'::regclass`);
  const rules: Record<string, string> = {
    r: 'restrict',
    c: 'cascade',
    n: 'set null',
    a: 'no action',
  };
  return rows.map((r) => ({
    table,
    column: String(r.column),
    references: `${String(r.target)}.${String(r.target_column)}`,
    onDelete: rules[String(r.rule)] ?? String(r.rule),
  }));
}

async function indexedColumns(engine: EngineUnderTest, table: string): Promise<string[]> {
  if (engine.flavour === 'sqlite') {
    const indexes = await engine.sql(`select * from pragma_index_list('${table}')`);
    const columns: string[] = [];
    for (const index of indexes)
      for (const info of await engine.sql(
        `select * from pragma_index_info('${String(index.name)}')`,
      ))
        columns.push(String(info.name));
    return columns;
  }
  const rows = await engine.sql(
    `select a.attname as column from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0] where i.indrelid = '${table}'::regclass`,
  );
  return rows.map((r) => String(r.column));
}

export function relationsSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud relations on ${engine.name}`, () => {
    let app: FastifyInstance;
    const post = async (path: string, payload: Record<string, unknown>) => {
      const res = await call(app, { method: 'POST', url: `/api/${path}`, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: number }>().id;
    };

    before(async () => {
      await dropRelationTables(engine);
      app = await crudApp(engine, {}, undefined, RELATION_ENDPOINTS);
    });
    after(async () => {
      await app?.close();
    });

    it('createTables declares a real FOREIGN KEY with the declared rule, and an index, for every reference', async () => {
      assert.deepEqual(await foreignKeys(engine, 'rel_orders'), [
        {
          table: 'rel_orders',
          column: 'customer_id',
          references: 'rel_customers.id',
          onDelete: 'restrict',
        },
      ]);
      assert.deepEqual(
        (await foreignKeys(engine, 'rel_lines')).sort((a, b) => a.column.localeCompare(b.column)),
        [
          {
            table: 'rel_lines',
            column: 'orderId',
            references: 'rel_orders.id',
            onDelete: 'cascade',
          },
          {
            table: 'rel_lines',
            column: 'productId',
            references: 'rel_items.id',
            onDelete: 'set null',
          },
        ],
      );
      assert.deepEqual(await foreignKeys(engine, 'rel_memos'), [
        {
          table: 'rel_memos',
          column: 'orderId',
          references: 'rel_orders.id',
          onDelete: 'set null',
        },
      ]);
      assert.ok((await indexedColumns(engine, 'rel_orders')).includes('customer_id'));
      assert.ok((await indexedColumns(engine, 'rel_lines')).includes('orderId'));
      assert.ok((await indexedColumns(engine, 'rel_shipments')).includes('orderId'));
    });

    it('a write naming a row that does not exist is a 422 naming the field and the key, and writes nothing', async () => {
      const customer = await post('customer', { name: 'Ada' });
      const before = await countRows(engine, 'rel_orders', '1 = 1');
      const res = await call(app, {
        method: 'POST',
        url: '/api/order',
        payload: { customerId: 987654 },
      });
      assertProblem(res, 422, 'Unprocessable Content');
      const body = res.json<{
        detail: string;
        errors: Array<{ in: string; name: string; pointer: string; detail: string }>;
      }>();
      assert.deepEqual(body.errors, [
        {
          in: 'body',
          name: 'customerId',
          pointer: '#/customerId',
          detail: 'names RelCustomer 987654, which does not exist',
        },
      ]);
      assert.doesNotMatch(res.body, /constraint|rel_orders|customer_id|FOREIGN|sql/i);
      assert.equal(await countRows(engine, 'rel_orders', '1 = 1'), before);

      const order = await post('order', { customerId: customer, note: 'first' });
      for (const method of ['PUT', 'PATCH'] as const) {
        const bad = await call(app, {
          method,
          url: `/api/order/${order}`,
          payload: { customerId: 987655 },
        });
        assertProblem(bad, 422);
        assert.equal(bad.json<{ errors: Array<{ name: string }> }>().errors[0]?.name, 'customerId');
      }
      assert.equal(
        await countRows(engine, 'rel_orders', `id = ${order} and customer_id = ${customer}`),
        1,
      );
      // A line naming a missing order: the same, through the database's own refusal (Order is not soft-deleted).
      const line = await call(app, {
        method: 'POST',
        url: '/api/line',
        payload: { orderId: 555555, quantity: 1 },
      });
      assertProblem(line, 422);
      assert.match(line.json<{ detail: string }>().detail, /'orderId' names RelOrder 555555/);
      assert.equal(await countRows(engine, 'rel_lines', '1 = 1'), 0);
    });

    it('a soft-deleted parent counts as gone for a new reference (create, PUT and PATCH)', async () => {
      const gone = await post('customer', { name: 'Gone' });
      const kept = await post('customer', { name: 'Kept' });
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/customer/${gone}` })).statusCode,
        204,
      );
      const res = await call(app, {
        method: 'POST',
        url: '/api/order',
        payload: { customerId: gone },
      });
      assertProblem(res, 422);
      assert.equal(res.json<{ errors: Array<{ name: string }> }>().errors[0]?.name, 'customerId');
      assert.equal(await countRows(engine, 'rel_orders', `customer_id = ${gone}`), 0);
      const order = await post('order', { customerId: kept });
      assertProblem(
        await call(app, {
          method: 'PATCH',
          url: `/api/order/${order}`,
          payload: { customerId: gone },
        }),
        422,
      );
      assert.equal(
        await countRows(engine, 'rel_orders', `id = ${order} and customer_id = ${kept}`),
        1,
      );
    });

    it("bulk create, nested create, upsert and bulk PATCH check every row's references as a single write does: 422 naming the row and field, nothing written", async () => {
      const kept = await post('customer', { name: 'Batch kept' });
      const gone = await post('customer', { name: 'Batch gone' });
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/customer/${gone}` })).statusCode,
        204,
      );
      const item = await post('item', { name: 'Kettle' });
      const goneItem = await post('item', { name: 'Old kettle' });
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/item/${goneItem}` })).statusCode,
        204,
      );
      const tables = ['rel_orders', 'rel_lines', 'rel_shipments'];
      const counts = async () => Promise.all(tables.map((t) => countRows(engine, t, '1 = 1')));
      const before = await counts();
      const refused = async (request: InjectOptions, name: string, target: string, key: number) => {
        const res = await call(app, request);
        assertProblem(res, 422, 'Unprocessable Content');
        const body = res.json<{
          detail: string;
          errors: Array<{ in: string; name: string; pointer: string; detail: string }>;
        }>();
        assert.equal(body.errors[0]?.name, name, res.body);
        assert.equal(body.errors[0]?.detail, `names ${target} ${key}, which does not exist`);
        assert.doesNotMatch(res.body, /constraint|rel_|FOREIGN|sql/i);
        assert.deepEqual(
          await counts(),
          before,
          `nothing written by ${request.method} ${request.url}`,
        );
      };
      const json = { 'content-type': 'application/json' };
      // A soft-deleted parent (Kit's check, one statement for the batch) and a missing one (the
      // database's refusal, then explained), at a row past the first.
      await refused(
        {
          method: 'POST',
          url: '/api/order',
          headers: json,
          payload: JSON.stringify([
            { customerId: kept },
            { customerId: kept },
            { customerId: gone },
          ]),
        },
        '[2].customerId',
        'RelCustomer',
        gone,
      );
      await refused(
        {
          method: 'POST',
          url: '/api/order',
          headers: json,
          payload: JSON.stringify([{ customerId: kept }, { customerId: 987001 }]),
        },
        '[1].customerId',
        'RelCustomer',
        987001,
      );
      // Nested create: a child naming a deleted or missing item, the parent naming a deleted customer.
      await refused(
        {
          method: 'POST',
          url: '/api/order',
          payload: {
            customerId: kept,
            lines: [
              { quantity: 1, productId: item },
              { quantity: 2, productId: goneItem },
            ],
          },
        },
        'lines[1].productId',
        'RelItem',
        goneItem,
      );
      await refused(
        {
          method: 'POST',
          url: '/api/order',
          payload: { customerId: kept, lines: [{ quantity: 1, productId: 987002 }] },
        },
        'lines[0].productId',
        'RelItem',
        987002,
      );
      await refused(
        {
          method: 'POST',
          url: '/api/order',
          payload: { customerId: gone, lines: [{ quantity: 1 }] },
        },
        'customerId',
        'RelCustomer',
        gone,
      );
      // Bulk PATCH: one row moved to a deleted customer fails the batch.
      const first = await post('order', { customerId: kept, note: 'a' });
      const second = await post('order', { customerId: kept, note: 'b' });
      const written = await counts();
      before.splice(0, before.length, ...written);
      await refused(
        {
          method: 'PATCH',
          url: '/api/order',
          headers: json,
          payload: JSON.stringify([
            { id: first, note: 'changed' },
            { id: second, customerId: gone },
          ]),
        },
        '[1].customerId',
        'RelCustomer',
        gone,
      );
      assert.equal(await countRows(engine, 'rel_orders', `id = ${first} and note = 'a'`), 1);
      // Upsert on the shipment's unique key: a missing order at [1], refused by the database and named.
      const prefer = { ...json, prefer: 'resolution=merge-duplicates' };
      await refused(
        {
          method: 'POST',
          url: '/api/shipment',
          headers: prefer,
          payload: JSON.stringify([
            { orderId: first, carrier: 'UPS' },
            { orderId: 987003, carrier: 'UPS' },
          ]),
        },
        '[1].orderId',
        'RelOrder',
        987003,
      );
      // The same batches with live parents go through.
      const ok = await call(app, {
        method: 'POST',
        url: '/api/order',
        headers: json,
        payload: JSON.stringify([{ customerId: kept }, { customerId: kept }]),
      });
      assert.equal(ok.statusCode, 201, ok.body);
      const tree = await call(app, {
        method: 'POST',
        url: '/api/order',
        payload: { customerId: kept, lines: [{ quantity: 1, productId: item }] },
      });
      assert.equal(tree.statusCode, 201, tree.body);
    });

    it('restrict (the default): deleting a row others refer to is a 409 naming who refers, and deletes nothing; soft delete too', async () => {
      const customer = await post('customer', { name: 'Busy' });
      const order = await post('order', { customerId: customer });
      // Soft delete: Kit checks the live referrers itself.
      const soft = await call(app, { method: 'DELETE', url: `/api/customer/${customer}` });
      assertProblem(soft, 409, 'Conflict');
      assert.deepEqual(soft.json<{ referrer: unknown }>().referrer, {
        entity: 'RelOrder',
        field: 'customerId',
        key: order,
      });
      assert.match(
        soft.json<{ detail: string }>().detail,
        new RegExp(
          `RelCustomer ${customer} is still referred to by RelOrder ${order} \\(field 'customerId'\\)`,
        ),
      );
      assert.equal((await call(app, `/api/customer/${customer}`)).statusCode, 200);
      // Hard delete refused by the database's RESTRICT: the 409 names the shipment.
      const shipment = await post('shipment', { orderId: order, carrier: 'DHL' });
      const hard = await call(app, { method: 'DELETE', url: `/api/order/${order}` });
      assertProblem(hard, 409);
      assert.deepEqual(hard.json<{ referrer: unknown }>().referrer, {
        entity: 'RelShipment',
        field: 'orderId',
        key: shipment,
      });
      assert.doesNotMatch(hard.body, /constraint|rel_|FOREIGN|sql/i);
      assert.equal(await countRows(engine, 'rel_orders', `id = ${order}`), 1);
      // Once nothing refers, the deletes go through.
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/shipment/${shipment}` })).statusCode,
        204,
      );
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/order/${order}` })).statusCode,
        204,
      );
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/customer/${customer}` })).statusCode,
        204,
      );
    });

    it('a create or PATCH racing the soft delete of the row it names (restrict): never both, over many rounds', async () => {
      // The create checks its parent is live, the soft delete that nothing live refers to it: the
      // parent is locked between each check and its write, so one of the two sees the other.
      const outcomes = { deleted: 0, refused: 0, created: 0 };
      // An order a PATCH moves to each round's customer, racing like a create.
      const moved = await post('order', {
        customerId: await post('customer', { name: 'race-home' }),
      });
      for (let round = 0; round < 40; round++) {
        const customer = await post('customer', { name: `race-${round}` });
        const create = () =>
          call(app, { method: 'POST', url: '/api/order', payload: { customerId: customer } });
        const remove = () => call(app, { method: 'DELETE', url: `/api/customer/${customer}` });
        const move = () =>
          call(app, {
            method: 'PATCH',
            url: `/api/order/${moved}`,
            payload: { customerId: customer },
          });
        // By round, the delete starts up to 3 ms before the creates, with them, or up to 3 ms after
        // them: on every engine some rounds see it win and others see a create win.
        const lead = (round % 7) - 3;
        const later = <T>(ms: number, request: () => Promise<T>) =>
          ms > 0 ? sleep(ms).then(request) : request();
        const [deleted, ...creates] = await Promise.all([
          later(lead, remove),
          later(-lead, create),
          later(-lead, move),
          later(-lead, create),
        ]);
        for (const c of creates)
          assert.ok(
            c.statusCode === 201 || c.statusCode === 200 || c.statusCode === 422,
            `create or move: ${c.statusCode} ${c.body}`,
          );
        const made = creates.filter((c) => c.statusCode === 201 || c.statusCode === 200).length;
        outcomes.created += made;
        if (deleted.statusCode === 204) {
          outcomes.deleted += 1;
          assert.equal(
            made,
            0,
            `round ${round}: the customer was soft-deleted and ${made} order(s) were created for it`,
          );
        } else {
          assertProblem(deleted, 409);
          outcomes.refused += 1;
          assert.ok(
            made > 0,
            `round ${round}: the delete was refused for a referrer, and no order was created`,
          );
        }
      }
      const soft = (Customer.field('isDeleted') as { column: string }).column;
      const [orphans] = await engine.sql(
        `select count(*) as n from rel_orders o join rel_customers c on c.id = o.customer_id where c."${soft}" = ${engine.flavour === 'sqlite' ? 1 : 'true'}`,
      );
      assert.equal(Number(orphans?.n), 0, 'orders of a soft-deleted customer');
      // Both outcomes must have happened, or the race was not run.
      assert.ok(outcomes.deleted > 0 && outcomes.refused > 0, JSON.stringify(outcomes));
    });

    it('cascade deletes the referring rows; set null empties their field', async () => {
      const customer = await post('customer', { name: 'Cascade' });
      const order = await post('order', { customerId: customer });
      const other = await post('order', { customerId: customer });
      for (const quantity of [1, 2, 3]) await post('line', { orderId: order, quantity });
      await post('line', { orderId: other, quantity: 9 });
      const memo = await post('memo', { orderId: order, text: 'call first' });
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/order/${order}` })).statusCode,
        204,
      );
      assert.equal(await countRows(engine, 'rel_lines', `"orderId" = ${order}`), 0);
      assert.equal(await countRows(engine, 'rel_lines', `"orderId" = ${other}`), 1);
      assert.deepEqual((await call(app, `/api/memo/${memo}`)).json(), {
        id: memo,
        orderId: null,
        text: 'call first',
        removed: false,
      });
    });
  });
}

/** defineEntity's checks of references: no engine needed. */
export function relationDefinitionSuite(): void {
  describe('defineEntity references', () => {
    const base = { name: 'X', table: 'xs', writable: ['parentId'] as const };
    it("refuses a field that is not in the schema, a kind that is not the key's, set null on a required field, and a bad rule, naming each", () => {
      const expect = (fn: () => unknown, pattern: RegExp) =>
        assert.throws(fn, (err: Error & { code?: string }) => {
          assert.equal(err.code, 'KIT_ERR_AUTOCRUD_ENTITY');
          assert.match(err.message, pattern);
          return true;
        });
      const schema = Type.Object({
        id: Type.Integer(),
        parentId: Type.Integer(),
        label: Type.String(),
      });
      expect(
        // @ts-expect-error: 'nope' is not a field of the schema.
        () => defineEntity({ ...base, schema, references: { nope: Customer } }),
        /references names 'nope'/,
      );
      expect(
        () => defineEntity({ ...base, schema, references: { label: Customer } }),
        /'label' references RelCustomer, whose primary key 'id' is integer, but 'label' is string/,
      );
      expect(
        () =>
          defineEntity({
            ...base,
            schema,
            references: { parentId: { entity: Customer, onDelete: 'set null' } },
          }),
        /'set null', but 'parentId' is not nullable/,
      );
      expect(
        () =>
          defineEntity({
            ...base,
            schema,
            // @ts-expect-error: not a rule.
            references: { parentId: { entity: Customer, onDelete: 'drop' } },
          }),
        /onDelete must be 'restrict', 'cascade' or 'set null'/,
      );
      expect(
        () => defineEntity({ ...base, schema, references: { id: Customer } }),
        /primary key, soft-delete, version and timestamp fields cannot reference/,
      );
      expect(
        // @ts-expect-error: not an entity.
        () => defineEntity({ ...base, schema, references: { parentId: 'customers' } }),
        /must be an entity made by defineEntity/,
      );
    });
    it('names the relations: the field without Id, and the referring table, unless given', () => {
      assert.deepEqual(
        Order.references.map((r) => ({
          field: r.field,
          target: r.target().name,
          onDelete: r.onDelete,
          as: r.as,
          many: r.many,
        })),
        [
          {
            field: 'customerId',
            target: 'RelCustomer',
            onDelete: 'restrict',
            as: 'customer',
            many: 'rel_orders',
          },
        ],
      );
      assert.deepEqual(
        Line.references.map((r) => [r.as, r.many, r.onDelete, r.target().name]),
        [
          ['order', 'lines', 'cascade', 'RelOrder'],
          ['product', 'rel_lines', 'set null', 'RelItem'],
        ],
      );
    });
  });
}
