// Included rows answer every value exactly as a read of the row does, on one engine: 64-bit
// integers at both extremes (strings), exact decimals with their scale, timestamps with
// microseconds and far dates, dates, JSON objects and arrays (Kit's key order), booleans, UUIDs,
// nulls and absent optional fields, in both directions of a self-referencing relation (so an
// included table is the entity's own: the embedded subqueries must not confuse the two) and one
// nested level. On PostgreSQL and PGlite the included rows come back as JSON inside the entity's
// statement and are decoded through the same codecs; an integer too large to answer exactly is
// refused there as it is by a plain read.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { AutoCrud, CrudOperations, defineEntity, type Entity } from '@kit/autocrud';
import { call, crudApp, type EngineUnderTest } from './fixtures.ts';

export const Part = defineEntity({
  name: 'Part',
  table: 'inc_parts',
  schema: {
    type: 'object',
    required: ['id', 'serial', 'price', 'ratio', 'flag', 'tags', 'gone', 'createdAt'],
    properties: {
      id: { type: 'integer' },
      parentId: { type: ['integer', 'null'] },
      count: { type: ['integer', 'null'] },
      serial: { type: 'string', format: 'int64' },
      big: { type: ['string', 'null'], format: 'int64' },
      price: { type: 'string', format: 'decimal', 'x-precision': 12, 'x-scale': 2 },
      amount: { type: ['string', 'null'], format: 'decimal', 'x-precision': 15, 'x-scale': 4 },
      ratio: { type: 'number' },
      flag: { type: 'boolean' },
      at: { type: ['string', 'null'], format: 'date-time' },
      day: { type: ['string', 'null'], format: 'date' },
      ref: { type: ['string', 'null'], format: 'uuid' },
      attrs: { type: ['object', 'null'], additionalProperties: true },
      tags: { type: 'array', items: { type: 'string' } },
      label: { type: 'string' },
      gone: { type: 'boolean', default: false },
      createdAt: { type: 'string', format: 'date-time' },
    },
  } as const,
  writable: [
    'parentId',
    'count',
    'serial',
    'big',
    'price',
    'amount',
    'ratio',
    'flag',
    'at',
    'day',
    'ref',
    'attrs',
    'tags',
    'label',
  ],
  softDelete: 'gone',
  createdAt: 'createdAt',
  references: {
    parentId: { entity: (): Entity => Part, onDelete: 'cascade', as: 'parent', many: 'children' },
  },
});
@AutoCrud(Part, { operations: CrudOperations.All })
class PartsEndpoint {}

type PartRow = Record<string, unknown> & {
  id: number;
  parent?: PartRow | null;
  children?: PartRow[];
  childrenCut?: boolean;
};

export function includeValuesSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud included values on ${engine.name}`, () => {
    let app: FastifyInstance;
    const ids = { root: 0, a: 0, b: 0, c: 0, gone: 0 };
    const get = async (url: string): Promise<PartRow> => {
      const res = await call(app, url);
      assert.equal(res.statusCode, 200, res.body);
      return res.json<PartRow>();
    };
    const post = async (payload: Record<string, unknown>): Promise<number> => {
      const res = await call(app, { method: 'POST', url: '/api/parts', payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: number }>().id;
    };
    /** The same values of the same types (the answer's top-level key order is the serializer's), JSON values in the same key order. */
    const same = (included: unknown, read: PartRow): void => {
      assert.deepEqual(included, read);
      assert.equal(JSON.stringify((included as PartRow).attrs), JSON.stringify(read.attrs));
    };
    /** The row as a plain read by key answers it, without the relation properties. */
    const plain = async (id: number): Promise<PartRow> => get(`/api/parts/${id}`);

    before(async () => {
      await engine.sql('drop table if exists inc_parts');
      app = await crudApp(engine, {}, undefined, [PartsEndpoint]);
      ids.root = await post({
        parentId: null,
        count: Number.MAX_SAFE_INTEGER,
        serial: '9223372036854775807',
        big: '-9223372036854775808',
        price: '9999999999.99',
        amount: '-12345678901.2345',
        ratio: 0.1,
        flag: true,
        at: '9999-12-31T23:59:59.999999Z',
        day: '2024-02-29',
        ref: '0b5e4d4c-8f0e-4c41-9d3e-2f1a7c3b9e10',
        attrs: { z: 1, a: { b: [1, 'ü', null] }, m: '"q"' },
        tags: ['x', 'ü'],
        label: 'root',
      });
      ids.a = await post({
        parentId: ids.root,
        count: -Number.MAX_SAFE_INTEGER,
        serial: '-9223372036854775808',
        price: '0.10',
        ratio: -1.5e-300,
        flag: false,
        at: '0001-01-01T00:00:00.000001Z',
        day: '0001-01-01',
        attrs: {},
        tags: [],
        label: 'a',
      });
      ids.b = await post({
        parentId: ids.root,
        serial: '0',
        big: '9007199254740993',
        price: '-0.01',
        amount: '0.0001',
        ratio: 1.7976931348623157e308,
        flag: true,
        at: '2024-03-31T01:30:00.5Z',
        day: '9999-12-31',
        attrs: { b: 2, a: 1 },
        tags: ['é'],
        label: '',
      });
      ids.c = await post({
        parentId: ids.a,
        serial: '1',
        price: '1',
        ratio: 0,
        flag: false,
        tags: [],
        label: 'c',
      });
      ids.gone = await post({
        parentId: ids.root,
        serial: '2',
        price: '2',
        ratio: 2,
        flag: true,
        tags: [],
        label: 'gone',
      });
      assert.equal(
        (await call(app, { method: 'DELETE', url: `/api/parts/${ids.gone}` })).statusCode,
        204,
      );
    });
    after(() => app?.close());

    it('one-to-many and many-to-one includes answer each row exactly as the read by key does', async () => {
      const root = await get(`/api/parts/${ids.root}?include=children`);
      assert.deepEqual(
        root.children?.map((r) => r.id),
        [ids.a, ids.b],
      );
      for (const child of root.children ?? []) same(child, await plain(child.id));
      const { children: _, ...own } = root;
      same(own, await plain(ids.root));
      for (const id of [ids.a, ids.b]) {
        const child = await get(`/api/parts/${id}?include=parent`);
        same(child.parent, await plain(ids.root));
      }
      assert.equal((await get(`/api/parts/${ids.root}?include=parent`)).parent, null);
    });

    it('a list with a nested self-include answers the same values, cut per parent, soft-deleted rows left out', async () => {
      const res = await call(
        app,
        `/api/parts?include=parent,children.children&limit[children]=1&sort=id`,
      );
      assert.equal(res.statusCode, 200, res.body);
      const items = res.json<{ items: PartRow[] }>().items;
      assert.deepEqual(
        items.map((r) => r.id),
        [ids.root, ids.a, ids.b, ids.c],
      );
      const [root, a, b, c] = items as [PartRow, PartRow, PartRow, PartRow];
      assert.equal(root.parent, null);
      assert.deepEqual(
        root.children?.map((r) => r.id),
        [ids.a],
      );
      assert.equal(root.childrenCut, true);
      const { children: grand, ...firstChild } = root.children?.[0] as PartRow;
      same(firstChild, await plain(ids.a));
      assert.equal(grand?.length, 1);
      same(grand?.[0], await plain(ids.c));
      same(a.parent, await plain(ids.root));
      same(c.parent, await plain(ids.a));
      assert.equal(a.childrenCut, undefined);
      assert.deepEqual(b.children, []);
      assert.equal(b.childrenCut, undefined);
    });

    it('an integer too large to answer exactly is refused in an include as in a plain read', async () => {
      await engine.sql(`update inc_parts set "count" = 9007199254740993 where id = ${ids.b}`);
      try {
        const alone = await call(app, `/api/parts/${ids.b}`);
        const included = await call(app, `/api/parts/${ids.root}?include=children`);
        assert.notEqual(alone.statusCode, 200, alone.body);
        assert.equal(included.statusCode, alone.statusCode, included.body);
        assert.doesNotMatch(included.body, /9007199254740992|9007199254740993/);
      } finally {
        await engine.sql(`update inc_parts set "count" = null where id = ${ids.b}`);
      }
    });
  });
}
