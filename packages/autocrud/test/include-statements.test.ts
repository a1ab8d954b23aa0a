// @test-lines: every - PGlite and async context: statements counted through the tracing context
// No N+1: a list with includes runs a fixed number of SQL statements whatever the page size, on
// PostgreSQL, PGlite and node:sqlite. Statements are counted through the seam every statement
// AutoCrud runs passes (one OpenTelemetry CLIENT span per statement, with a registered SDK):
// a list of 10 orders and a list of 100, each order with its customer and 10 lines, run the same
// statements. On PostgreSQL and PGlite the includes are inside the entity's own statement (the
// page and its count; a read by key is one statement); on SQLite each included relation is one
// more statement (docs/decisions.md, "AutoCrud includes").
import './otel-sdk.ts';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { PGlite } from '@electric-sql/pglite';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud, KIT_AUTOCRUD, type KitAutoCrud } from '@kit/autocrud';
import { sqliteAvailable } from '../src/mapper/engines/sqlite/engine.ts';
import { describePostgres, PostgresServer } from '@kit/test-support/postgres';
import { exporter } from './otel-sdk.ts';
import { freshPGlite } from './suite/engines.ts';
import { Customer, Item, Line, Order, RELATION_ENDPOINTS } from './suite/relations.ts';

const CLIENT = 2;

/** The statements one request ran, by span name (`SELECT rel_orders`). */
async function statementsOf(
  app: FastifyInstance,
  url: string,
): Promise<{ status: number; body: string; statements: string[] }> {
  exporter.reset();
  const res = await app.inject(url);
  const statements = exporter
    .getFinishedSpans()
    .filter((span) => span.kind === CLIENT && span.attributes['db.system.name'] !== undefined)
    .map((span) => span.name);
  return { status: res.statusCode, body: res.body, statements };
}

/** How many statements a request runs: the entity's own, plus one per included relation where they are not embedded. */
interface Counts {
  /** The page and its count, with customer and lines included. */
  readonly list: number;
  /** Without the count, with customer, lines and lines.product included. */
  readonly nested: number;
  /** A read by key with customer and lines. */
  readonly get: number;
}
const EMBEDDED: Counts = { list: 2, nested: 1, get: 1 };
const PER_RELATION: Counts = { list: 4, nested: 4, get: 3 };

function statementCountSuite(
  name: string,
  connection: () => string | PGlite,
  counts: Counts,
): void {
  let app: FastifyInstance;
  before(async () => {
    app = Fastify();
    addKit(app, RELATION_ENDPOINTS);
    addKitAutoCrud(app, connection(), { createTables: true, maxPageSize: 100 });
    await useKit(app);
    const crud = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD);
    const item = await crud.repository(Item).create({ name: 'Kettle' });
    for (let c = 0; c < 100; c++) {
      const customer = await crud.repository(Customer).create({ name: `C${c}` });
      const order = await crud.repository(Order).create({ customerId: customer.id, note: null });
      for (let l = 1; l <= 10; l++)
        await crud.repository(Line).create({ orderId: order.id, quantity: l, productId: item.id });
    }
  });
  after(() => app?.close());

  it(`${name}: a list with include=customer,lines runs the same statements for 10 and for 100 orders`, async () => {
    const small = await statementsOf(app, '/api/order?pageSize=10&include=customer,lines');
    const large = await statementsOf(app, '/api/order?pageSize=100&include=customer,lines');
    for (const run of [small, large]) assert.equal(run.status, 200, run.body);
    const page = JSON.parse(large.body) as {
      items: Array<{ customer: { name: string }; lines: unknown[] }>;
    };
    assert.equal(page.items.length, 100);
    assert.ok(page.items.every((o) => o.customer.name.startsWith('C') && o.lines.length === 10));
    assert.equal(large.statements.length, counts.list, large.statements.join(', '));
    assert.deepEqual(large.statements.sort(), small.statements.sort());
    // Per relation, one nested level adds one statement and the count is one less.
    const nested = await statementsOf(
      app,
      '/api/order?pageSize=100&count=false&include=customer,lines.product',
    );
    assert.equal(nested.status, 200, nested.body);
    assert.equal(nested.statements.length, counts.nested, nested.statements.join(', '));
    const lines = (
      JSON.parse(nested.body) as { items: Array<{ lines: Array<{ product: { name: string } }> }> }
    ).items.flatMap((o) => o.lines);
    assert.equal(lines.length, 1000);
    assert.ok(lines.every((l) => l.product.name === 'Kettle'));
  });

  it(`${name}: a read by key with its customer and 10 lines is ${counts.get === 1 ? 'one statement' : `${counts.get} statements`}`, async () => {
    const one = await statementsOf(app, '/api/order/1?include=customer,lines');
    assert.equal(one.status, 200, one.body);
    const order = JSON.parse(one.body) as { customer: { name: string }; lines: unknown[] };
    assert.equal(order.customer.name, 'C0');
    assert.equal(order.lines.length, 10);
    assert.equal(one.statements.length, counts.get, one.statements.join(', '));
  });
}

describePostgres('include statement count on PostgreSQL', () => {
  let server: PostgresServer;
  before(async () => {
    server = await PostgresServer.start();
  });
  after(() => server?.dispose());
  statementCountSuite('PostgreSQL', () => server.url, EMBEDDED);
});

describe('include statement count on PGlite', () => {
  let pglite: PGlite | undefined;
  before(async () => {
    pglite = await freshPGlite();
  });
  after(() => pglite?.close());
  statementCountSuite('PGlite', () => pglite as PGlite, EMBEDDED);
});

if (sqliteAvailable()) {
  describe('include statement count on node:sqlite', () =>
    statementCountSuite('node:sqlite', () => 'sqlite::memory:', PER_RELATION));
} else {
  it('include statement count on node:sqlite', (t) =>
    t.skip(`node:sqlite is not in Node ${process.version}`));
}
