// The sample's /api/products (AutoCrud): a typed client generated from the running sample's
// /openapi.json by openapi-typescript compiles under strict tsc and performs create, read, update,
// list and delete against it; the document passes redocly; DATABASE_URL switches to PostgreSQL.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import openapiTS, { astToString } from 'openapi-typescript';
import { useKit } from '@kit/core';
import type { KitAutoCrud } from '@kit/autocrud';
import { redoclyLint } from '../../../packages/core/test/redocly.js';
import { describePostgres, PostgresServer } from '../../../packages/autocrud/test/postgres-server.js';
import { buildApp, createApp } from '../src/app.js';

const run = promisify(execFile);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

// The client a user would write against the generated types (openapi-fetch).
const CLIENT = `
import createClient from 'openapi-fetch';
import type { paths } from './api.js';

export async function roundTrip(baseUrl: string) {
  const client = createClient<paths>({ baseUrl });
  const created = await client.POST('/api/products', { body: { name: 'Milk jug', price: 12.5 } });
  if (!created.data) throw new Error('create failed: ' + JSON.stringify(created.error));
  const id: number = created.data.id;
  const location = created.response.headers.get('location');
  const read = await client.GET('/api/products/{id}', { params: { path: { id } } });
  const updated = await client.PUT('/api/products/{id}', { params: { path: { id } }, body: { name: 'Milk jug', price: 14 } });
  const list = await client.GET('/api/products', { params: { query: { 'filter[name][like]': 'jug', 'filter[price][gte]': 10, sort: '-price', pageSize: 5 } } });
  const removed = await client.DELETE('/api/products/{id}', { params: { path: { id } } });
  const gone = await client.GET('/api/products/{id}', { params: { path: { id } } });
  const names: string[] = (list.data?.items ?? []).map((p) => p.name);
  const total: number | undefined = list.data?.total;
  return {
    location: location === '/api/products/' + id,
    read: read.data?.name,
    updated: updated.data?.price,
    names,
    total,
    deleted: removed.response.status,
    gone: gone.response.status,
    goneTitle: gone.error?.title,
  };
}
`;

const TSCONFIG = {
  compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: [] },
  include: ['*.ts'],
};

describe('the sample\'s /api/products with a generated typed client', () => {
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
    assert.deepEqual(body.items.map((p) => p.name), ['Espresso cup', 'Pour-over kettle', 'Bean grinder']);
  });

  it('openapi-typescript types from /openapi.json compile under strict tsc, and the client creates, reads, updates, lists and deletes', async () => {
    const document = (await (await fetch(`${base}/openapi.json`)).json()) as Parameters<typeof openapiTS>[0];
    await writeFile(path.join(dir, 'api.d.ts'), astToString(await openapiTS(document)));
    await writeFile(path.join(dir, 'client.ts'), CLIENT);
    await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
    await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc', { paths: [repo] });
    await run(process.execPath, [tsc, '-p', dir]).catch((err: { stdout?: string; message: string }) => {
      throw new Error(`the generated client does not compile:\n${err.stdout ?? err.message}`);
    });
    const client = (await import(pathToFileURL(path.join(dir, 'client.ts')).href)) as { roundTrip(base: string): Promise<unknown> };
    assert.deepEqual(await client.roundTrip(base), {
      location: true,
      read: 'Milk jug',
      updated: 14,
      names: ['Milk jug'],
      total: 1,
      deleted: 204,
      gone: 404,
      goneTitle: 'Not Found',
    });
  });

  it('the document names Product and ProductInput and passes `redocly lint` with no errors', async () => {
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as { components: { schemas: Record<string, unknown> } };
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
    const created = await app.inject({ method: 'POST', url: '/api/products', payload: { name: 'Scale', price: 25 } });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal((await app.inject('/api/products')).json<{ total: number }>().total, 4);
    const rows = await server.sql('select name from products order by id');
    assert.deepEqual(rows.rows.map((r: { name: string }) => r.name), ['Espresso cup', 'Pour-over kettle', 'Bean grinder', 'Scale']);
    await app.close();
  });
});
