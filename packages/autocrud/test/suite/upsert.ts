// Unique keys and upserts on one engine: a declared unique key is a real UNIQUE constraint (made by
// createTables), a create that takes a key's values is a 409 naming the fields, and
// `Prefer: resolution=merge-duplicates` (or ignore-duplicates) makes a POST of one row or many an
// upsert on the key: all or nothing, each row answered in order with what happened to it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { AutoCrud, CrudOperations, defineEntity } from '@kit/autocrud';
import {
  assertProblem,
  call,
  countRows,
  crudApp,
  ENDPOINTS,
  seenBodies,
  suiteTables,
  type EngineUnderTest,
} from './fixtures.ts';

const Item = defineEntity({
  name: 'UpsertItem',
  table: 'upsert_items',
  schema: Type.Object({
    id: Type.Integer(),
    sku: Type.String({ minLength: 1, maxLength: 20 }),
    name: Type.String({ minLength: 1, maxLength: 50 }),
    price: Type.Number({ minimum: 0 }),
    stock: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    version: Type.Integer(),
    isDeleted: Type.Boolean(),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  }),
  writable: ['sku', 'name', 'price', 'stock'],
  unique: [['sku'], ['name']],
  version: 'version',
  softDelete: 'isDeleted',
  createdAt: 'createdAt',
  updatedAt: 'updatedAt',
  columns: { isDeleted: 'is_deleted', createdAt: 'created_at', updatedAt: 'updated_at' },
});

@AutoCrud(Item, { operations: CrudOperations.All | CrudOperations.Patch })
class UpsertItemsEndpoint {}

interface ItemRow {
  id: number;
  sku: string;
  name: string;
  price: number;
  stock?: number | null;
  version: number;
  isDeleted: boolean;
  createdAt: string;
  updatedAt: string;
}

interface Problem {
  detail: string;
  errors?: Array<{ in: string; name: string; pointer: string; detail: string }>;
}

const MERGE = { prefer: 'resolution=merge-duplicates' };

function post(
  app: FastifyInstance,
  url: string,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return call(app, {
    method: 'POST',
    url,
    payload: JSON.stringify(payload),
    headers: { 'content-type': 'application/json', ...headers },
  });
}

export function upsertSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud unique keys and upserts on ${engine.name}`, () => {
    let app: FastifyInstance;
    const stored = async (sku: string) =>
      (
        await engine.sql(
          `select price, name, version, stock from upsert_items where sku = '${sku}'`,
        )
      )[0];

    before(async () => {
      for (const statement of [...suiteTables(engine.flavour), 'drop table if exists upsert_items'])
        await engine.sql(statement);
      app = await crudApp(engine, {}, undefined, [...ENDPOINTS, UpsertItemsEndpoint]);
    });
    after(async () => {
      await app?.close();
    });

    it('createTables declares each unique key as a UNIQUE constraint; a create taking a key is a 409 naming its field', async () => {
      if (engine.flavour === 'postgres') {
        const rows = await engine.sql(
          `select conname from pg_constraint where conrelid = 'upsert_items'::regclass and contype = 'u' order by conname`,
        );
        assert.deepEqual(
          rows.map((r) => r.conname),
          ['upsert_items_name_key', 'upsert_items_sku_key'],
        );
      } else {
        const [table] = await engine.sql(
          `select sql from sqlite_master where type = 'table' and name = 'upsert_items'`,
        );
        assert.match(String(table?.sql), /constraint "upsert_items_sku_key" unique \("sku"\)/i);
        assert.match(String(table?.sql), /constraint "upsert_items_name_key" unique \("name"\)/i);
      }
      assert.equal(
        (await post(app, '/api/upsertItems', { sku: 'U-1', name: 'one', price: 1 })).statusCode,
        201,
      );
      const taken = await post(app, '/api/upsertItems', { sku: 'U-1', name: 'other', price: 2 });
      assertProblem(taken, 409);
      const body = taken.json<Problem>();
      assert.deepEqual(
        body.errors?.map((e) => e.name),
        ['sku'],
      );
      assert.match(body.detail, /sku must be unique/);
      assert.doesNotMatch(taken.body, /upsert_items|constraint|U-1/);
      assert.equal(await countRows(engine, 'upsert_items', `name = 'other'`), 0);
    });

    it('merge-duplicates: a new key is created (201, Location), a taken one updated (200, version +1, updatedAt moves, unsent fields stay)', async () => {
      const created = await post(
        app,
        '/api/upsertItems',
        { sku: 'M-1', name: 'merge one', price: 10, stock: 5 },
        MERGE,
      );
      assert.equal(created.statusCode, 201, created.body);
      const first = created.json<ItemRow>();
      assert.equal(created.headers.location, `/api/upsertItems/${first.id}`);
      assert.equal(created.headers['preference-applied'], 'resolution=merge-duplicates');
      assert.equal(created.headers['kit-row-outcomes'], 'created');
      assert.equal(created.headers.etag, '"1"');
      const updated = await post(
        app,
        '/api/upsertItems',
        { sku: 'M-1', name: 'merge one', price: 12 },
        MERGE,
      );
      assert.equal(updated.statusCode, 200, updated.body);
      assert.equal(updated.headers.location, undefined);
      assert.equal(updated.headers['kit-row-outcomes'], 'updated');
      const second = updated.json<ItemRow>();
      assert.deepEqual(
        [second.id, second.price, second.stock, second.version, second.createdAt],
        [first.id, 12, 5, 2, first.createdAt],
      );
      assert.ok(second.updatedAt >= first.updatedAt, `${second.updatedAt} < ${first.updatedAt}`);
      assert.equal(updated.headers.etag, '"2"');
      assert.deepEqual((await call(app, `/api/upsertItems/${first.id}`)).json(), second);
      // Read-only fields stay read-only.
      const readOnly = await post(
        app,
        '/api/upsertItems',
        { sku: 'M-1', name: 'merge one', price: 1, version: 9 },
        MERGE,
      );
      assertProblem(readOnly, 400);
      assert.equal(readOnly.json<Problem>().errors?.[0]?.name, 'version');
      assert.equal(Number((await stored('M-1'))?.version), 2);
    });

    it('an array upserts every row in order: 200 with Kit-Row-Outcomes when any existed, 201 when all are new', async () => {
      await post(app, '/api/upsertItems', { sku: 'A-1', name: 'array one', price: 1 });
      const res = await post(
        app,
        '/api/upsertItems',
        [
          { sku: 'A-2', name: 'array two', price: 2 },
          { sku: 'A-1', name: 'array one', price: 11 },
          { sku: 'A-3', name: 'array three', price: 3 },
        ],
        { prefer: 'return=representation, resolution=merge-duplicates' },
      );
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['kit-row-outcomes'], 'created, updated, created');
      assert.deepEqual(
        res.json<ItemRow[]>().map((r) => [r.sku, r.price, r.version]),
        [
          ['A-2', 2, 1],
          ['A-1', 11, 2],
          ['A-3', 3, 1],
        ],
      );
      const fresh = await post(
        app,
        '/api/upsertItems',
        [{ sku: 'A-4', name: 'array four', price: 4 }],
        MERGE,
      );
      assert.equal(fresh.statusCode, 201, fresh.body);
      assert.equal(fresh.headers.location, undefined);
      // The same key twice in one array: created, then updated.
      const twice = await post(
        app,
        '/api/upsertItems',
        [
          { sku: 'A-5', name: 'array five', price: 5 },
          { sku: 'A-5', name: 'array five', price: 6 },
        ],
        MERGE,
      );
      assert.equal(twice.headers['kit-row-outcomes'], 'created, updated');
      assert.equal(Number((await stored('A-5'))?.price), 6);
    });

    it('all or nothing: a bad row (its value, or another key it takes) fails the array naming it; no row is created or changed', async () => {
      await post(app, '/api/upsertItems', { sku: 'N-1', name: 'nothing one', price: 1 });
      await post(app, '/api/upsertItems', { sku: 'N-2', name: 'nothing two', price: 2 });
      const badValue = await post(
        app,
        '/api/upsertItems',
        [
          { sku: 'N-1', name: 'nothing one', price: 100 },
          { sku: 'N-9', name: 'nothing nine', price: 9 },
          { sku: 'N-8', name: 'nothing eight', price: -1 },
        ],
        MERGE,
      );
      assertProblem(badValue, 400);
      assert.equal(badValue.json<Problem>().errors?.[0]?.name, '[2].price');
      // N-3 takes N-2's name (the second unique key): the database refuses it, after N-1's update and N-9's insert ran.
      const badKey = await post(
        app,
        '/api/upsertItems',
        [
          { sku: 'N-1', name: 'nothing one', price: 100 },
          { sku: 'N-9', name: 'nothing nine', price: 9 },
          { sku: 'N-3', name: 'nothing two', price: 3 },
        ],
        MERGE,
      );
      assertProblem(badKey, 409);
      const problem = badKey.json<Problem>();
      assert.equal(problem.errors?.[0]?.name, '[2]');
      assert.match(problem.errors?.[0]?.detail ?? '', /name is taken/);
      assert.deepEqual(
        [Number((await stored('N-1'))?.price), Number((await stored('N-1'))?.version)],
        [1, 1],
      );
      assert.equal(await countRows(engine, 'upsert_items', `sku in ('N-9', 'N-3', 'N-8')`), 0);
    });

    it('a soft-deleted row holding the key is revived as a create: 201, the fields it leaves out at their defaults, its version going on', async () => {
      const first = (
        await post(app, '/api/upsertItems', { sku: 'D-1', name: 'deleted one', price: 1, stock: 7 })
      ).json<ItemRow>();
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/upsertItems/${first.id}` })).statusCode,
        204,
      );
      assert.equal((await call(app, `/api/upsertItems/${first.id}`)).statusCode, 404);
      const revived = await post(
        app,
        '/api/upsertItems',
        { sku: 'D-1', name: 'deleted again', price: 2 },
        MERGE,
      );
      assert.equal(revived.statusCode, 201, revived.body);
      assert.equal(revived.headers['kit-row-outcomes'], 'created');
      const row = revived.json<ItemRow>();
      assert.deepEqual(
        [row.id, row.name, row.price, row.stock, row.isDeleted, row.version],
        [first.id, 'deleted again', 2, null, false, 3],
      );
      assert.ok(row.createdAt >= first.createdAt);
      assert.deepEqual((await call(app, `/api/upsertItems/${first.id}`)).json(), row);
      // A plain create of a soft-deleted row's key is still the database's conflict.
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/upsertItems/${first.id}` })).statusCode,
        204,
      );
      assertProblem(
        await post(app, '/api/upsertItems', { sku: 'D-1', name: 'deleted thrice', price: 3 }),
        409,
      );
    });

    it("ignore-duplicates leaves a taken key's row as it is (unchanged, 200) and creates the others", async () => {
      const first = (
        await post(app, '/api/upsertItems', { sku: 'I-1', name: 'ignore one', price: 1 })
      ).json<ItemRow>();
      const res = await post(
        app,
        '/api/upsertItems',
        [
          { sku: 'I-1', name: 'ignore one', price: 50 },
          { sku: 'I-2', name: 'ignore two', price: 2 },
        ],
        { prefer: 'resolution=ignore-duplicates' },
      );
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['preference-applied'], 'resolution=ignore-duplicates');
      assert.equal(res.headers['kit-row-outcomes'], 'unchanged, created');
      assert.deepEqual(res.json<ItemRow[]>()[0], first);
    });

    it('Prefer: resolution on an entity without a unique key is a 400 naming the header; unknown preferences are ignored', async () => {
      const res = await post(app, '/api/product', { name: 'no-key', price: 1 }, MERGE);
      assertProblem(res, 400);
      assert.equal(res.json<Problem>().errors?.[0]?.name, 'Prefer');
      assert.match(res.json<Problem>().detail, /declares no unique key/);
      assert.equal(await countRows(engine, 'products', `name = 'no-key'`), 0);
      const other = await post(
        app,
        '/api/product',
        { name: 'no-key', price: 1 },
        { prefer: 'return=minimal, resolution=later' },
      );
      assert.equal(other.statusCode, 201, other.body);
      assert.equal(other.headers['preference-applied'], undefined);
    });

    it('on_conflict= chooses which unique key rows are matched on; a key not declared, or on_conflict without Prefer, is a 400 and writes nothing', async () => {
      await post(app, '/api/upsertItems', { sku: 'OC-1', name: 'oc name', price: 1 });
      // Matched on name: the row keeps its id and takes the new sku.
      const byName = await post(
        app,
        '/api/upsertItems?on_conflict=name',
        { sku: 'OC-2', name: 'oc name', price: 2 },
        MERGE,
      );
      assert.equal(byName.statusCode, 200, byName.body);
      assert.equal(byName.headers['kit-row-outcomes'], 'updated');
      assert.deepEqual([byName.json<ItemRow>().sku, byName.json<ItemRow>().price], ['OC-2', 2]);
      assert.equal(await countRows(engine, 'upsert_items', `name = 'oc name'`), 1);
      // The default (the first key, sku): the same body is a new sku taking a taken name, a 409.
      assertProblem(
        await post(app, '/api/upsertItems', { sku: 'OC-3', name: 'oc name', price: 3 }, MERGE),
        409,
      );
      const before = await countRows(engine, 'upsert_items', '1 = 1');
      for (const [url, headers, pattern] of [
        [
          '/api/upsertItems?on_conflict=price',
          MERGE,
          /must name one unique key of UpsertItem.*sku or name/,
        ],
        ['/api/upsertItems?on_conflict=sku,name', MERGE, /must name one unique key/],
        ['/api/upsertItems?on_conflict=name', {}, /applies to an upsert: send Prefer/],
        ['/api/product?on_conflict=name', MERGE, /declares no unique key/],
      ] as const) {
        const res = await post(
          app,
          url,
          url.startsWith('/api/product')
            ? { name: 'refused', price: 4 }
            : { sku: 'OC-4', name: 'refused', price: 4 },
          headers,
        );
        assertProblem(res, 400);
        assert.match(res.json<Problem>().detail, pattern, url);
        assert.equal(await countRows(engine, 'upsert_items', '1 = 1'), before, url);
      }
      assert.equal(await countRows(engine, 'products', `name = 'refused'`), 0);
    });

    it('no answer of the suite leaked SQL, constraint names or stacks', () => {
      for (const body of seenBodies)
        assert.doesNotMatch(body, /upsert_items_|ON CONFLICT|duplicate key|at .*\.ts:/i);
    });
  });
}
