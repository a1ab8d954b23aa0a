// @test-lines: every - module loading and child processes on this line
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { kitApp, openApiOf, operations } from './helpers.js';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = path.join(here, 'fixtures', 'discovery');
const coreDist = path.resolve(here, '..', 'dist', 'index.js');
// Temporary hosts live under the repository's ignored .tmp/ so that fastify and @kit/core resolve
// from the workspace's node_modules as they would in an installed application.
const scratch = path.resolve(here, '..', '..', '..', '.tmp');
const tsx = import.meta.resolve('tsx');

const expected = {
  'GET /api/users/list': ['users_GET_list', ['users']],
  'GET /api/reports@2/daily': ['reports@2_GET_daily', ['Reporting']],
};

function summary(ops: Record<string, { operationId?: string; tags?: string[] }>) {
  return Object.fromEntries(Object.entries(ops).map(([k, v]) => [k, [v.operationId, v.tags]]));
}

describe('discovery under the TypeScript loader (tsx)', () => {
  it('scans a directory given as a path string, recursively, skipping specs, .d.ts and non-endpoints', async () => {
    const app = await kitApp([path.join(fixture, 'endpoints')]);
    assert.deepEqual(summary(operations(await openApiOf(app))), expected);
    await app.close();
  });

  it('scans a directory given as a file URL, and a relative path from the working directory', async () => {
    const viaUrl = await kitApp([pathToFileURL(path.join(fixture, 'endpoints') + '/')]);
    assert.deepEqual(summary(operations(await openApiOf(viaUrl))), expected);
    await viaUrl.close();
    const viaRelative = await kitApp([
      path.relative(process.cwd(), path.join(fixture, 'endpoints')),
    ]);
    assert.deepEqual(summary(operations(await openApiOf(viaRelative))), expected);
    await viaRelative.close();
  });

  it('a .ts source beside its compiled .js is one module, loaded once (tsx itself resolves the .js import to the .ts)', async () => {
    const app = await kitApp([path.join(fixture, '..', 'siblings')]);
    const res = await app.inject('/api/books/list');
    assert.equal(res.statusCode, 200);
    assert.equal(Object.keys((await openApiOf(app)).paths).length, 1);
    await app.close();
  });

  it('accepts module namespace objects and classes', async () => {
    const users = await import('./fixtures/discovery/endpoints/UsersEndpoint.js');
    const { ReportsV2Endpoint } =
      await import('./fixtures/discovery/endpoints/nested/ReportsV2Endpoint.js');
    const app = await kitApp([users, ReportsV2Endpoint]);
    assert.deepEqual(summary(operations(await openApiOf(app))), expected);
    await app.close();
  });

  it('a missing directory, a non-endpoint class and a non-source are KIT_ERR_ENDPOINT_SOURCE', async () => {
    await assert.rejects(kitApp([path.join(fixture, 'nope')]), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_ENDPOINT_SOURCE');
      assert.match(err.message, /nope/);
      return true;
    });
    class Plain {}
    await assert.rejects(kitApp([Plain as never]), { code: 'KIT_ERR_ENDPOINT_SOURCE' });
    await assert.rejects(kitApp([42 as never]), { code: 'KIT_ERR_ENDPOINT_SOURCE' });
  });

  it('uses the endpoints/ folder beside the entry module when no sources are given', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--conditions=kit-source', '--import', tsx, path.join(fixture, 'host.ts')],
      { cwd: tmpdir() },
    );
    const out = JSON.parse(stdout) as { routes: unknown; users: number };
    assert.deepEqual(out.routes, expected);
    assert.equal(out.users, 200);
  });
});

describe('discovery from compiled JavaScript (plain node, no loader, @kit/core from dist)', () => {
  let dir: string;
  before(async () => {
    assert.ok(
      existsSync(coreDist),
      `build @kit/core first (npm run build): ${coreDist} is missing`,
    );
    await mkdir(scratch, { recursive: true });
    dir = await mkdtemp(path.join(scratch, 'compiled-'));
    const sources = await readdir(path.join(fixture, 'endpoints'), { recursive: true });
    const entryPoints = [
      path.join(fixture, 'host.ts'),
      ...sources
        .filter((f) => /(?<!\.d)(?<!\.spec)\.ts$/.test(f))
        .map((f) => path.join(fixture, 'endpoints', f)),
    ];
    // Lowered like tsc would for Node 20 (no native decorators), names kept as in source.
    await build({
      entryPoints,
      outdir: dir,
      outbase: fixture,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      logLevel: 'error',
    });
    // A stray TypeScript file: without a loader it must be skipped (Node 20 would fail to parse the
    // annotation); where Node strips types itself (Node 24) it is imported and holds no endpoint.
    await writeFile(path.join(dir, 'endpoints', 'Stray.ts'), 'export const stray: number = 1;\n');
    // The source beside its compiled twin: Node 24 strips types itself and must not load both.
    await writeFile(
      path.join(dir, 'endpoints', 'UsersEndpoint.ts'),
      await readFile(path.join(fixture, 'endpoints', 'UsersEndpoint.ts'), 'utf8'),
    );
    await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('finds .js endpoint modules beside the compiled entry module and maps them the same way', async () => {
    const { stdout } = await run(process.execPath, [path.join(dir, 'host.js')], { cwd: tmpdir() });
    const out = JSON.parse(stdout) as { routes: unknown; users: number };
    assert.deepEqual(out.routes, expected);
    assert.equal(out.users, 200);
  });
});

describe('bundled and minified hosts', () => {
  let dir: string;
  before(async () => {
    await mkdir(scratch, { recursive: true });
    dir = await mkdtemp(path.join(scratch, 'minified-'));
    await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function bundle(
    name: string,
    body: string,
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    const entry = path.join(dir, `${name}.ts`);
    await writeFile(entry, body);
    await build({
      entryPoints: [entry],
      outfile: path.join(dir, `${name}.js`),
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      external: ['fastify', '@kit/core'],
      logLevel: 'error',
    });
    try {
      const { stdout, stderr } = await run(process.execPath, [path.join(dir, `${name}.js`)], {
        cwd: dir,
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  const host = (decorate: string) => `
    import Fastify from 'fastify';
    import { addKit, useKit, KitTag } from '@kit/core';
    ${decorate}
    export class InvoicesEndpoint { addRoutes(app) { app.get('open', async () => []); } }
    const app = Fastify();
    addKit(app, [InvoicesEndpoint]);
    await useKit(app);
    console.log((await app.inject('/api/invoices/open')).statusCode);
  `;

  it('an undecorated class renamed by the minifier is refused with KIT_ERR_CLASS_NAME', async () => {
    const res = await bundle('plain', host(''));
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /KIT_ERR_CLASS_NAME|looks changed by a bundler/);
  });

  it('a class carrying a Kit decorator keeps its source name through minification', async () => {
    const res = await bundle('decorated', host("@KitTag('Billing')"));
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stdout.trim(), '200');
  });
});
