// Column types on one engine, each at its boundaries: 64-bit integers as strings (min and max
// exact, compared and sorted as numbers), exact decimals with a declared precision and scale
// (up to 15 digits on SQLite, kept in a REAL; any number on PostgreSQL and PGlite), timestamps with microseconds and
// far and DST-crossing dates, string enums (a CHECK constraint, the allowed values in every 400
// and in the document), JSON objects and arrays (empty, nested, unicode; validated against their
// schema; the same key order on every engine), nullable fields and server defaults of every type,
// and Kit-maintained createdAt/updatedAt from the database's clock. Each is created, read,
// filtered and sorted over HTTP and through the typed repository, and the answers are compared
// with one literal, so every engine answers the same.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import {
  AutoCrud,
  CrudOperations,
  defineEntity,
  KIT_AUTOCRUD,
  type KitAutoCrud,
} from '@kit/autocrud';
import { assertBadParameter, call, crudApp, type EngineUnderTest } from './fixtures.ts';

export const Gadget = defineEntity({
  name: 'Gadget',
  table: 'gadgets',
  schema: {
    type: 'object',
    required: ['id', 'serial', 'status', 'tags', 'stock', 'createdAt', 'updatedAt'],
    properties: {
      id: { type: 'integer' },
      serial: { type: 'string', format: 'int64' },
      big: { type: ['string', 'null'], format: 'int64' },
      stock: { type: 'string', format: 'int64', default: '42' },
      at: { type: ['string', 'null'], format: 'date-time' },
      day: { type: ['string', 'null'], format: 'date', default: '2024-02-29' },
      status: { type: 'string', enum: ['draft', 'live', 'retired'], default: 'draft' },
      grade: { anyOf: [{ const: 'a' }, { const: 'b' }, { type: 'null' }] },
      attrs: {
        type: ['object', 'null'],
        properties: {
          color: { type: 'string' },
          size: { type: 'integer' },
          // A nested object that declares every key it takes.
          dims: {
            type: 'object',
            properties: { w: { type: 'integer' }, h: { type: 'integer' } },
            additionalProperties: false,
          },
        },
        additionalProperties: true,
      },
      tags: { type: 'array', items: { type: 'string' }, default: [] },
      label: { type: ['string', 'null'], default: 'unnamed' },
      createdAt: { type: 'string', format: 'date-time' },
      updatedAt: { type: 'string', format: 'date-time' },
    },
  } as const,
  writable: ['serial', 'big', 'stock', 'at', 'day', 'status', 'grade', 'attrs', 'tags', 'label'],
  createdAt: 'createdAt',
  updatedAt: 'updatedAt',
});
@AutoCrud(Gadget, { operations: CrudOperations.All | CrudOperations.Patch })
export class GadgetsEndpoint {}

// Exact decimals: a declared numeric(12, 2) price and numeric(15, 4) amount (every engine).
export const Priced = defineEntity({
  name: 'Priced',
  table: 'priced',
  schema: {
    type: 'object',
    required: ['id', 'price'],
    properties: {
      id: { type: 'integer' },
      price: { type: 'string', format: 'decimal', 'x-precision': 12, 'x-scale': 2 },
      amount: {
        type: ['string', 'null'],
        format: 'decimal',
        'x-precision': 15,
        'x-scale': 4,
        default: '0.10',
      },
    },
  } as const,
  writable: ['price', 'amount'],
});
@AutoCrud(Priced, { operations: CrudOperations.All | CrudOperations.Patch })
export class PricedEndpoint {}

// An unconstrained numeric: 30 digits and more (PostgreSQL and PGlite; SQLite keeps 15).
export const Wide = defineEntity({
  name: 'Wide',
  table: 'wide',
  schema: {
    type: 'object',
    required: ['id', 'amount'],
    properties: { id: { type: 'integer' }, amount: { type: 'string', format: 'decimal' } },
  } as const,
  writable: ['amount'],
});
@AutoCrud(Wide)
export class WideEndpoint {}

type GadgetRow = Record<string, unknown> & { id: number; createdAt: string; updatedAt: string };

const MAX = '9223372036854775807';
const MIN = '-9223372036854775808';
// In numeric order; as text '-1' < '-9…' < '0' < '10' < '9' < '9007…' < '9223…' is another order.
const SERIALS = [MIN, '-1', '0', '9', '10', '9007199254740993', MAX];

export function typesSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud column types on ${engine.name}`, () => {
    let app: FastifyInstance;
    let crud: KitAutoCrud;
    const postgres = engine.flavour === 'postgres';

    before(async () => {
      for (const table of postgres ? ['gadgets', 'priced', 'wide'] : ['gadgets', 'priced'])
        await engine.sql(`drop table if exists ${table}`);
      app = await crudApp(
        engine,
        {},
        undefined,
        postgres
          ? [GadgetsEndpoint, PricedEndpoint, WideEndpoint]
          : [GadgetsEndpoint, PricedEndpoint],
      );
      crud = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD);
    });
    after(async () => {
      await app?.close();
    });

    const post = async (payload: Record<string, unknown>): Promise<GadgetRow> => {
      const res = await call(app, { method: 'POST', url: '/api/gadgets', payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<GadgetRow>();
    };
    const ids = async (query: string): Promise<number[]> => {
      const res = await call(app, `/api/gadgets?${query}&pageSize=100`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json<{ items: GadgetRow[] }>().items.map((r) => r.id);
    };

    it('createTables makes each column of the type that holds it', async () => {
      const types = postgres
        ? Object.fromEntries(
            (
              await engine.sql(
                "select column_name as c, data_type as t from information_schema.columns where table_name = 'gadgets'",
              )
            ).map((r) => [r.c, r.t]),
          )
        : Object.fromEntries(
            (await engine.sql("select name as c, type as t from pragma_table_info('gadgets')")).map(
              (r) => [r.c, String(r.t).toLowerCase()],
            ),
          );
      const expected = postgres
        ? {
            serial: 'bigint',
            big: 'bigint',
            at: 'timestamp with time zone',
            day: 'date',
            status: 'text',
            attrs: 'jsonb',
            tags: 'jsonb',
            createdAt: 'timestamp with time zone',
          }
        : {
            serial: 'integer',
            big: 'integer',
            at: 'text',
            day: 'text',
            status: 'text',
            attrs: 'text',
            tags: 'text',
            createdAt: 'text',
          };
      for (const [column, type] of Object.entries(expected))
        assert.equal(types[column], type, column);
      if (postgres) {
        const [price] = await engine.sql(
          "select format_type(atttypid, atttypmod) as t from pg_attribute where attrelid = 'priced'::regclass and attname = 'price'",
        );
        assert.equal(price?.t, 'numeric(12,2)');
      } else {
        const [price] = await engine.sql(
          "select type as t from pragma_table_info('priced') where name = 'price'",
        );
        assert.equal(String(price?.t).toLowerCase(), 'real');
      }
      // The enum is a CHECK: another writer cannot store a value outside it either.
      await assert.rejects(engine.sql("insert into gadgets (serial, status) values (1, 'bogus')"));
    });

    it('64-bit integers: the extremes exact, answered as strings, filtered and sorted as numbers', async () => {
      const made: Record<string, number> = {};
      for (const serial of SERIALS) {
        const row = await post({ serial, big: serial, label: 'int64' });
        assert.equal(row.serial, serial);
        assert.equal(row.big, serial);
        made[serial] = row.id;
        assert.equal((await call(app, `/api/gadgets/${row.id}`)).json<GadgetRow>().serial, serial);
      }
      const all = SERIALS.map((s) => made[s]);
      assert.deepEqual(await ids('filter[label]=int64&sort=serial'), all);
      assert.deepEqual(await ids('filter[label]=int64&sort=-big'), [...all].reverse());
      assert.deepEqual(await ids(`filter[serial]=${MAX}`), [made[MAX]]);
      assert.deepEqual(await ids(`filter[serial][in]=${MIN},${MAX}&sort=serial`), [
        made[MIN],
        made[MAX],
      ]);
      assert.deepEqual(await ids('filter[label]=int64&filter[serial][gt]=9&sort=serial'), [
        made['10'],
        made['9007199254740993'],
        made[MAX],
      ]);
      assert.deepEqual(await ids('filter[label]=int64&filter[serial][lte]=-1&sort=serial'), [
        made[MIN],
        made['-1'],
      ]);
      assert.deepEqual(
        await ids('filter[serial]=9007199254740992'),
        [],
        'one below a value a double cannot tell apart',
      );
      // A cursor walk over the 64-bit key neither repeats nor skips.
      const first = (
        await call(app, '/api/gadgets?filter[label]=int64&sort=-serial&pageSize=3')
      ).json<{ items: GadgetRow[]; next: string }>();
      const second = (
        await call(
          app,
          `/api/gadgets?filter[label]=int64&sort=-serial&pageSize=10&after=${encodeURIComponent(first.next)}`,
        )
      ).json<{ items: GadgetRow[] }>();
      assert.deepEqual(
        [...first.items, ...second.items].map((r) => r.id),
        [...all].reverse(),
      );
      // Leading zeros are read as decimal; the answer has one form.
      assert.equal((await post({ serial: '007' })).serial, '7');
      assert.equal((await post({ serial: '-0' })).serial, '0');
    });

    it('64-bit integers out of range, as JSON numbers or as other text are a 400 naming the field, nothing stored', async () => {
      const before = await ids('sort=id');
      for (const serial of [
        '9223372036854775808',
        '-9223372036854775809',
        '1e3',
        '0x10',
        ' 1',
        '1.0',
        '',
        5,
        9007199254740991,
        null,
      ]) {
        assertBadParameter(
          await call(app, { method: 'POST', url: '/api/gadgets', payload: { serial } }),
          'body',
          'serial',
        );
      }
      assertBadParameter(
        await call(app, '/api/gadgets?filter[serial][gt]=9223372036854775808'),
        'querystring',
        'filter[serial][gt]',
        /64-bit/,
      );
      assertBadParameter(
        await call(app, '/api/gadgets?filter[serial][in]=1,x'),
        'querystring',
        'filter[serial][in]',
      );
      assert.deepEqual(await ids('sort=id'), before);
    });

    it('timestamps and dates: microseconds, far and DST-crossing values, compared and sorted by time on every engine', async () => {
      // Written with offsets, so text order (as given) is not time order; answered in UTC.
      const stamps: Array<[string, string]> = [
        ['2024-10-27T02:30:00.000001+02:00', '2024-10-27T00:30:00.000001Z'], // Europe's autumn change, first 02:30
        ['2024-10-27T02:30:00.000001+01:00', '2024-10-27T01:30:00.000001Z'], // the second 02:30
        ['2024-03-31T03:00:00-07:00', '2024-03-31T10:00:00.000000Z'],
        ['0001-01-01T00:00:00.000001Z', '0001-01-01T00:00:00.000001Z'],
        ['9999-12-31T23:59:59.999999+00:00', '9999-12-31T23:59:59.999999Z'],
        ['1969-12-31T23:59:59.999999Z', '1969-12-31T23:59:59.999999Z'],
      ];
      const days = ['2024-03-31', '2024-10-27', '0001-01-01', '9999-12-31', '2000-02-29'];
      const rows: GadgetRow[] = [];
      for (const [i, [given, answered]] of stamps.entries()) {
        const row = await post({
          serial: String(1000 + i),
          at: given,
          day: days[i % days.length],
          label: 'time',
        });
        assert.equal(row.at, answered);
        rows.push(row);
      }
      const byTime = [...rows]
        .sort((a, b) => ((a.at as string) < (b.at as string) ? -1 : 1))
        .map((r) => r.id);
      assert.deepEqual(await ids('filter[label]=time&sort=at'), byTime);
      assert.deepEqual(
        await ids(
          `filter[label]=time&filter[at][gt]=${encodeURIComponent('2024-10-27T02:30:00.000001+02:00')}&sort=at`,
        ),
        byTime.slice(byTime.indexOf(rows[0]!.id) + 1),
      );
      assert.deepEqual(
        await ids(
          `filter[label]=time&filter[at][in]=${encodeURIComponent('2024-10-27T01:30:00.000001Z,0001-01-01T00:00:00.000001Z')}&sort=at`,
        ),
        [rows[3]!.id, rows[1]!.id],
      );
      assert.deepEqual(
        await ids(
          'filter[label]=time&filter[day][gte]=2024-03-31&filter[day][lt]=9999-12-31&sort=day,id',
        ),
        [rows[0]!.id, rows[5]!.id, rows[1]!.id],
      );
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/gadgets',
          payload: { serial: '1', at: '2024-06-01T10:00:00' },
        }),
        'body',
        'at',
      );
    });

    it('enums: the default, the allowed values in the document, anything else a 400 naming them', async () => {
      const row = await post({ serial: '1', label: 'enum' });
      assert.equal(row.status, 'draft', 'the schema default');
      assert.equal(row.grade, null);
      assert.equal(
        (await post({ serial: '2', status: 'live', grade: 'b', label: 'enum' })).status,
        'live',
      );
      const bad = await call(app, {
        method: 'POST',
        url: '/api/gadgets',
        payload: { serial: '3', status: 'gone' },
      });
      assertBadParameter(bad, 'body', 'status', /"draft", "live", "retired"/);
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/gadgets',
          payload: { serial: '3', grade: 'c' },
        }),
        'body',
        'grade',
      );
      assertBadParameter(
        await call(app, '/api/gadgets?filter[status]=gone'),
        'querystring',
        'filter[status]',
        /"draft", "live", "retired"/,
      );
      assertBadParameter(
        await call(app, '/api/gadgets?filter[status][in]=live,gone'),
        'querystring',
        'filter[status][in]',
        /"draft", "live", "retired"/,
      );
      assert.deepEqual((await ids('filter[label]=enum&filter[status][in]=live,retired')).length, 1);
      const doc = (await call(app, '/openapi.json')).json<{
        components: {
          schemas: Record<string, { properties: Record<string, { enum?: string[] }> }>;
        };
        paths: Record<
          string,
          { get?: { parameters?: Array<{ name: string; schema: { enum?: string[] } }> } }
        >;
      }>();
      assert.deepEqual(doc.components.schemas.Gadget?.properties.status?.enum, [
        'draft',
        'live',
        'retired',
      ]);
      const parameter = doc.paths['/api/gadgets']?.get?.parameters?.find(
        (p) => p.name === 'filter[status]',
      );
      assert.deepEqual(parameter?.schema.enum, ['draft', 'live', 'retired']);
    });

    it('JSON: empty, nested and unicode values round-trip with one key order on every engine; filtered only by null; validated against the schema', async () => {
      const attrs = {
        zeta: 1,
        a: { yy: [], x: {} },
        ü: 'naïve ☕ 𝄞',
        bb: null,
        color: 'teal',
        size: 3,
        deep: [[[{ k: [true, false, 1.5, -0.25, 'x'] }]]],
      };
      const row = await post({ serial: '1', attrs, tags: ['é', '', '日本'], label: 'json' });
      // The properties the field's schema declares first (the answer's serializer writes them so), then
      // the others in jsonb's order: shorter keys first, then by their UTF-8 bytes.
      const expected =
        '{"color":"teal","size":3,"a":{"x":{},"yy":[]},"bb":null,"ü":"naïve ☕ 𝄞","deep":[[[{"k":[true,false,1.5,-0.25,"x"]}]]],"zeta":1}';
      assert.equal(JSON.stringify(row.attrs), expected);
      const read = (await call(app, `/api/gadgets/${row.id}`)).json<GadgetRow>();
      assert.equal(JSON.stringify(read.attrs), expected);
      assert.deepEqual(read.tags, ['é', '', '日本']);
      const empty = await post({ serial: '2', attrs: {}, tags: [], label: 'json' });
      assert.deepEqual([empty.attrs, empty.tags], [{}, []]);
      const none = await post({ serial: '3', attrs: null, label: 'json' });
      assert.deepEqual([none.attrs, none.tags], [null, []], 'null kept, the default [] applied');
      assert.deepEqual(await ids('filter[label]=json&filter[attrs][null]=true'), [none.id]);
      assert.deepEqual(await ids('filter[label]=json&filter[attrs][null]=false&sort=id'), [
        row.id,
        empty.id,
      ]);
      assertBadParameter(
        await call(app, '/api/gadgets?filter[attrs]=x'),
        'querystring',
        'filter[attrs]',
      );
      // A key its schema does not declare, inside the value: not a top-level field of Gadget.
      for (const [dims, at] of [
        [{ w: 1, x: 2 }, '/dims/x'],
        [{ 'a/b~c': 1 }, '/dims/a~1b~0c'],
      ] as const) {
        const res = await call(app, {
          method: 'POST',
          url: '/api/gadgets',
          payload: { serial: '4', attrs: { dims } },
        });
        assertBadParameter(
          res,
          'body',
          'attrs',
          new RegExp(`^does not match its schema at ${at}: is a key its schema does not declare$`),
          `#/attrs${at}`,
        );
        assert.equal(
          res.json<{ detail: string }>().detail,
          `Body field 'attrs' does not match its schema at ${at}: is a key its schema does not declare.`,
        );
      }
      // A fault inside a JSON field's value is the field's, at the value's own pointer.
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/gadgets',
          payload: { serial: '4', attrs: { size: 'big' } },
        }),
        'body',
        'attrs',
        /^does not match its schema at \/size: must be an integer$/,
        '#/attrs/size',
      );
      // The same inside one row of a bulk create, and of a PATCH body.
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/gadgets',
          payload: [{ serial: '5' }, { serial: '6', attrs: { dims: { x: 1 } } }],
        }),
        'body',
        '[1].attrs',
        /at \/dims\/x: is a key its schema does not declare$/,
        '#/1/attrs/dims/x',
      );
      assertBadParameter(
        await call(app, {
          method: 'PATCH',
          url: `/api/gadgets/${row.id}`,
          payload: { attrs: { dims: { x: 1 } } },
        }),
        'body',
        'attrs',
        /at \/dims\/x: is a key its schema does not declare$/,
        '#/attrs/dims/x',
      );
      // An unknown top-level field is still named as one.
      assertBadParameter(
        await call(app, { method: 'POST', url: '/api/gadgets', payload: { serial: '4', x: 1 } }),
        'body',
        'x',
        /^is not a field of Gadget$/,
      );
      // A JSON field has no order: refused by a message that says so, and lists only the fields that sort.
      const sortable =
        'id, serial, big, stock, at, day, status, grade, label, createdAt, updatedAt';
      assertBadParameter(
        await call(app, '/api/gadgets?sort=attrs'),
        'querystring',
        'sort',
        new RegExp(
          `^names attrs, a JSON field, which has no order; sortable fields of Gadget: ${sortable}$`,
        ),
      );
      assertBadParameter(
        await call(app, '/api/gadgets?sort=-serial,tags'),
        'querystring',
        'sort',
        new RegExp(
          `^names tags, a JSON field, which has no order; sortable fields of Gadget: ${sortable}$`,
        ),
      );
      assertBadParameter(
        await call(app, '/api/gadgets?sort=weight'),
        'querystring',
        'sort',
        new RegExp(`^must list sortable fields of Gadget \\(${sortable}\\),`),
      );
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/gadgets',
          payload: { serial: '4', attrs: [] },
        }),
        'body',
        'attrs',
      );
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/gadgets',
          payload: { serial: '4', tags: [1] },
        }),
        'body',
        'tags',
        /^does not match its schema at \/0: must be a string$/,
        '#/tags/0',
      );
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/gadgets',
          headers: { 'content-type': 'application/json' },
          payload: '{"serial":"4","attrs":{"k":"a\\u0000b"}}',
        }),
        'body',
        'attrs',
        /NUL/,
      );
      // GET then PUT of the answer changes nothing.
      const { id: _id, createdAt: _c, updatedAt: _u, ...body } = read;
      const put = await call(app, { method: 'PUT', url: `/api/gadgets/${row.id}`, payload: body });
      assert.equal(put.statusCode, 200, put.body);
      assert.equal(JSON.stringify(put.json<GadgetRow>().attrs), expected);
    });

    it('nullable fields and defaults of every type: a left-out field gets its default, an explicit null is NULL', async () => {
      const row = await post({ serial: '5' });
      assert.deepEqual(
        {
          stock: row.stock,
          day: row.day,
          status: row.status,
          tags: row.tags,
          label: row.label,
          big: row.big,
          at: row.at,
          attrs: row.attrs,
          grade: row.grade,
        },
        {
          stock: '42',
          day: '2024-02-29',
          status: 'draft',
          tags: [],
          label: 'unnamed',
          big: null,
          at: null,
          attrs: null,
          grade: null,
        },
      );
      const nulls = await post({ serial: '6', day: null, label: null, big: null });
      assert.deepEqual([nulls.day, nulls.label, nulls.big], [null, null, null]);
      assertBadParameter(
        await call(app, {
          method: 'POST',
          url: '/api/gadgets',
          payload: { serial: '7', stock: null },
        }),
        'body',
        'stock',
      );
    });

    it('createdAt and updatedAt: the database clock on create, updatedAt moved by every write, read-only in bodies', async () => {
      const row = await post({ serial: '8', label: 'stamped' });
      assert.match(row.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
      assert.equal(row.updatedAt, row.createdAt);
      assert.ok(Math.abs(Date.parse(row.createdAt) - Date.now()) < 60_000, row.createdAt);
      await new Promise((resolve) => setTimeout(resolve, 5));
      const put = (
        await call(app, {
          method: 'PUT',
          url: `/api/gadgets/${row.id}`,
          payload: { serial: '9', label: 'stamped' },
        })
      ).json<GadgetRow>();
      assert.equal(put.createdAt, row.createdAt);
      assert.ok(put.updatedAt > row.updatedAt, `${put.updatedAt} after ${row.updatedAt}`);
      for (const field of ['createdAt', 'updatedAt']) {
        assertBadParameter(
          await call(app, {
            method: 'POST',
            url: '/api/gadgets',
            payload: { serial: '1', [field]: '2024-01-01T00:00:00Z' },
          }),
          'body',
          field,
          /read-only/,
        );
      }
      assert.deepEqual(
        await ids(
          `filter[label]=stamped&filter[createdAt][lte]=${encodeURIComponent(put.updatedAt)}&sort=-updatedAt`,
        ),
        [row.id],
      );
      // A PATCH moves updatedAt and keeps createdAt, as the repository's patch does; an empty patch writes nothing.
      await new Promise((resolve) => setTimeout(resolve, 5));
      const patched = await call(app, {
        method: 'PATCH',
        url: `/api/gadgets/${row.id}`,
        headers: { 'content-type': 'application/merge-patch+json' },
        payload: JSON.stringify({ label: 'patched' }),
      });
      assert.equal(patched.statusCode, 200, patched.body);
      const after = patched.json<GadgetRow>();
      assert.equal(after.createdAt, row.createdAt);
      assert.ok(after.updatedAt > put.updatedAt, `${after.updatedAt} after ${put.updatedAt}`);
      const empty = (
        await call(app, { method: 'PATCH', url: `/api/gadgets/${row.id}`, payload: {} })
      ).json<GadgetRow>();
      assert.equal(empty.updatedAt, after.updatedAt);
      const viaRepository = await crud.repository(Gadget).patch(row.id, { label: 'again' });
      assert.ok(
        viaRepository &&
          viaRepository.updatedAt > after.updatedAt &&
          viaRepository.createdAt === row.createdAt,
      );
      assertBadParameter(
        await call(app, {
          method: 'PATCH',
          url: `/api/gadgets/${row.id}`,
          payload: { updatedAt: '2024-01-01T00:00:00Z' },
        }),
        'body',
        'updatedAt',
      );
    });

    it('the typed repository takes the same values and refuses what HTTP refuses, with KIT_ERR_INVALID_ARGUMENT', async () => {
      const gadgets = crud.repository(Gadget);
      const row = await gadgets.create({ serial: MAX, attrs: { b: 1, a: 2 }, status: 'live' });
      assert.equal(row.serial, MAX);
      assert.equal(JSON.stringify(row.attrs), '{"a":2,"b":1}');
      const { rows } = await gadgets.list({
        filters: [
          { field: 'serial', op: 'eq', value: MAX },
          { field: 'status', op: 'eq', value: 'live' },
        ],
        sort: [{ field: 'createdAt', descending: true }],
        offset: 0,
        limit: 10,
      });
      assert.ok(rows.some((r) => r.id === row.id));
      const refused = async (call: () => Promise<unknown>, pattern: RegExp) =>
        assert.rejects(call, (err: Error & { code?: string }) => {
          assert.equal(err.code, 'KIT_ERR_INVALID_ARGUMENT', err.message);
          assert.match(err.message, pattern);
          return true;
        });
      const loose = gadgets.create.bind(gadgets) as (
        input: Record<string, unknown>,
      ) => Promise<unknown>;
      await refused(() => loose({ serial: '1', colour: 'red' }), /colour.*not a field of Gadget/);
      await refused(
        () => loose({ serial: '1', createdAt: '2024-01-01T00:00:00Z' }),
        /createdAt.*read-only/,
      );
      await refused(() => loose({ serial: '1', id: 5 }), /id.*read-only/);
      await refused(() => loose({ serial: 5 }), /serial.*64-bit integer as a string/);
      await refused(() => loose({ serial: '1', label: 5 }), /label.*must be a string/);
      await refused(() => loose({ serial: '1', status: 'gone' }), /"draft", "live", "retired"/);
      await refused(() => loose({ serial: '1', attrs: { size: 'big' } }), /attrs.*schema/);
      await refused(
        () => loose({ serial: '1', attrs: { dims: { x: 1 } } }),
        /attrs.*does not match its schema at \/dims\/x: is a key its schema does not declare/,
      );
      await refused(
        () => loose(null as unknown as Record<string, unknown>),
        /input must be an object/,
      );
      const list = gadgets.list.bind(gadgets) as (options: unknown) => Promise<unknown>;
      await refused(
        () =>
          list({
            filters: [],
            sort: [{ field: 'weight', descending: false }],
            offset: 0,
            limit: 1,
          }),
        /weight.*not a field/,
      );
      await refused(
        () =>
          list({ filters: [], sort: [{ field: 'attrs', descending: false }], offset: 0, limit: 1 }),
        /JSON field attrs/,
      );
      await refused(
        () =>
          list({
            filters: [{ field: 'attrs', op: 'eq', value: {} }],
            sort: [],
            offset: 0,
            limit: 1,
          }),
        /does not take/,
      );
      await refused(
        () =>
          list({
            filters: [{ field: 'serial', op: 'eq', value: 1 }],
            sort: [],
            offset: 0,
            limit: 1,
          }),
        /64-bit/,
      );
      await refused(
        () => list({ filters: [null], sort: [], offset: 0, limit: 1 }),
        /must be an object/,
      );
      const update = gadgets.update.bind(gadgets) as (
        key: unknown,
        input: Record<string, unknown>,
      ) => Promise<unknown>;
      await refused(
        () => update(row.id, { serial: '1', updatedAt: '2024-01-01T00:00:00Z' }),
        /updatedAt.*read-only/,
      );
    });

    it('exact decimals: numeric(12, 2) and (15, 4) stored exactly or refused, answered with their scale, compared and sorted as numbers', async () => {
      const made: Array<[string, string]> = [];
      for (const [price, amount] of [
        ['19.99', '99999999999.9999'],
        ['-0.01', '-0.0001'],
        ['9999999999.99', '0.1'],
        ['0.10', '12345678901.2345'],
        ['100', '-99999999999.9999'],
        ['19.9', '0'],
      ]) {
        const res = await call(app, {
          method: 'POST',
          url: '/api/priced',
          payload: { price, amount },
        });
        assert.equal(res.statusCode, 201, res.body);
        const row = res.json<{ id: number; price: string; amount: string }>();
        made.push([row.price, row.amount]);
        const read = (await call(app, `/api/priced/${row.id}`)).json<{
          price: string;
          amount: string;
        }>();
        assert.deepEqual([read.price, read.amount], [row.price, row.amount]);
      }
      assert.deepEqual(made, [
        ['19.99', '99999999999.9999'],
        ['-0.01', '-0.0001'],
        ['9999999999.99', '0.1000'],
        ['0.10', '12345678901.2345'],
        ['100.00', '-99999999999.9999'],
        ['19.90', '0.0000'],
      ]);
      const prices = async (query: string) =>
        (await call(app, `/api/priced?${query}`)).json<{
          items: Array<{ price: string; amount: string }>;
        }>().items;
      assert.deepEqual(
        (await prices('sort=price&filter[price][gt]=0.1')).map((r) => r.price),
        ['19.90', '19.99', '100.00', '9999999999.99'],
      );
      assert.deepEqual(
        (await prices('sort=-amount&filter[amount][lt]=1')).map((r) => r.amount),
        ['0.1000', '0.0000', '-0.0001', '-99999999999.9999'],
      );
      assert.deepEqual(
        (await prices('filter[price]=19.90')).map((r) => r.price),
        ['19.90'],
      );
      assert.deepEqual(
        (await prices('filter[price][in]=0.1,100&sort=price')).map((r) => r.price),
        ['0.10', '100.00'],
      );
      const dflt = (
        await call(app, { method: 'POST', url: '/api/priced', payload: { price: '1' } })
      ).json<{ amount: string }>();
      assert.equal(dflt.amount, '0.1000');
      for (const price of ['19.999', '10000000000.00', 19.99, '1e2', '']) {
        assertBadParameter(
          await call(app, { method: 'POST', url: '/api/priced', payload: { price } }),
          'body',
          'price',
        );
      }
      await assert.rejects(crud.repository(Priced).create({ price: '0.001' }), {
        code: 'KIT_ERR_INVALID_ARGUMENT',
      });
    });

    if (postgres) {
      it('exact decimals without a declared precision: 30 digits and more, compared as numbers', async () => {
        for (const amount of [
          '123456789012345678901234567890.5',
          '-0.000000000000000000000000000001',
          '123456789012345678901234567890',
        ]) {
          const res = await call(app, { method: 'POST', url: '/api/wide', payload: { amount } });
          assert.equal(res.json<{ amount: string }>().amount, amount);
        }
        const list = (await call(app, '/api/wide?sort=-amount&filter[amount][gt]=0')).json<{
          items: Array<{ amount: string }>;
        }>();
        assert.deepEqual(
          list.items.map((r) => r.amount),
          ['123456789012345678901234567890.5', '123456789012345678901234567890'],
        );
      });
    }

    it('PATCH of every type: int64 extremes, a decimal, an enum, a JSON value replaced whole, null clearing a nullable field; bad values 400 with nothing changed', async () => {
      const row = await post({
        serial: '10',
        big: '1',
        attrs: { color: 'red', size: 1 },
        tags: ['a'],
        status: 'draft',
        at: '2024-03-31T00:59:59.999999Z',
      });
      const patch = async (payload: Record<string, unknown>) =>
        call(app, { method: 'PATCH', url: `/api/gadgets/${row.id}`, payload });
      const ok = async (payload: Record<string, unknown>): Promise<GadgetRow> => {
        const res = await patch(payload);
        assert.equal(res.statusCode, 200, res.body);
        return res.json<GadgetRow>();
      };
      let now = await ok({ serial: MAX, big: MIN });
      assert.deepEqual([now.serial, now.big, now.stock], [MAX, MIN, '42']);
      now = await ok({ status: 'retired', grade: 'b' });
      assert.deepEqual([now.status, now.grade, now.serial], ['retired', 'b', MAX]);
      // A JSON field is replaced whole, not merged member by member.
      now = await ok({ attrs: { size: 2 }, tags: [] });
      assert.deepEqual([now.attrs, now.tags], [{ size: 2 }, []]);
      now = await ok({ at: '2024-10-27T01:30:00.000001+02:00', day: '2024-03-31' });
      assert.deepEqual([now.at, now.day], ['2024-10-26T23:30:00.000001Z', '2024-03-31']);
      now = await ok({ big: null, attrs: null, grade: null, label: null, at: null });
      assert.deepEqual(
        [now.big, now.attrs, now.grade, now.label, now.at, now.serial],
        [null, null, null, null, null, MAX],
      );
      for (const [name, value, pattern, pointer] of [
        ['serial', 5, /string/],
        ['serial', '9223372036854775808', /64-bit/],
        ['status', 'gone', /draft/],
        ['tags', [1], undefined, '#/tags/0'],
        ['stock', null, undefined],
        ['attrs', { size: 'big' }, /size/, '#/attrs/size'],
      ] as Array<[string, unknown, RegExp | undefined, string?]>) {
        assertBadParameter(await patch({ [name]: value }), 'body', name, pattern, pointer);
      }
      assert.deepEqual((await call(app, `/api/gadgets/${row.id}`)).json<GadgetRow>(), now);
      // A decimal keeps its declared scale; more digits than declared are refused.
      const priced = (
        await call(app, { method: 'POST', url: '/api/priced', payload: { price: '1.50' } })
      ).json<{ id: number }>();
      const cents = await call(app, {
        method: 'PATCH',
        url: `/api/priced/${priced.id}`,
        payload: { price: '19.9', amount: null },
      });
      assert.deepEqual(
        [
          cents.json<{ price: string; amount: string | null }>().price,
          cents.json<{ amount: string | null }>().amount,
        ],
        ['19.90', null],
      );
      assertBadParameter(
        await call(app, {
          method: 'PATCH',
          url: `/api/priced/${priced.id}`,
          payload: { price: '19.999' },
        }),
        'body',
        'price',
      );
    });
  });
}
