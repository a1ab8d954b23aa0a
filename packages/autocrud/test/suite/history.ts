// The change history on one engine: every generated write (single, bulk, nested, upsert, bulk
// PATCH, soft and hard delete) records one row per changed row in kit_changes, in the write's
// transaction, with the request's correlation id (and its audit entry counts them); sensitive
// fields are listed as changed without their values; every refused write records nothing; and
// GET /{pk}/history pages a row's changes newest first with signed cursors.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { AuditLogEntry, IAuditSink } from '@kit/core';
import {
  AutoCrud,
  ChangeHistory,
  CrudOperations,
  defineEntity,
  KIT_AUTOCRUD,
  type EntityRow,
  type KitAutoCrud,
} from '@kit/autocrud';
import { redoclyLint } from '@kit/test-support/redocly';
import { assertProblem, call, countRows, crudApp, type EngineUnderTest } from './fixtures.ts';

const HistItem = defineEntity({
  name: 'HistItem',
  table: 'hist_items',
  schema: Type.Object({
    id: Type.Integer(),
    sku: Type.String({ minLength: 1, maxLength: 20 }),
    name: Type.String({ minLength: 1, maxLength: 50 }),
    price: Type.Number({ minimum: 0 }),
    secret: Type.Optional(Type.Union([Type.String({ maxLength: 50 }), Type.Null()])),
    version: Type.Integer(),
    isDeleted: Type.Boolean(),
    updatedAt: Type.String({ format: 'date-time' }),
  }),
  writable: ['sku', 'name', 'price', 'secret'],
  unique: [['sku']],
  version: 'version',
  softDelete: 'isDeleted',
  updatedAt: 'updatedAt',
  columns: { isDeleted: 'is_deleted', updatedAt: 'updated_at' },
  history: true,
  redact: ['secret'],
});

const HistOrder = defineEntity({
  name: 'HistOrder',
  table: 'hist_orders',
  schema: Type.Object({
    id: Type.Integer(),
    customer: Type.String({ minLength: 1, maxLength: 50 }),
  }),
  writable: ['customer'],
  history: true,
});

// Hard delete; a foreign key to the orders; its class serves no history route (the flag is off by default).
const HistLine = defineEntity({
  name: 'HistLine',
  table: 'hist_lines',
  schema: Type.Object({
    id: Type.Integer(),
    orderId: Type.Integer(),
    sku: Type.String({ minLength: 1, maxLength: 20 }),
    quantity: Type.Integer({ minimum: 1 }),
  }),
  writable: ['orderId', 'sku', 'quantity'],
  columns: { orderId: 'order_id' },
  references: { orderId: { entity: () => HistOrder, many: 'lines' } },
  history: true,
});

@AutoCrud(HistItem, {
  operations: CrudOperations.All | CrudOperations.Patch | CrudOperations.History,
})
class HistItemEndpoint {}

@AutoCrud(HistOrder, { operations: CrudOperations.All | CrudOperations.History })
class HistOrderEndpoint {}

@AutoCrud(HistLine)
class HistLineEndpoint {}

class MemoryAuditSink implements IAuditSink {
  readonly entries: AuditLogEntry[] = [];
  async writeAsync(entry: AuditLogEntry): Promise<void> {
    this.entries.push(entry);
  }
}

interface Change {
  id: number;
  entity: string;
  rowKey: string;
  operation: string;
  versionBefore: number | null;
  versionAfter: number | null;
  changed: string[];
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  changedAt: string;
  correlationId: string | null;
  subject: string | null;
  traceId: string | null;
}

interface HistoryPage {
  items: Change[];
  pageSize: number;
  next: string | null;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

export function historySuite(engine: EngineUnderTest): void {
  describe(`AutoCrud change history on ${engine.name}`, () => {
    let app: FastifyInstance;
    const audit = new MemoryAuditSink();

    before(async () => {
      const drops = ['hist_lines', 'hist_orders', 'hist_items', 'kit_changes'].map(
        (t) => `drop table if exists ${t}`,
      );
      for (const statement of drops) await engine.sql(statement);
      app = await crudApp(
        engine,
        {},
        (opt) => {
          opt.configureAuditTrail();
          opt.auditSinkFactory = () => audit;
        },
        [HistItemEndpoint, HistOrderEndpoint, HistLineEndpoint],
      );
    });
    after(() => app?.close());

    /** One request; resolves with its answer and its audit entry. */
    async function send(
      method: string,
      url: string,
      payload?: unknown,
      headers: Record<string, string> = {},
    ): Promise<{ res: LightMyRequestResponse; entry: AuditLogEntry }> {
      audit.entries.length = 0;
      const res = await call(
        app,
        payload === undefined
          ? { method: method as 'GET', url, headers }
          : {
              method: method as 'POST',
              url,
              payload: JSON.stringify(payload),
              headers: { ...JSON_HEADERS, ...headers },
            },
      );
      await app.kit.audit.flush();
      const entry = audit.entries.at(-1);
      assert.ok(entry, 'the request has its audit entry');
      return { res, entry };
    }

    async function historyOf(group: string, key: unknown, query = ''): Promise<HistoryPage> {
      const res = await call(app, `/api/${group}/${String(key)}/history${query}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json<HistoryPage>();
    }

    const changes = () => countRows(engine, 'kit_changes', '1 = 1');

    it('records create, PUT, PATCH and a soft delete, each with its versions, fields, values and correlation id; the audit entry counts them', async () => {
      const created = await send('POST', '/api/histItem', {
        sku: 'H-1',
        name: 'Kettle',
        price: 40,
        secret: 'alpha',
      });
      assert.equal(created.res.statusCode, 201, created.res.body);
      assert.deepEqual(created.entry.details, { changes: 1 });
      const id = created.res.json<{ id: number }>().id;
      const put = await send('PUT', `/api/histItem/${id}`, {
        sku: 'H-1',
        name: 'Kettle',
        price: 35,
        secret: 'beta',
      });
      assert.equal(put.res.statusCode, 200, put.res.body);
      assert.deepEqual(put.entry.details, { changes: 1 });
      const patch = await send(
        'PATCH',
        `/api/histItem/${id}`,
        { name: 'Steel kettle' },
        { 'if-match': '"2"' },
      );
      assert.equal(patch.res.statusCode, 200, patch.res.body);
      const removed = await send('DELETE', `/api/histItem/${id}`);
      assert.equal(removed.res.statusCode, 204, removed.res.body);
      assert.deepEqual(removed.entry.details, { changes: 1 });

      const page = await historyOf('histItem', id);
      assert.deepEqual(
        page.items.map((c) => [c.operation, c.versionBefore, c.versionAfter]),
        [
          ['softDelete', 3, 4],
          ['patch', 2, 3],
          ['update', 1, 2],
          ['create', null, 1],
        ],
      );
      const [soft, patched, updated, create] = page.items as [Change, Change, Change, Change];
      assert.ok(
        soft.id > patched.id && patched.id > updated.id && updated.id > create.id,
        'newest first',
      );
      assert.deepEqual(create.after, {
        id,
        sku: 'H-1',
        name: 'Kettle',
        price: 40,
        version: 1,
        isDeleted: false,
        updatedAt: create.after?.updatedAt,
      });
      assert.ok(create.changed.includes('secret'), 'a redacted field is listed as set');
      assert.equal(create.before, null);
      // Only what changed; the version has its own columns and updatedAt is the change's own time.
      assert.deepEqual(updated.changed, ['price', 'secret']);
      assert.deepEqual(updated.before, { price: 40 });
      assert.deepEqual(updated.after, { price: 35 });
      assert.deepEqual(patched.changed, ['name']);
      assert.deepEqual(
        [patched.before, patched.after],
        [{ name: 'Kettle' }, { name: 'Steel kettle' }],
      );
      assert.deepEqual(
        [soft.changed, soft.before, soft.after],
        [['isDeleted'], { isDeleted: false }, { isDeleted: true }],
      );
      for (const [change, entry] of [
        [create, created.entry],
        [updated, put.entry],
        [patched, patch.entry],
        [soft, removed.entry],
      ] as const) {
        assert.equal(change.correlationId, entry.correlationId);
        assert.equal(change.entity, 'HistItem');
        assert.equal(change.rowKey, String(id));
        assert.equal(change.subject, null);
        assert.match(change.changedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      }
      assert.equal(created.res.headers['x-correlation-id'], create.correlationId);
    });

    it('never stores a redacted value, whatever the operation', async () => {
      const created = await send('POST', '/api/histItem', {
        sku: 'H-2',
        name: 'Pot',
        price: 12,
        secret: 'top-secret-1',
      });
      const id = created.res.json<{ id: number }>().id;
      await send('PATCH', `/api/histItem/${id}`, { secret: 'top-secret-2' });
      const [patched] = (await historyOf('histItem', id)).items as [Change];
      assert.deepEqual([patched.changed, patched.before, patched.after], [['secret'], {}, {}]);
      assert.equal(
        await countRows(
          engine,
          'kit_changes',
          `before_values like '%top-secret%' or after_values like '%top-secret%'`.replace(
            /(\w+_values)/g,
            engine.flavour === 'postgres' ? '$1::text' : '$1',
          ),
        ),
        0,
      );
    });

    it('a bulk create, a bulk PATCH and an upsert record one change per row, in the same transaction', async () => {
      const bulk = await send('POST', '/api/histItem', [
        { sku: 'B-1', name: 'One', price: 1 },
        { sku: 'B-2', name: 'Two', price: 2 },
        { sku: 'B-3', name: 'Three', price: 3 },
      ]);
      assert.equal(bulk.res.statusCode, 201, bulk.res.body);
      assert.deepEqual(bulk.entry.details, { changes: 3 });
      const rows = bulk.res.json<Array<{ id: number; version: number }>>();
      for (const row of rows)
        assert.deepEqual(
          (await historyOf('histItem', row.id)).items.map((c) => c.operation),
          ['create'],
        );

      const patched = await send('PATCH', '/api/histItem', [
        { id: rows[0]?.id, price: 10, version: 1 },
        { id: rows[1]?.id, price: 20 },
      ]);
      assert.equal(patched.res.statusCode, 200, patched.res.body);
      assert.deepEqual(patched.entry.details, { changes: 2 });
      const [first] = (await historyOf('histItem', rows[0]?.id)).items as [Change];
      assert.deepEqual(
        [first.operation, first.before, first.after, first.versionBefore, first.versionAfter],
        ['patch', { price: 1 }, { price: 10 }, 1, 2],
      );

      const upsert = await send(
        'POST',
        '/api/histItem',
        [
          { sku: 'B-3', name: 'Three', price: 30 },
          { sku: 'B-4', name: 'Four', price: 4 },
        ],
        { prefer: 'resolution=merge-duplicates' },
      );
      assert.equal(upsert.res.statusCode, 200, upsert.res.body);
      assert.deepEqual(upsert.entry.details, { changes: 2 });
      const [merged] = (await historyOf('histItem', rows[2]?.id)).items as [Change];
      assert.deepEqual(
        [merged.operation, merged.changed, merged.before, merged.after],
        ['patch', ['price'], { price: 3 }, { price: 30 }],
      );
      const fresh = upsert.res.json<Array<{ id: number }>>()[1];
      assert.deepEqual(
        (await historyOf('histItem', fresh?.id)).items.map((c) => c.operation),
        ['create'],
      );
      // An upsert that changes nothing (ignore, a live holder) records nothing.
      const ignored = await send(
        'POST',
        '/api/histItem',
        { sku: 'B-4', name: 'Vier', price: 44 },
        { prefer: 'resolution=ignore-duplicates' },
      );
      assert.equal(ignored.res.statusCode, 200, ignored.res.body);
      assert.equal(ignored.entry.details, undefined);
    });

    it('a nested create records the parent and each child, each under its own entity; a hard delete records the whole row', async () => {
      const { res, entry } = await send('POST', '/api/histOrder', {
        customer: 'Ada',
        lines: [
          { sku: 'L-1', quantity: 2 },
          { sku: 'L-2', quantity: 5 },
        ],
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.deepEqual(entry.details, { changes: 3 });
      const order = res.json<{ id: number; lines: Array<{ id: number }> }>();
      assert.deepEqual(
        (await historyOf('histOrder', order.id)).items.map((c) => [c.operation, c.after]),
        [['create', { id: order.id, customer: 'Ada' }]],
      );
      const line = order.lines[0] as { id: number };
      const lineChanges = await engine.sql(
        `select operation, correlation_id from kit_changes where entity = 'HistLine' and row_key = '${line.id}'`,
      );
      assert.deepEqual(
        lineChanges.map((r) => [r.operation, r.correlation_id]),
        [['create', entry.correlationId]],
      );

      const removed = await send('DELETE', `/api/histLine/${line.id}`);
      assert.equal(removed.res.statusCode, 204, removed.res.body);
      const [deleted] = await engine.sql(
        `select operation, before_values, after_values from kit_changes where entity = 'HistLine' and row_key = '${line.id}' order by id desc`,
      );
      assert.equal(deleted?.operation, 'delete');
      const before =
        typeof deleted?.before_values === 'string'
          ? JSON.parse(deleted.before_values)
          : deleted?.before_values;
      assert.deepEqual(before, { id: line.id, orderId: order.id, sku: 'L-1', quantity: 2 });
      assert.equal(deleted?.after_values, null);
    });

    it('a write that fails records nothing: invalid body, unique key, missing reference, stale version, a refused line of a nested create', async () => {
      const created = await send('POST', '/api/histItem', { sku: 'F-1', name: 'Fixed', price: 5 });
      const id = created.res.json<{ id: number }>().id;
      const before = await changes();
      const refusals: Array<[LightMyRequestResponse, number]> = [
        [(await send('POST', '/api/histItem', { sku: 'F-2', name: '', price: 5 })).res, 400],
        [(await send('POST', '/api/histItem', { sku: 'F-1', name: 'Again', price: 5 })).res, 409],
        [
          (await send('PUT', `/api/histItem/${id}`, { sku: 'B-1', name: 'Taken', price: 5 })).res,
          409,
        ],
        [
          (await send('PATCH', `/api/histItem/${id}`, { price: 6 }, { 'if-match': '"7"' })).res,
          412,
        ],
        [(await send('DELETE', `/api/histItem/${id}`, undefined, { 'if-match': '"7"' })).res, 412],
        [
          (await send('POST', '/api/histLine', { orderId: 999999, sku: 'X', quantity: 1 })).res,
          422,
        ],
        [
          (
            await send('POST', '/api/histItem', [
              { sku: 'F-3', name: 'Ok', price: 1 },
              { sku: 'F-1', name: 'Dup', price: 1 },
            ])
          ).res,
          409,
        ],
        [
          (
            await send('PATCH', '/api/histItem', [
              { id, price: 9 },
              { id: 999999, price: 9 },
            ])
          ).res,
          404,
        ],
        [
          (
            await send('POST', '/api/histOrder', {
              customer: 'Bob',
              lines: [
                { sku: 'Y', quantity: 1 },
                { sku: 'Z', quantity: 0 },
              ],
            })
          ).res,
          400,
        ],
      ];
      for (const [res, status] of refusals) assertProblem(res, status);
      assert.equal(await changes(), before, 'no refused write left a change');
      assert.equal(audit.entries.at(-1)?.details, undefined);
    });

    it('a sink that throws rolls the write back; a repository call records its context, or none', async () => {
      const crud = app.kit.services.resolve<KitAutoCrud>('kitAutoCrud');
      const orders = crud.repository(HistOrder);
      const row = await orders.create({ customer: 'Plain' });
      const [plain] = await engine.sql(
        `select correlation_id, subject from kit_changes where entity = 'HistOrder' and row_key = '${row.id}'`,
      );
      assert.deepEqual({ ...plain }, { correlation_id: null, subject: null });
      const counted: number[] = [];
      await orders.update(
        row.id,
        { customer: 'Known' },
        {
          changeContext: {
            correlationId: 'job-7',
            subject: 'user-42',
            traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
            committed: (n) => counted.push(n),
          },
        },
      );
      assert.deepEqual(counted, [1]);
      const [known] = (await historyOf('histOrder', row.id)).items as [Change];
      assert.deepEqual(
        [known.correlationId, known.subject, known.traceId],
        ['job-7', 'user-42', '4bf92f3577b34da6a3ce929d0e0e4736'],
      );

      orders.addChangeSink(async (_tx, changed) => {
        if (changed.some((c) => c.after?.customer === 'boom')) throw new Error('sink refused');
      });
      const before = await changes();
      await assert.rejects(orders.update(row.id, { customer: 'boom' }), /sink refused/);
      await assert.rejects(orders.create({ customer: 'boom' }), /sink refused/);
      assert.equal(await changes(), before);
      assert.equal((await orders.get(row.id))?.customer, 'Known');
      assert.equal(await countRows(engine, 'hist_orders', `customer = 'boom'`), 0);
    });

    it('GET /{pk}/history pages newest first with cursors bound to the row; a bad cursor is a 400; the route is off unless asked for', async () => {
      const created = await send('POST', '/api/histItem', { sku: 'P-1', name: 'Paged', price: 1 });
      const id = created.res.json<{ id: number }>().id;
      for (let price = 2; price <= 5; price++)
        await send('PATCH', `/api/histItem/${id}`, { price });
      const seen: number[] = [];
      let next: string | null = '';
      let pages = 0;
      while (next !== null) {
        const page: HistoryPage = await historyOf(
          'histItem',
          id,
          `?pageSize=2${next ? `&after=${encodeURIComponent(next)}` : ''}`,
        );
        assert.ok(page.items.length <= 2);
        seen.push(...page.items.map((c) => c.versionAfter as number));
        next = page.next;
        pages++;
      }
      assert.deepEqual(seen, [5, 4, 3, 2, 1]);
      assert.equal(pages, 3);
      const first = await historyOf('histItem', id, '?pageSize=2');
      const other = await call(
        app,
        `/api/histItem/${id + 1}/history?after=${encodeURIComponent(first.next as string)}`,
      );
      assertProblem(other, 400);
      assertProblem(await call(app, `/api/histItem/${id}/history?after=forged.AAAA`), 400);
      assertProblem(await call(app, `/api/histItem/${id}/history?pageSize=0`), 400);
      assert.deepEqual((await historyOf('histItem', 987654)).items, []);
      assert.equal((await call(app, `/api/histLine/1/history`)).statusCode, 404);
    });

    it('crud.repository(ChangeHistory), with ChangeHistory from @kit/autocrud, lists the changes the route answers, with filters and cursors', async () => {
      const created = await send('POST', '/api/histItem', { sku: 'R-1', name: 'Listed', price: 1 });
      const id = created.res.json<{ id: number }>().id;
      await send('PATCH', `/api/histItem/${id}`, { price: 2 });
      await send('PATCH', `/api/histItem/${id}`, { price: 3 });
      const history = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD).repository(ChangeHistory);
      const filters = [
        { field: 'entity', op: 'eq', value: 'HistItem' },
        { field: 'rowKey', op: 'eq', value: String(id) },
      ] as const;
      const sort = [{ field: 'id', descending: true }] as const;
      const first = await history.list({ filters, sort, offset: 0, limit: 2, count: true });
      // Typed as the history's rows: the operation is one of the recorded ones.
      const operations: EntityRow<typeof ChangeHistory>['operation'][] = first.rows.map(
        (c) => c.operation,
      );
      assert.deepEqual(operations, ['patch', 'patch']);
      assert.equal(first.total, 3);
      const last = first.rows.at(-1) as EntityRow<typeof ChangeHistory>;
      const rest = await history.list({ filters, sort, offset: 0, limit: 2, after: [last.id] });
      assert.deepEqual(
        rest.rows.map((c) => [c.operation, c.versionAfter]),
        [['create', 1]],
      );
      // Row for row what GET /{pk}/history answers.
      assert.deepEqual(
        JSON.parse(JSON.stringify([...first.rows, ...rest.rows])),
        (await historyOf('histItem', id)).items,
      );
      assert.equal(ChangeHistory.name, 'KitChange');
    });

    it('the document types GET /{pk}/history (its operationId, pageSize and after, the KitChange rows) and passes redocly lint', async () => {
      const doc = (await app.inject('/openapi.json')).json<{
        components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
        paths: Record<
          string,
          Record<
            string,
            {
              operationId: string;
              parameters?: Array<{ name: string; in: string }>;
              responses: Record<string, unknown>;
            }
          >
        >;
      }>();
      const history = doc.paths['/api/histItem/{id}/history']?.get;
      assert.ok(history, Object.keys(doc.paths).join(', '));
      assert.deepEqual((history.parameters ?? []).map((p) => `${p.in}:${p.name}`).sort(), [
        'path:id',
        'query:after',
        'query:pageSize',
      ]);
      assert.match(JSON.stringify(history.responses['200']), /#\/components\/schemas\/KitChange/);
      assert.deepEqual(Object.keys(doc.components.schemas.KitChange?.properties ?? {}), [
        'id',
        'entity',
        'rowKey',
        'operation',
        'versionBefore',
        'versionAfter',
        'changed',
        'before',
        'after',
        'changedAt',
        'correlationId',
        'subject',
        'traceId',
      ]);
      assert.equal(doc.paths['/api/histLine/{id}/history'], undefined);
      const { ok, output } = await redoclyLint(doc);
      assert.ok(ok, output);
    });
  });
}
