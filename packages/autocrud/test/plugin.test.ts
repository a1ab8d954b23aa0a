// @test-lines: once - the plugin's options and routes through Kit's API
// The plugin's configuration surface: entity definitions, @AutoCrud, addKitAutoCrud's options and
// guards, connection strings, the OpenAPI document (named components, operationIds, redocly
// lint), the page-size options, and the repository handle. One PGlite instance serves the file.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { asValue } from 'awilix';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit } from '@kit/core';
import {
  addKitAutoCrud,
  AutoCrud,
  CrudOperations,
  defineEntity,
  KIT_AUTOCRUD,
  redactConnectionString,
  type KitAutoCrud,
} from '@kit/autocrud';
import { redoclyLint } from '@kit/test-support/redocly';
import {
  crudApp,
  DocumentsEndpoint,
  LedgersEndpoint,
  Product,
  ProductEndpoint,
  suiteTables,
} from './suite/fixtures.ts';
import { freshPGlite, pgliteEngine } from './suite/engines.ts';

const pglite = await freshPGlite();
const engine = pgliteEngine(pglite);

const schema = Type.Object({ id: Type.Integer(), name: Type.String(), active: Type.Boolean() });

function entityError(definition: Record<string, unknown>, message: RegExp): void {
  assert.throws(
    () =>
      defineEntity({
        name: 'Thing',
        table: 'things',
        schema,
        writable: ['name'],
        ...definition,
      } as never),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_AUTOCRUD_ENTITY');
      assert.match(err.message, message);
      return true;
    },
  );
}

describe('defineEntity', () => {
  it('refuses mistakes, naming the field', () => {
    entityError({ schema: { type: 'array' } }, /schema must be a JSON Schema object/);
    entityError({ name: '1st' }, /name must start with a letter/);
    entityError({ table: 'things; drop table x' }, /table .* must be an identifier/);
    entityError({ primaryKey: 'uuid' }, /primary key 'uuid' is not a field/);
    entityError(
      { schema: Type.Object({ id: Type.Boolean(), name: Type.String() }) },
      /primary key 'id' must be an integer .* or a string with format 'uuid'/,
    );
    entityError(
      {
        schema: Type.Object({ id: Type.Union([Type.Integer(), Type.Null()]), name: Type.String() }),
      },
      /primary key 'id' cannot be nullable/,
    );
    entityError({ writable: ['name', 'colour'] }, /writable names 'colour', which is not a field/);
    entityError({ writable: ['id', 'name'] }, /the primary key 'id' cannot be writable/);
    entityError({ softDelete: 'name' }, /softDelete 'name' must be a boolean field/);
    entityError(
      { softDelete: 'active', writable: ['active'] },
      /the soft-delete field 'active' cannot be writable/,
    );
    entityError(
      {
        schema: Type.Object({
          id: Type.Integer(),
          name: Type.String(),
          tags: Type.Union([Type.String(), Type.Integer()]),
        }),
      },
      /field 'tags' must be of type integer, number, string, boolean, object or array/,
    );
    const stamped = Type.Object({
      id: Type.Integer(),
      name: Type.String(),
      at: Type.String({ format: 'date-time' }),
      day: Type.String({ format: 'date' }),
    });
    entityError({ schema: stamped, createdAt: 'when' }, /createdAt 'when' is not a field/);
    entityError(
      { schema: stamped, updatedAt: 'day' },
      /updatedAt 'day' must be a field \{ type: 'string', format: 'date-time' \}/,
    );
    entityError(
      { schema: stamped, createdAt: 'at', updatedAt: 'at' },
      /createdAt and updatedAt cannot be the same field 'at'/,
    );
    entityError(
      { schema: stamped, updatedAt: 'at', writable: ['name', 'at'] },
      /the timestamp field 'at' cannot be writable/,
    );
    const priced = (options: Record<string, unknown>) =>
      Type.Object({
        id: Type.Integer(),
        name: Type.String(),
        price: Type.String({ format: 'decimal', ...options }),
      });
    entityError({ schema: priced({ 'x-scale': 2 }) }, /x-scale without x-precision/);
    entityError(
      { schema: priced({ 'x-precision': 0 }) },
      /x-precision must be an integer from 1 to 1000/,
    );
    entityError(
      { schema: priced({ 'x-precision': 5, 'x-scale': 6 }) },
      /x-scale must be an integer from 0 to x-precision \(5\)/,
    );
    entityError(
      { schema: priced({ 'x-precision': 5, 'x-scale': 2, default: '1234.5' }) },
      /field 'price' has a default Kit would refuse: must have at most 3 digits before the point/,
    );
    entityError(
      {
        schema: Type.Object({
          id: Type.Integer(),
          name: Type.String({ enum: ['a', 'b'], default: 'c' }),
        }),
      },
      /field 'name' has a default Kit would refuse: must be one of "a", "b"/,
    );
    entityError(
      {
        schema: Type.Object({
          id: Type.Integer(),
          name: Type.String({ format: 'int64', default: 5 }),
        }),
      },
      /field 'name' has a default Kit would refuse/,
    );
    entityError(
      { schema: Type.Object({ id: Type.Integer(), 'na-me': Type.String() }), writable: [] },
      /field 'na-me' must be an identifier/,
    );
    entityError({ columns: { colour: 'c' } }, /columns names 'colour'/);
    entityError(
      { columns: { name: 'active' } },
      /fields 'name' and 'active' map to the same column 'active'/,
    );
    entityError(
      { columns: { name: 'bad name' } },
      /columns.name = "bad name" is not an identifier/,
    );
    entityError({ version: 'revision' }, /version 'revision' is not a field/);
    entityError({ version: 'name' }, /version 'name' must be a non-nullable integer field/);
    entityError(
      { version: 'id' },
      /version 'id' must be a non-nullable integer field other than the primary key/,
    );
    entityError(
      {
        schema: Type.Object({
          id: Type.Integer(),
          name: Type.String(),
          v: Type.Union([Type.Integer(), Type.Null()]),
        }),
        version: 'v',
      },
      /version 'v' must be a non-nullable integer/,
    );
    entityError(
      {
        schema: Type.Object({ id: Type.Integer(), name: Type.String(), v: Type.Integer() }),
        version: 'v',
        writable: ['name', 'v'],
      },
      /the version field 'v' cannot be writable/,
    );
  });

  it('a TypeBox schema and the same plain JSON Schema literal make the same entity', () => {
    const typebox = defineEntity({
      name: 'Thing',
      table: 'things',
      schema: Type.Object({
        id: Type.Integer(),
        name: Type.String({ maxLength: 9 }),
        note: Type.Optional(Type.Union([Type.String(), Type.Null()])),
      }),
      writable: ['name', 'note'],
    });
    const plain = defineEntity({
      name: 'Thing',
      table: 'things',
      schema: {
        type: 'object',
        required: ['id', 'name'],
        properties: {
          id: { type: 'integer' },
          name: { type: 'string', maxLength: 9 },
          note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        },
      },
      writable: ['name', 'note'],
    });
    assert.deepEqual(
      JSON.parse(JSON.stringify(typebox.schema)),
      JSON.parse(JSON.stringify(plain.schema)),
    );
    assert.deepEqual(typebox.fields, plain.fields);
    assert.deepEqual(
      Object.getOwnPropertySymbols(typebox.schema),
      [],
      'no TypeBox symbols survive',
    );
  });

  it('@AutoCrud refuses Create or Update on an entity with no writable field, and unknown operation flags', () => {
    const readOnly = defineEntity({ name: 'Log', table: 'logs', schema, writable: [] });
    assert.throws(() => AutoCrud(readOnly), {
      code: 'KIT_ERR_AUTOCRUD_ENTITY',
      message: /Create is allowed but the entity has no writable field/,
    });
    assert.throws(
      () => AutoCrud(readOnly, { operations: CrudOperations.List | CrudOperations.Update }),
      { message: /Update is allowed/ },
    );
    assert.doesNotThrow(() =>
      AutoCrud(readOnly, {
        operations: CrudOperations.List | CrudOperations.Get | CrudOperations.Delete,
      }),
    );
    assert.throws(() => AutoCrud(readOnly, { operations: 0 }), { code: 'KIT_ERR_AUTOCRUD_ENTITY' });
    assert.throws(() => AutoCrud(readOnly, { operations: 64 }), {
      code: 'KIT_ERR_AUTOCRUD_ENTITY',
    });
    assert.throws(() => AutoCrud({} as never), { code: 'KIT_ERR_AUTOCRUD_ENTITY' });
  });

  it('@AutoCrud checks its idempotency and requireIfMatch options at once', () => {
    const unversioned = defineEntity({
      name: 'Thing',
      table: 'things',
      schema,
      writable: ['name'],
    });
    assert.throws(() => AutoCrud(unversioned, { requireIfMatch: true }), {
      code: 'KIT_ERR_AUTOCRUD_ENTITY',
      message: /requireIfMatch: entity Thing declares no version field/,
    });
    assert.throws(() => AutoCrud(unversioned, { requireIfMatch: 'yes' as never }), {
      code: 'KIT_ERR_INVALID_OPTION',
      message: /@AutoCrud\(Thing\) options\.requireIfMatch = "yes"/,
    });
    assert.throws(() => AutoCrud(unversioned, { idempotency: 'on' as never }), {
      code: 'KIT_ERR_INVALID_OPTION',
      message:
        /options\.idempotency = "on": expected true, false or \{ ttlMs\?, reservationTtlMs\? \}/,
    });
    assert.throws(() => AutoCrud(unversioned, { idempotency: { ttlMs: -5 } }), {
      code: 'KIT_ERR_INVALID_OPTION',
      message: /options\.idempotency\.ttlMs = -5: expected a positive integer/,
    });
    assert.doesNotThrow(() => AutoCrud(unversioned, { idempotency: { reservationTtlMs: 5000 } }));
  });
});

describe('addKitAutoCrud', () => {
  it('refuses bad options and connection strings at once, naming the option and value (never the password)', () => {
    const cases: Array<[unknown, Record<string, unknown>, RegExp]> = [
      [
        'mysql://root:hunter2@db/shop',
        {},
        /addKitAutoCrud\(app, url\): "mysql:\/\/root:\*\*\*@db\/shop": expected postgres:\/\//,
      ],
      ['', {}, /expected postgres:\/\//],
      [
        'postgres://kit:hunter2@/shop',
        {},
        /"postgres:\/\/kit:\*\*\*@\/shop": expected a valid URL/,
      ],
      ['sqlite:', {}, /'sqlite::memory:' or 'sqlite:<file>'/],
      [
        'pglite:',
        { defaultPageSize: 0 },
        /options\.defaultPageSize = 0: expected a positive integer/,
      ],
      [
        'pglite:',
        { defaultPageSize: 50, maxPageSize: 40 },
        /options\.defaultPageSize = 50: expected at most maxPageSize \(40\)/,
      ],
      ['pglite:', { maxPageNumber: -1 }, /options\.maxPageNumber = -1/],
      ['pglite:', { poolSize: '10' }, /options\.poolSize = "10"/],
      ['pglite:', { createTables: 'yes' }, /options\.createTables = "yes": expected true or false/],
      ['pglite:', { healthCheck: { timeoutMs: 0 } }, /options\.healthCheck\.timeoutMs = 0/],
      ['pglite:', { healthCheck: { name: 'data base' } }, /addCheck\(name\) = "data base"/],
      ['pglite:', { idempotency: 'yes' }, /options\.idempotency = "yes": expected true, false or/],
      [
        'pglite:',
        { idempotency: { reservationTtlMs: 0 } },
        /options\.idempotency\.reservationTtlMs = 0: expected a positive integer/,
      ],
      [
        'pglite:',
        { acquireTimeoutMs: 0 },
        /options\.acquireTimeoutMs = 0: expected a positive integer/,
      ],
      [
        'pglite:',
        { statementTimeoutMs: 1.5 },
        /options\.statementTimeoutMs = 1\.5: expected a positive integer/,
      ],
      [
        'pglite:',
        { idempotency: { reservationTtlMs: 12_000 } },
        /options\.idempotency\.reservationTtlMs = 12000: expected more than acquireTimeoutMs \+ statementTimeoutMs \(2000 \+ 10000 ms\)/,
      ],
      [
        'pglite:',
        { idempotency: true, statementTimeoutMs: 30_000 },
        /options\.idempotency\.reservationTtlMs = 30000: expected more than acquireTimeoutMs \+ statementTimeoutMs \(2000 \+ 30000 ms\)/,
      ],
      ['pglite:', { requireIfMatch: 1 }, /options\.requireIfMatch = 1: expected true or false/],
      [
        'pglite:',
        { cursorSecret: 'hunter2' },
        /options\.cursorSecret = \(a string of 7 characters\): expected a string of at least 32 characters/,
      ],
    ];
    for (const [url, options, message] of cases) {
      const app = Fastify();
      addKit(app, []);
      assert.throws(
        () => addKitAutoCrud(app, url as string, options),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'KIT_ERR_INVALID_OPTION', err.message);
          assert.match(err.message, message);
          assert.ok(!err.message.includes('hunter2'));
          return true;
        },
      );
    }
    assert.equal(
      redactConnectionString('postgres://kit:s3cret@db:5432/shop?sslpassword=x&application_name=a'),
      'postgres://kit:***@db:5432/shop?sslpassword=***&application_name=a',
    );
  });

  it('guards its place in the start-up: after addKit, once, before useKit completes; a check name already taken is refused', async () => {
    assert.throws(() => addKitAutoCrud(Fastify(), pglite), { code: 'KIT_ERR_NOT_ADDED' });
    const app = Fastify();
    addKit(app, [], (opt) => {
      opt.healthChecksConfigure = (hc) =>
        hc.addCheck('database', async () => ({ status: 'healthy' }));
    });
    assert.throws(() => addKitAutoCrud(app, pglite), { code: 'KIT_ERR_DUPLICATE_HEALTH_CHECK' });
    const crud = addKitAutoCrud(app, pglite, { healthCheck: { name: 'catalog-db' } });
    assert.throws(() => addKitAutoCrud(app, pglite), { code: 'KIT_ERR_AUTOCRUD_ALREADY_ADDED' });
    await useKit(app);
    assert.throws(() => addKitAutoCrud(Object.assign(app), pglite), {
      code: 'KIT_ERR_AUTOCRUD_ALREADY_ADDED',
    });
    assert.equal(app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD), crud);
    assert.equal(crud.engine, 'pglite');
    await app.close();
    const late = Fastify();
    addKit(late, []);
    await useKit(late);
    assert.throws(() => addKitAutoCrud(late, pglite), { code: 'KIT_ERR_AUTOCRUD_TOO_LATE' });
    await late.close();
  });

  it('an @AutoCrud class without addKitAutoCrud fails start-up with KIT_ERR_AUTOCRUD_NOT_ADDED naming it', async () => {
    const app = Fastify();
    addKit(app, [ProductEndpoint]);
    await assert.rejects(useKit(app), {
      code: 'KIT_ERR_AUTOCRUD_NOT_ADDED',
      message: /ProductEndpoint is an @AutoCrud class/,
    });
    await app.close();
    // A handle registered under the name by something else (another copy of the package) is not this copy's database.
    const other = Fastify();
    addKit(other, [ProductEndpoint]).services.register({ [KIT_AUTOCRUD]: asValue({}) });
    await assert.rejects(useKit(other), {
      code: 'KIT_ERR_AUTOCRUD_NOT_ADDED',
      message: /by another copy of @kit\/autocrud/,
    });
    await other.close();
  });

  it('requireIfMatch on for every class fails start-up on an entity with no version field that can be written, naming it', async () => {
    const app = Fastify();
    addKit(app, [ProductEndpoint]);
    addKitAutoCrud(app, pglite, { requireIfMatch: true });
    await assert.rejects(useKit(app), {
      code: 'KIT_ERR_AUTOCRUD_ENTITY',
      message:
        /requireIfMatch is on, but entity Product \(ProductEndpoint\) declares no version field/,
    });
    await app.close();
  });

  it("a class's idempotency reservation shorter than acquireTimeoutMs + statementTimeoutMs fails start-up, naming the class's option", async () => {
    const Thing = defineEntity({
      name: 'ShortThing',
      table: 'short_things',
      schema,
      writable: ['name'],
    });
    @AutoCrud(Thing, { idempotency: { reservationTtlMs: 5000 } })
    class ShortThingEndpoint {}
    const app = Fastify();
    addKit(app, [ShortThingEndpoint]);
    addKitAutoCrud(app, pglite, { statementTimeoutMs: 4000 });
    await assert.rejects(useKit(app), {
      code: 'KIT_ERR_INVALID_OPTION',
      message:
        /@AutoCrud\(ShortThing\) options\.idempotency\.reservationTtlMs = 5000: expected more than acquireTimeoutMs \+ statementTimeoutMs \(2000 \+ 4000 ms\)/,
    });
    await app.close();
  });

  it('two entities may not share a component name', async () => {
    const Other = defineEntity({
      name: 'Product',
      table: 'other_products',
      schema,
      writable: ['name'],
    });
    @AutoCrud(Other)
    class OtherProductEndpoint {}
    const app = Fastify();
    addKit(app, [ProductEndpoint, OtherProductEndpoint]);
    addKitAutoCrud(app, pglite);
    await assert.rejects(useKit(app), {
      code: 'KIT_ERR_AUTOCRUD_ENTITY',
      message: /component schema name 'Product'/,
    });
    await app.close();
  });

  it('calls made while the database first starts wait for that start instead of failing (warm-ups, early requests)', async () => {
    const app = Fastify();
    addKit(app, [ProductEndpoint]);
    const crud = addKitAutoCrud(app, pglite, { createTables: true });
    await useKit(app);
    const products = crud.repository(Product);
    const window = { filters: [], sort: [], offset: 0, limit: 1 };
    const [, first, second] = await Promise.all([
      app.ready(),
      products.list(window),
      products.list(window),
    ]);
    assert.equal(first.total, second.total);
    await app.close();
  });

  it('a field with a schema default may be left out: POST leaves it to the column default, PUT resets it', async () => {
    const Setting = defineEntity({
      name: 'Setting',
      table: 'settings',
      schema: {
        type: 'object',
        required: ['id', 'key', 'enabled'],
        properties: {
          id: { type: 'integer' },
          key: { type: 'string' },
          enabled: { type: 'boolean', default: true },
        },
      },
      writable: ['key', 'enabled'],
    });
    @AutoCrud(Setting)
    class SettingsEndpoint {}
    await pglite.exec('drop table if exists settings');
    const app = await crudApp(engine, {}, undefined, [SettingsEndpoint]);
    const created = await app.inject({
      method: 'POST',
      url: '/api/settings',
      payload: { key: 'dark-mode' },
    });
    assert.equal(created.statusCode, 201, created.body);
    const { id } = created.json<{ id: number; enabled: boolean }>();
    assert.equal(created.json<{ enabled: boolean }>().enabled, true);
    assert.equal(
      (
        await app.inject({
          method: 'PUT',
          url: `/api/settings/${id}`,
          payload: { key: 'dark-mode', enabled: false },
        })
      ).json<{ enabled: boolean }>().enabled,
      false,
    );
    const reset = await app.inject({
      method: 'PUT',
      url: `/api/settings/${id}`,
      payload: { key: 'dark-mode' },
    });
    assert.equal(reset.statusCode, 200, reset.body);
    assert.equal(reset.json<{ enabled: boolean }>().enabled, true);
    await app.close();
  });

  it('the url in the handle has no password', async () => {
    const app = Fastify();
    addKit(app, []);
    const crud = addKitAutoCrud(app, 'postgres://kit:hunter2@127.0.0.1:1/shop');
    assert.equal(crud.url, 'postgres://kit:***@127.0.0.1:1/shop');
    assert.equal(crud.engine, 'postgres');
    await crud.close();
  });
});

describe('with a database', () => {
  let app: FastifyInstance;
  before(async () => {
    for (const statement of suiteTables('postgres')) await engine.sql(statement);
    app = await crudApp(
      engine,
      { defaultPageSize: 2, maxPageSize: 3, maxPageNumber: 4 },
      (opt) => {
        opt.openApiInfo = { title: 'AutoCrud test', description: 'Generated routes.' };
      },
      [ProductEndpoint],
    );
  });
  after(async () => {
    await app?.close();
  });

  it('the page-size options: the default, the clamp, the highest page', async () => {
    const crud = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD);
    const products = crud.repository(Product);
    for (const name of ['a', 'b', 'c', 'd']) await products.create({ name, price: 1 });
    const first = (await app.inject('/api/product')).json<{
      items: unknown[];
      pageSize: number;
      totalPages: number;
    }>();
    assert.deepEqual([first.items.length, first.pageSize, first.totalPages], [2, 2, 2]);
    assert.equal(
      (await app.inject('/api/product?pageSize=50')).json<{ pageSize: number }>().pageSize,
      3,
    );
    assert.equal((await app.inject('/api/product?page=4')).statusCode, 200);
    assert.equal((await app.inject('/api/product?page=5')).statusCode, 400);
  });

  it('the repository handle is the mapper the routes use (typed rows, filters, soft delete)', async () => {
    const products = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD).repository(Product);
    const page = await products.list({
      filters: [{ field: 'name', op: 'in', value: ['a', 'c'] }],
      sort: [{ field: 'name', descending: true }],
      offset: 0,
      limit: 10,
    });
    assert.deepEqual(
      page.rows.map((r) => r.name),
      ['c', 'a'],
    );
    assert.equal(page.total, 2);
    const c = page.rows[0];
    assert.ok(c);
    assert.equal(await products.delete(c.id), true);
    assert.equal(await products.get(c.id), undefined);
    assert.equal((await app.inject(`/api/product/${c.id}`)).statusCode, 404);
  });

  it("the list's parameters say what they do: each filter's description reads as a sentence, an unknown parameter's answer names every accepted one", async () => {
    const doc = (await app.inject('/openapi.json')).json<{
      paths: Record<
        string,
        Record<string, { parameters?: Array<{ name: string; description?: string }> }>
      >;
    }>();
    const described = new Map(
      (doc.paths['/api/product']?.get?.parameters ?? []).map((p) => [p.name, p.description]),
    );
    assert.equal(
      described.get('filter[price][in]'),
      'Rows whose price is one of these values (comma-separated, at most 100).',
    );
    assert.equal(
      described.get('filter[name][like]'),
      'Rows whose name contains this text (case-sensitive; % and _ match themselves).',
    );
    assert.equal(
      described.get('filter[stock][null]'),
      'Rows whose stock is NULL (true) or is not NULL (false).',
    );
    assert.equal(
      described.get('filter[price][gte]'),
      'Rows whose price is greater than or equal to this value.',
    );
    const unknown = await app.inject('/api/product?limit=5');
    assert.equal(unknown.statusCode, 400);
    assert.equal(
      unknown.json<{ detail: string }>().detail,
      "Query parameter 'limit' is not accepted: the list takes page, pageSize, after, count, sort, fields and filter[field][operator].",
    );
  });

  it("a list request makes its order once: the route's order (for its cursor) is the one the query uses", async (t) => {
    const products = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD).repository(Product);
    const order = products.order.bind(products);
    const made: Array<readonly unknown[]> = [];
    t.mock.method(products, 'order', (sort: Parameters<typeof order>[0]) => {
      const result = order(sort);
      if (result !== sort) made.push(result);
      return result;
    });
    const page = (await app.inject('/api/product?sort=-name&pageSize=2')).json<{
      items: Array<{ name: string }>;
      next: string;
    }>();
    assert.equal(made.length, 1, 'one order made for the request');
    assert.deepEqual(made[0], [
      { field: 'name', descending: true },
      { field: 'id', descending: false },
    ]);
    const second = (
      await app.inject(`/api/product?sort=-name&pageSize=2&after=${encodeURIComponent(page.next)}`)
    ).json<{ items: Array<{ name: string }> }>();
    assert.equal(made.length, 2, 'and one for the next page');
    assert.ok(
      second.items.every((r) => r.name < (page.items.at(-1)?.name ?? '')),
      'the cursor continues in that order',
    );
    assert.equal(order(made[0] as never), made[0], 'an order passed back is used as it is');
  });

  it('the document: named component schemas, the request and response bodies, operationIds by the group rule, and no redocly errors', async () => {
    const doc = (await app.inject('/openapi.json')).json<{
      components: {
        schemas: Record<
          string,
          { properties?: Record<string, unknown>; additionalProperties?: boolean }
        >;
      };
      paths: Record<
        string,
        Record<
          string,
          {
            operationId: string;
            requestBody?: unknown;
            responses: Record<string, unknown>;
            parameters?: Array<{ name: string; in: string }>;
          }
        >
      >;
    }>();
    assert.deepEqual(Object.keys(doc.components.schemas.Product?.properties ?? {}), [
      'id',
      'name',
      'price',
      'stock',
      'tag',
      'isDeleted',
    ]);
    assert.deepEqual(Object.keys(doc.components.schemas.ProductInput?.properties ?? {}), [
      'name',
      'price',
      'stock',
      'tag',
    ]);
    assert.equal(doc.components.schemas.ProductInput?.additionalProperties, false);
    const ids = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(
        ([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`,
      ),
    );
    assert.deepEqual(ids.sort(), [
      'DELETE /api/product/{id} product_DELETE_id',
      'GET /api/product product_GET',
      'GET /api/product/all product_GET_all',
      'GET /api/product/{id} product_GET_id',
      'PATCH /api/product product_PATCH',
      'PATCH /api/product/{id} product_PATCH_id',
      'POST /api/product product_POST',
      'PUT /api/product/{id} product_PUT_id',
    ]);
    const post = doc.paths['/api/product']?.post;
    assert.match(JSON.stringify(post?.requestBody), /#\/components\/schemas\/ProductInput/);
    assert.match(JSON.stringify(post?.responses['201']), /#\/components\/schemas\/Product"/);
    assert.match(JSON.stringify(post?.responses['409']), /application\/problem\+json/);
    const list = doc.paths['/api/product']?.get;
    const query = (list?.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
    for (const name of [
      'page',
      'pageSize',
      'sort',
      'filter[name]',
      'filter[name][like]',
      'filter[price][in]',
      'filter[stock][null]',
    ])
      assert.ok(query.includes(name), name);
    assert.ok(!query.includes('filter[price][like]'));
    assert.match(
      JSON.stringify(doc.paths['/api/product/{id}']?.patch?.requestBody),
      /#\/components\/schemas\/ProductPatch/,
    );
    const { ok, output } = await redoclyLint(doc);
    assert.ok(ok, output);
  });
});

describe('the document of versioned, idempotent, cursor-paged routes', () => {
  let app: FastifyInstance;
  before(async () => {
    for (const statement of suiteTables('postgres')) await engine.sql(statement);
    app = await crudApp(engine, {}, undefined, [DocumentsEndpoint, LedgersEndpoint]);
  });
  after(async () => {
    await app?.close();
  });

  type Operation = {
    parameters?: Array<{ name: string; in: string; required?: boolean }>;
    responses: Record<string, { headers?: Record<string, unknown> }>;
  };
  const operations = async () =>
    (await app.inject('/openapi.json')).json<{
      paths: Record<string, Record<string, Operation>>;
    }>();
  const headerNames = (op: Operation | undefined) =>
    (op?.parameters ?? [])
      .filter((p) => p.in === 'header')
      .map((p) => `${p.name.toLowerCase()}${p.required ? '!' : ''}`);

  it('declares Idempotency-Key, Idempotent-Replayed, ETag, If-Match, If-None-Match, after, count and the 304/409/412/422/428 answers, and passes redocly lint', async () => {
    const doc = await operations();
    const documents = doc.paths['/api/documents'];
    const document = doc.paths['/api/documents/{id}'];
    const ledger = doc.paths['/api/ledgers/{id}'];
    assert.deepEqual(headerNames(documents?.post), ['idempotency-key']);
    assert.deepEqual(Object.keys(documents?.post?.responses['201']?.headers ?? {}).sort(), [
      'ETag',
      'Idempotent-Replayed',
      'Location',
    ]);
    assert.deepEqual(
      Object.keys(documents?.post?.responses ?? {})
        .filter((code) => /^\d+$/.test(code))
        .sort(),
      ['201', '400', '409', '422', '503', '504'],
    );
    assert.ok(documents?.post?.responses['409']?.headers?.['Retry-After']);
    const query = (documents?.get?.parameters ?? [])
      .filter((p) => p.in === 'query')
      .map((p) => p.name);
    assert.ok(query.includes('after') && query.includes('count'));
    assert.deepEqual(headerNames(document?.get), ['if-none-match']);
    assert.ok(document?.get?.responses['200']?.headers?.ETag);
    assert.ok(document?.get?.responses['304']);
    assert.deepEqual(headerNames(document?.put), ['if-match']);
    assert.ok(document?.put?.responses['200']?.headers?.ETag);
    assert.ok(document?.put?.responses['412']?.headers?.ETag);
    assert.equal(document?.put?.responses['428'], undefined);
    assert.deepEqual(headerNames(ledger?.put), ['if-match!']);
    assert.deepEqual(headerNames(ledger?.delete), ['if-match!']);
    assert.ok(ledger?.delete?.responses['428'] && ledger.delete.responses['412']);
    assert.deepEqual(
      headerNames(doc.paths['/api/ledgers']?.post),
      [],
      'no Idempotency-Key where idempotency is off',
    );
    const { ok, output } = await redoclyLint(doc);
    assert.ok(ok, output);
  });
});
