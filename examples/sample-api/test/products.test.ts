// @test-lines: once - the sample's products routes and generated client through Kit's API
// The sample's /api/products (AutoCrud): a typed client generated from the running sample's
// /openapi.json by openapi-typescript (at its default settings) compiles under strict tsc and
// performs create (idempotent), read (ETag), update (If-Match), patch, list (offset and cursor,
// fields=, ilike, an OR group) and delete against it; so does one for a test app whose entity has
// defaulted, nullable, enum, date, decimal and UUID fields; the document passes redocly;
// DATABASE_URL switches to PostgreSQL.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { addKit, useKit } from '@kit/core';
import {
  addKitAutoCrud,
  AutoCrud,
  CrudOperations,
  defineEntity,
  type KitAutoCrud,
} from '@kit/autocrud';
import { ProductsEndpoint } from '../src/catalog/ProductsEndpoint.js';
import { generatedClient } from '@kit/test-support/generated-client';
import { redoclyLint } from '@kit/test-support/redocly';
import { describePostgres, PostgresServer } from '@kit/test-support/postgres';
import { buildApp, createApp } from '../src/app.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

// The client a user would write against the generated types (openapi-fetch).
const CLIENT = `
import createClient from 'openapi-fetch';
import type { paths } from './api.js';

export async function roundTrip(baseUrl: string) {
  const client = createClient<paths>({ baseUrl });
  // At most once per Idempotency-Key: the retry replays the first answer.
  const key = 'milk-jug-' + Date.now();
  const create = () => client.POST('/api/products', { params: { header: { 'idempotency-key': key } }, body: { name: 'Milk jug', price: 12.5 } });
  const created = await create();
  if (!created.data) throw new Error('create failed: ' + JSON.stringify(created.error));
  const retried = await create();
  const id: number = created.data.id;
  const location = created.response.headers.get('location');
  const read = await client.GET('/api/products/{id}', { params: { path: { id } } });
  const etag = read.response.headers.get('etag') ?? '';
  // If-Match: the write happens only on the version read; a second one with the same ETag is 412.
  const updated = await client.PUT('/api/products/{id}', { params: { path: { id }, header: { 'if-match': etag } }, body: { name: 'Milk jug', price: 14 } });
  const stale = await client.PUT('/api/products/{id}', { params: { path: { id }, header: { 'if-match': etag } }, body: { name: 'Milk jug', price: 99 } });
  // A JSON Merge Patch: only price changes; the ETag of the PUT's answer makes it conditional.
  const patched = await client.PATCH('/api/products/{id}', { params: { path: { id }, header: { 'if-match': updated.response.headers.get('etag') ?? '' } }, body: { price: 13 } });
  const stalePatch = await client.PATCH('/api/products/{id}', { params: { path: { id }, header: { 'if-match': etag } }, body: { name: 'Lost' } });
  const partial = await client.GET('/api/products/{id}', { params: { path: { id }, query: { fields: 'id,price' } } });
  const either = await client.GET('/api/products', { params: { query: { 'filter[or][0][name][ilike]': 'MILK', 'filter[or][1][price][gt]': 80, sort: 'price' } } });
  const list = await client.GET('/api/products', { params: { query: { 'filter[name][like]': 'jug', 'filter[price][gte]': 10, sort: '-price', pageSize: 5 } } });
  // Cursor paging: the first page's next, then the page after it.
  const first = await client.GET('/api/products', { params: { query: { sort: '-price', pageSize: 2, count: false } } });
  const after: string | null | undefined = first.data?.next;
  const second = after ? await client.GET('/api/products', { params: { query: { sort: '-price', pageSize: 2, after } } }) : undefined;
  const removed = await client.DELETE('/api/products/{id}', { params: { path: { id }, header: { 'if-match': patched.response.headers.get('etag') ?? '' } } });
  const gone = await client.GET('/api/products/{id}', { params: { path: { id } } });
  const names: string[] = (list.data?.items ?? []).map((p) => p.name);
  const total: number | undefined = list.data?.total;
  return {
    location: location === '/api/products/' + id,
    replayed: retried.response.headers.get('idempotent-replayed') === 'true' && retried.data?.id === id,
    read: read.data?.name,
    etag,
    updated: updated.data?.price,
    staleStatus: stale.response.status,
    patched: [patched.data?.name, patched.data?.price, patched.data?.version, patched.response.headers.get('etag')],
    stalePatch: stalePatch.response.status,
    partial: JSON.stringify(partial.data) === JSON.stringify({ id, price: 13 }),
    either: (either.data?.items ?? []).map((p) => p.name),
    names,
    total,
    pages: [first.data?.items.map((p) => p.price), second?.data?.items.map((p) => p.price)],
    deleted: removed.response.status,
    gone: gone.response.status,
    goneTitle: gone.error?.title,
  };
}
`;

describe("the sample's /api/products with a generated typed client", () => {
  let app: FastifyInstance;
  let base: string;
  let dir: string;
  before(async () => {
    app = createApp({ adminApiKey: 'k', logger: false, databaseUrl: 'pglite:' });
    await useKit(app);
    base = await app.listen({ port: 0, host: '127.0.0.1' });
    await mkdir(path.join(repo, '.tmp'), { recursive: true });
    dir = await mkdtemp(path.join(repo, '.tmp', 'typed-client-'));
  });
  after(async () => {
    await app?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the warm-up filled the empty catalogue', async () => {
    const res = await fetch(`${base}/api/products?sort=price`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { items: Array<{ name: string }>; total: number };
    assert.deepEqual(
      body.items.map((p) => p.name),
      ['Espresso cup', 'Pour-over kettle', 'Bean grinder'],
    );
  });

  it('openapi-typescript types from /openapi.json compile under strict tsc, and the client creates, reads, updates, patches, lists and deletes', async (t) => {
    const client = await generatedClient(t, base, dir, CLIENT);
    assert.deepEqual(await client.roundTrip(base), {
      location: true,
      replayed: true,
      read: 'Milk jug',
      etag: '"1"',
      updated: 14,
      staleStatus: 412,
      patched: ['Milk jug', 13, 3, '"3"'],
      stalePatch: 412,
      partial: true,
      either: ['Milk jug', 'Bean grinder'],
      names: ['Milk jug'],
      total: 1,
      pages: [
        [89, 39],
        [13, 6.5],
      ],
      deleted: 204,
      gone: 404,
      goneTitle: 'Not Found',
    });
  });

  it('the document names Product and ProductInput and passes `redocly lint` with no errors', async () => {
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as {
      components: { schemas: Record<string, unknown> };
    };
    assert.ok(doc.components.schemas.Product && doc.components.schemas.ProductInput);
    const { ok, output } = await redoclyLint(doc);
    assert.ok(ok, `redocly lint reported errors:\n${output}`);
  });

  it('without a database the sample has no /api/products and starts no engine', async () => {
    const plain = await buildApp({ adminApiKey: 'k', logger: false });
    assert.equal((await plain.inject('/api/products')).statusCode, 404);
    assert.equal(plain.kit.services.hasRegistration('kitAutoCrud'), false);
    await plain.close();
  });
});

// A test app beside the sample's products: an entity whose writable fields have defaults (left out
// of a create by the client), are nullable, an enum, a date, a decimal; its key a UUID.
const Book = defineEntity({
  name: 'Book',
  table: 'books',
  schema: Type.Object({
    id: Type.String({ format: 'uuid' }),
    title: Type.String({ minLength: 1, maxLength: 200 }),
    pages: Type.Integer({ minimum: 0, default: 0 }),
    inPrint: Type.Boolean({ default: true }),
    status: Type.Union([Type.Literal('draft'), Type.Literal('published')], { default: 'draft' }),
    isbn: Type.Union([Type.String({ maxLength: 20 }), Type.Null()], { default: null }),
    price: Type.String({ format: 'decimal', default: '0.00' }),
    publishedOn: Type.Optional(Type.Union([Type.String({ format: 'date' }), Type.Null()])),
    version: Type.Integer(),
  }),
  writable: ['title', 'pages', 'inPrint', 'status', 'isbn', 'price', 'publishedOn'],
  version: 'version',
});

@AutoCrud(Book, { operations: CrudOperations.All | CrudOperations.Patch })
class BooksEndpoint {}

const BOOKS_CLIENT = `
import createClient from 'openapi-fetch';
import type { components, paths } from './api.js';

type BookInput = components['schemas']['BookInput'];
type BookPatch = components['schemas']['BookPatch'];

export async function roundTrip(baseUrl: string) {
  const client = createClient<paths>({ baseUrl });
  // Every defaulted field left out: with the defaults in the input schema, openapi-typescript's
  // default settings made them required (TS2322 here).
  const input: BookInput = { title: 'Dune' };
  const created = await client.POST('/api/books', { body: input });
  if (!created.data) throw new Error('create failed: ' + JSON.stringify(created.error));
  const id: string = created.data.id;
  const read = await client.GET('/api/books/{id}', { params: { path: { id } } });
  const change: BookPatch = { pages: 412, isbn: null, status: 'published', publishedOn: '1965-08-01', price: '9.99' };
  const patched = await client.PATCH('/api/books/{id}', { params: { path: { id }, header: { 'if-match': read.response.headers.get('etag') ?? '' } }, body: change });
  const bad = await client.PATCH('/api/books/{id}', { params: { path: { id } }, body: { title: null } as unknown as BookPatch });
  const list = await client.GET('/api/books', { params: { query: { 'filter[title][ilike]': 'DUNE', 'filter[status]': 'published', fields: 'title,pages' } } });
  const product = await client.POST('/api/products', { params: { header: { 'idempotency-key': 'typed-' + Date.now() } }, body: { name: 'Dune mug', price: 8 } });
  const productId: number = product.data?.id ?? 0;
  const productPatch = await client.PATCH('/api/products/{id}', { params: { path: { id: productId } }, body: { price: 7.5 } });
  const products = await client.GET('/api/products', { params: { query: { 'filter[name][ilike]': 'dune', fields: 'name,price' } } });
  return {
    created: { ...created.data, id: typeof created.data.id },
    read: read.data?.title,
    patched: patched.data,
    badStatus: bad.response.status,
    badField: bad.error?.errors?.[0]?.name,
    list: list.data?.items,
    product: [productPatch.data?.name, productPatch.data?.price, productPatch.data?.version],
    products: products.data?.items,
  };
}
`;

describe('a generated client (openapi-typescript at its defaults) for an app with defaulted fields', () => {
  let app: FastifyInstance;
  let base: string;
  let dir: string;
  before(async () => {
    app = Fastify();
    addKit(app, [ProductsEndpoint, BooksEndpoint]);
    addKitAutoCrud(app, 'pglite:', { createTables: true });
    await useKit(app);
    base = await app.listen({ port: 0, host: '127.0.0.1' });
    await mkdir(path.join(repo, '.tmp'), { recursive: true });
    dir = await mkdtemp(path.join(repo, '.tmp', 'typed-client-'));
  });
  after(async () => {
    await app?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('compiles under strict tsc and round-trips every entity: create (defaults left out), get, PATCH, list with fields= and ilike', async (t) => {
    const client = await generatedClient(t, base, dir, BOOKS_CLIENT);
    const id = '<uuid>';
    const answer = (await client.roundTrip(base)) as { patched: { id: string } };
    assert.match(answer.patched.id, /^[0-9a-f-]{36}$/);
    answer.patched.id = id;
    assert.deepEqual(answer, {
      created: {
        id: 'string',
        title: 'Dune',
        pages: 0,
        inPrint: true,
        status: 'draft',
        isbn: null,
        price: '0.00',
        publishedOn: null,
        version: 1,
      },
      read: 'Dune',
      patched: {
        id,
        title: 'Dune',
        pages: 412,
        inPrint: true,
        status: 'published',
        isbn: null,
        price: '9.99',
        publishedOn: '1965-08-01',
        version: 2,
      },
      badStatus: 400,
      badField: 'title',
      list: [{ title: 'Dune', pages: 412 }],
      product: ['Dune mug', 7.5, 2],
      products: [{ name: 'Dune mug', price: 7.5 }],
    });
  });
});

describePostgres('the sample on PostgreSQL (DATABASE_URL=postgres://...)', () => {
  let server: PostgresServer;
  before(async () => {
    server = await PostgresServer.start();
  });
  after(async () => {
    await server?.dispose();
  });

  it('serves /api/products from PostgreSQL, creating the table', async () => {
    const app = await buildApp({ adminApiKey: 'k', logger: false, databaseUrl: server.url });
    assert.equal(app.kit.services.resolve<KitAutoCrud>('kitAutoCrud').engine, 'postgres');
    const created = await app.inject({
      method: 'POST',
      url: '/api/products',
      payload: { name: 'Scale', price: 25 },
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal((await app.inject('/api/products')).json<{ total: number }>().total, 4);
    const rows = await server.sql('select name from products order by id');
    assert.deepEqual(
      rows.rows.map((r: { name: string }) => r.name),
      ['Espresso cup', 'Pour-over kettle', 'Bean grinder', 'Scale'],
    );
    await app.close();
  });
});
