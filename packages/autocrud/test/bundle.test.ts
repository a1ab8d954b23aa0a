// @test-lines: every - child processes: esbuild bundles run on this line
// AutoCrud outside tsx: a host compiled to plain JavaScript (against @kit/autocrud's dist) and a
// host bundled and minified by esbuild both get the generated routes and the document, since
// nothing depends on TypeScript types or class names at run time. The database is a PostgreSQL
// URL that refuses connections, so the routes answer 503 and nothing needs starting.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { build } from 'esbuild';

const run = promisify(execFile);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

const HOST = `
import Fastify from 'fastify';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud, AutoCrud, defineEntity } from '@kit/autocrud';

const Product = defineEntity({
  name: 'Product',
  table: 'products',
  schema: { type: 'object', required: ['id', 'name'], properties: { id: { type: 'integer' }, name: { type: 'string' } } },
  writable: ['name'],
});

@AutoCrud(Product)
export class ProductEndpoint {}

const app = Fastify();
addKit(app, [ProductEndpoint]);
addKitAutoCrud(app, 'postgres://kit@127.0.0.1:1/shop', { connectTimeoutMs: 500 });
await useKit(app);
await app.ready();
const doc = (await app.inject('/openapi.json')).json();
const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId)).sort();
console.log(JSON.stringify({
  ids,
  components: ['Product', 'ProductInput'].filter((name) => name in doc.components.schemas),
  get: (await app.inject('/api/product/1')).statusCode,
  badKey: (await app.inject('/api/product/x')).statusCode,
}));
await app.close();
`;

const EXPECTED = {
  ids: ['product_DELETE_id', 'product_GET', 'product_GET_id', 'product_POST', 'product_PUT_id'],
  components: ['Product', 'ProductInput'],
  get: 503,
  badKey: 400,
};

describe('AutoCrud in compiled and bundled hosts', () => {
  let dir: string;
  before(async () => {
    await mkdir(path.join(repo, '.tmp'), { recursive: true });
    dir = await mkdtemp(path.join(repo, '.tmp', 'autocrud-build-'));
    await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    await writeFile(path.join(dir, 'host.ts'), HOST);
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function node(file: string): Promise<unknown> {
    const { stdout } = await run(process.execPath, [file], { cwd: dir });
    return JSON.parse(stdout.trim().split('\n').at(-1) ?? '');
  }

  it("compiled to JavaScript (decorators lowered), against the packages' dist", async () => {
    assert.ok(
      existsSync(path.join(repo, 'packages/autocrud/dist/index.js')),
      'build the packages first (npm run build)',
    );
    await build({
      entryPoints: [path.join(dir, 'host.ts')],
      outfile: path.join(dir, 'compiled.js'),
      format: 'esm',
      platform: 'node',
      target: 'node20',
      logLevel: 'error',
    });
    assert.deepEqual(await node(path.join(dir, 'compiled.js')), EXPECTED);
  });

  it('bundled and minified by esbuild (class names mangled)', async () => {
    await build({
      entryPoints: [path.join(dir, 'host.ts')],
      outfile: path.join(dir, 'bundle.js'),
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      conditions: ['kit-source'],
      // Resolved at run time from the workspace: these carry files or state of their own.
      external: ['fastify', '@kit/core', '@electric-sql/pglite', 'pg', 'awilix'],
      logLevel: 'error',
    });
    assert.deepEqual(await node(path.join(dir, 'bundle.js')), EXPECTED);
  });
});
