// @test-lines: every - the packed packages installed and run on this line's npm and node
// The packages as a user gets them. Each publishable package is packed the way a fresh clone packs
// it (from a copy without dist/, so its prepack must build), the tarballs are installed into a new
// project outside the workspace (dependencies from the registry), a strict TypeScript service is
// compiled against the installed declarations (no kit-source condition) and run by plain node
// against a real redis-server. CI runs it on every Node line it tests.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compilerChecksHere } from '@kit/test-support/heavy';
import { RedisServer, skipRedis } from '@kit/test-support/redis';

/** Every publishable package, by folder. A new one is one line here (the first test insists). */
const PACKAGES = ['packages/core', 'packages/store-redis', 'packages/autocrud'];

const root = fileURLToPath(new URL('../../../', import.meta.url));
const fixture = fileURLToPath(new URL('../fixture/', import.meta.url));
const inCi = process.env.CI === 'true';

interface Manifest {
  name: string;
  private?: boolean;
  version: string;
  license?: string;
  engines?: { node?: string };
  files?: string[];
  scripts?: Record<string, string>;
  repository?: { type?: string; url?: string; directory?: string };
  publishConfig?: { access?: string };
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  exports?: Record<string, string | Record<string, string>>;
}

const readManifest = (dir: string): Manifest =>
  JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Manifest;

/** A package's entry points besides its root (`@kit/core/extend`, …): the subpaths with declarations, as a host imports them. */
function subpaths(dir: string): Array<{ specifier: string; files: string[] }> {
  const m = readManifest(dir);
  return Object.entries(m.exports ?? {})
    .filter(
      (e): e is [string, Record<string, string>] =>
        e[0] !== '.' && typeof e[1] === 'object' && e[1].types !== undefined,
    )
    .map(([sub, conditions]) => ({
      specifier: `${m.name}${sub.slice(1)}`,
      files: [conditions.types, conditions.default]
        .filter((f): f is string => f !== undefined)
        .map((f) => path.posix.normalize(f)),
    }));
}

/**
 * The environment of the npm, tsc and node children: none of the `npm_*` variables an outer
 * `npm test` sets (npm_config_local_prefix would point the inner npm back at the workspace), no
 * NODE_OPTIONS (no loader, no condition), and this Node line first on PATH so `npm` runs on it.
 */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(npm_|node_options$|init_cwd$)/i.test(key)) env[key] = value;
  }
  env.PATH = [path.dirname(process.execPath), process.env.PATH ?? ''].join(path.delimiter);
  return { ...env, ...extra };
}

function run(
  command: string,
  args: string[],
  options: SpawnSyncOptions & { cwd: string },
): { status: number | null; output: string } {
  const result = spawnSync(command, args, {
    encoding: 'utf8',
    env: childEnv(),
    timeout: 300_000,
    ...options,
  });
  if (result.error) throw result.error;
  return { status: result.status, output: `${String(result.stdout)}${String(result.stderr)}` };
}

const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

/** What a package's prepack reads outside the package: the docs it ships and the script that copies them. */
const PACK_TIME = ['docs', 'scripts'];

/** What a fresh clone holds of a package: everything but build output, installs and tests. */
const sourceFilter = (src: string): boolean =>
  !/(^|[/\\])(dist|node_modules|test)$|\.tsbuildinfo$/.test(src);

function listFiles(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => {
      const full = path.join(dir, e.name);
      if (!sourceFilter(full)) return [];
      return e.isDirectory() ? listFiles(full, base) : [path.relative(base, full)];
    })
    .sort();
}

/** Same sources, same TypeScript, same tarballs: the key under which packed tarballs are reused by the next Node line. */
function sourceKey(): string {
  const hash = createHash('sha256');
  hash.update(readManifest(path.join(root, 'node_modules', 'typescript')).version);
  hash.update(readFileSync(path.join(root, 'tsconfig.base.json')));
  for (const dir of [...PACKAGES, ...PACK_TIME]) {
    for (const file of listFiles(path.join(root, dir))) {
      hash.update(`${dir}/${file}\0`);
      hash.update(readFileSync(path.join(root, dir, file)));
    }
  }
  return hash.digest('hex').slice(0, 16);
}

interface Packed {
  dir: string;
  name: string;
  tarball: string;
  entries: string[];
}

/**
 * The stage's node_modules: links to the workspace's installed tools and dependencies, except that
 * the packed packages resolve to their copies in the stage, so one package builds against the
 * others as a fresh clone would, whatever the workspace's own dist/ holds.
 */
function linkNodeModules(stage: string): void {
  const names = new Map(
    PACKAGES.map((dir) => [readManifest(path.join(root, dir)).name, path.join(stage, dir)]),
  );
  const link = (relative: string) => {
    const own = names.get(relative);
    symlinkSync(
      own ?? path.join(root, 'node_modules', relative),
      path.join(stage, 'node_modules', relative),
      'dir',
    );
  };
  mkdirSync(path.join(stage, 'node_modules'));
  for (const entry of readdirSync(path.join(root, 'node_modules'))) {
    if (!entry.startsWith('@') || ![...names.keys()].some((n) => n.startsWith(`${entry}/`))) {
      link(entry);
      continue;
    }
    mkdirSync(path.join(stage, 'node_modules', entry));
    for (const member of readdirSync(path.join(root, 'node_modules', entry)))
      link(`${entry}/${member}`);
  }
}

/**
 * Packs every package from a copy of its sources beside a copy of tsconfig.base.json, with the
 * workspace's node_modules linked in (linkNodeModules). No dist/ exists there, so a tarball
 * holds built code only if the package's prepack built it. Tarballs are cached by sourceKey().
 */
function packTarballs(): Packed[] {
  const cacheRoot = path.join(root, 'node_modules', '.cache', 'kit-packaging');
  const cache = path.join(cacheRoot, sourceKey());
  if (!existsSync(path.join(cache, 'manifest.json'))) {
    // One entry is kept: tarballs of older sources are of no use to anyone.
    rmSync(cacheRoot, { recursive: true, force: true });
    mkdirSync(cacheRoot, { recursive: true });
    const out = mkdtempSync(path.join(cacheRoot, 'partial-'));
    const stage = mkdtempSync(path.join(tmpdir(), 'kit-pack-'));
    try {
      cpSync(path.join(root, 'tsconfig.base.json'), path.join(stage, 'tsconfig.base.json'));
      for (const dir of PACK_TIME)
        cpSync(path.join(root, dir), path.join(stage, dir), {
          recursive: true,
          filter: sourceFilter,
        });
      linkNodeModules(stage);
      for (const pkg of PACKAGES) {
        cpSync(path.join(root, pkg), path.join(stage, pkg), {
          recursive: true,
          filter: sourceFilter,
        });
        // A package's own node_modules holds what npm could not hoist (autocrud's ajv 8 beside
        // the root's ajv 6): the build must resolve the versions the package declares.
        const own = path.join(root, pkg, 'node_modules');
        if (existsSync(own)) symlinkSync(own, path.join(stage, pkg, 'node_modules'), 'dir');
      }
      const manifest: Record<string, string> = {};
      for (const pkg of PACKAGES) {
        const before = new Set(readdirSync(out));
        const packed = run('npm', ['pack', '--pack-destination', out], {
          cwd: path.join(stage, pkg),
        });
        assert.equal(packed.status, 0, `npm pack in ${pkg} failed:\n${packed.output}`);
        const made = readdirSync(out).filter((f) => !before.has(f));
        assert.equal(made.length, 1, `npm pack in ${pkg} made ${made.join(', ') || 'nothing'}`);
        manifest[pkg] = made[0]!;
      }
      writeFileSync(path.join(out, 'manifest.json'), JSON.stringify(manifest));
      renameSync(out, cache);
    } finally {
      rmSync(stage, { recursive: true, force: true });
      rmSync(out, { recursive: true, force: true });
    }
  }
  const manifest = JSON.parse(readFileSync(path.join(cache, 'manifest.json'), 'utf8')) as Record<
    string,
    string
  >;
  return PACKAGES.map((dir) => {
    const tarball = path.join(cache, manifest[dir] ?? '');
    const listing = run('tar', ['-tzf', tarball], { cwd: cache });
    assert.equal(listing.status, 0, listing.output);
    const entries = listing.output
      .split('\n')
      .filter(Boolean)
      .map((e) => e.replace(/^package\//, ''));
    return { dir, name: readManifest(path.join(root, dir)).name, tarball, entries };
  });
}

/** A network failure of npm install: outside CI the suite skips (like a missing redis-server). */
const OFFLINE = /E(NOTFOUND|AI_AGAIN|CONNREFUSED|CONNRESET|TIMEDOUT|NETUNREACH)/;

interface Installed {
  app: string;
  skipped?: string;
}

/** The project install() made, removed when the suite ends (kept with KIT_KEEP_TMP=1). */
let appDir: string | undefined;

/** A new project in the temp directory, the tarballs and the registry's dependencies installed, the fixture copied in. */
function install(packed: Packed[]): Installed {
  const app = mkdtempSync(path.join(tmpdir(), 'kit-tarball-app-'));
  appDir = app;
  const rootManifest = readManifest(root);
  const sample = readManifest(path.join(root, 'examples/sample-api')).dependencies ?? {};
  const dependencies: Record<string, string> = {
    fastify: readManifest(path.join(root, 'packages/core')).peerDependencies?.fastify ?? '^5.0.0',
    // What a user adds for TypeBox-typed routes and entities, at the versions the sample uses.
    '@sinclair/typebox': sample['@sinclair/typebox'] ?? '*',
    '@fastify/type-provider-typebox': sample['@fastify/type-provider-typebox'] ?? '*',
  };
  for (const p of packed) dependencies[p.name] = `file:${p.tarball}`;
  writeFileSync(
    path.join(app, 'package.json'),
    JSON.stringify({
      name: 'kit-tarball-service',
      version: '1.0.0',
      private: true,
      type: 'module',
      dependencies,
      devDependencies: { '@types/node': rootManifest.devDependencies?.['@types/node'] ?? '*' },
    }),
  );
  const npm = run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: app });
  if (npm.status !== 0 && !inCi && OFFLINE.test(npm.output))
    return { app, skipped: `the npm registry is unreachable (${OFFLINE.exec(npm.output)?.[0]})` };
  assert.equal(npm.status, 0, `npm install of the tarballs failed:\n${npm.output}`);

  cpSync(path.join(fixture, 'src'), path.join(app, 'src'), { recursive: true });
  cpSync(path.join(fixture, 'tsconfig.json'), path.join(app, 'tsconfig.json'));
  // Every package, and each of its subpath entry points, is imported (so its declarations are
  // compiled) and loaded at start-up.
  const specifiers = packed.flatMap((p) => [
    p.name,
    ...subpaths(path.join(root, p.dir)).map((s) => s.specifier),
  ]);
  const imports = specifiers.map((name, i) => `import * as pkg${i} from '${name}';`);
  const entries = specifiers.map((name, i) => `  '${name}': Object.keys(pkg${i}).length,`);
  writeFileSync(
    path.join(app, 'src', 'packages.ts'),
    [
      '// Generated by tarball.test.ts: every packed package.',
      ...imports,
      'export const packageExports: Record<string, number> = {',
      ...entries,
      '};',
      '',
    ].join('\n'),
  );
  return { app };
}

function once<T>(fn: () => T): () => T {
  let result: { value: T } | { error: unknown } | undefined;
  return () => {
    if (!result) {
      try {
        result = { value: fn() };
      } catch (error) {
        result = { error };
      }
    }
    if ('error' in result) throw result.error;
    return result.value;
  };
}

const tarballs = once(packTarballs);
const installed = once(() => install(tarballs()));
// The service's JavaScript is needed on every line, its strict type check (the compiler's answer,
// the same on every line) once per CI run: elsewhere tsc emits without it.
const compiled = once(() =>
  run(
    process.execPath,
    [tsc, '-p', installed().app, ...(compilerChecksHere ? [] : ['--noCheck'])],
    { cwd: installed().app },
  ),
);

/** Sends one Redis command over a raw socket (no client library in the test) and returns the reply line. */
function redisCommand(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ port, host: '127.0.0.1' }, () =>
      socket.write(`${command}\r\n`),
    );
    socket.setTimeout(2000, () => socket.destroy(new Error(`no reply to ${command}`)));
    socket.once('error', reject);
    socket.once('data', (data) => {
      socket.end();
      resolve(data.toString().trim());
    });
  });
}

describe('the packages as a user installs them (npm pack, a fresh project, strict tsc, plain node)', () => {
  after(() => {
    if (appDir && !process.env.KIT_KEEP_TMP) rmSync(appDir, { recursive: true, force: true });
  });

  it('the list names every publishable workspace package', () => {
    const publishable = readdirSync(path.join(root, 'packages'))
      .map((name) => `packages/${name}`)
      .filter(
        (dir) =>
          existsSync(path.join(root, dir, 'package.json')) &&
          !readManifest(path.join(root, dir)).private,
      );
    assert.deepEqual(
      [...PACKAGES].sort(),
      publishable.sort(),
      'add the package to PACKAGES in tests/packaging/test/tarball.test.ts',
    );
  });

  it('each package.json carries what publishing needs: prepack, files, MIT with its LICENSE, repository, public access, README', () => {
    const rootManifest = readManifest(root);
    const license = readFileSync(path.join(root, 'LICENSE'), 'utf8');
    for (const dir of PACKAGES) {
      const m = readManifest(path.join(root, dir));
      assert.match(m.scripts?.prepack ?? '', /\btsc -b\b/, `${m.name}: prepack builds dist/`);
      assert.ok(m.files?.includes('dist'), `${m.name}: files lists dist`);
      assert.equal(m.license, 'MIT', m.name);
      assert.equal(
        readFileSync(path.join(root, dir, 'LICENSE'), 'utf8'),
        license,
        `${m.name}: LICENSE is the repository's`,
      );
      assert.deepEqual(
        m.repository,
        { ...rootManifest.repository, directory: dir },
        `${m.name}: repository is the root's, with its folder`,
      );
      assert.equal(
        m.publishConfig?.access,
        'public',
        `${m.name}: a scoped package is published public`,
      );
      assert.equal(
        m.engines?.node,
        rootManifest.engines?.node,
        `${m.name}: engines names the Node lines the repository runs on (the root's)`,
      );
      assert.match(
        readFileSync(path.join(root, dir, 'README.md'), 'utf8'),
        new RegExp(`^# ${m.name.replace('/', '\\/')}\\n`),
        `${m.name}: a README of its own`,
      );
    }
  });

  it(
    'each tarball, packed from sources without dist/, holds its built code and declarations, LICENSE and README, and no tests',
    { timeout: 600_000 },
    () => {
      for (const p of tarballs()) {
        for (const file of [
          'package.json',
          'LICENSE',
          'README.md',
          'dist/index.js',
          'dist/index.d.ts',
        ]) {
          assert.ok(
            p.entries.includes(file),
            `${p.name}: ${file} is missing from ${path.basename(p.tarball)}`,
          );
        }
        // Each subpath export (`@kit/autocrud/extend`) resolves to files the tarball holds.
        for (const { specifier, files } of subpaths(path.join(root, p.dir))) {
          for (const file of files)
            assert.ok(
              p.entries.includes(file),
              `${specifier}: ${file} is missing from ${path.basename(p.tarball)}`,
            );
        }
        assert.deepEqual(
          p.entries.filter((e) => /(^|\/)test\/|\.test\.|\.tsbuildinfo$/.test(e)),
          [],
          `${p.name}: tests or build info in the tarball`,
        );
      }
    },
  );

  it(
    "each README's links lead to files in its tarball (the docs ship with the package), and none to a placeholder address",
    { timeout: 600_000 },
    () => {
      for (const p of tarballs()) {
        const readme = readFileSync(path.join(root, p.dir, 'README.md'), 'utf8');
        const links = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
          .map((m) => m[1] as string)
          .filter((l) => !/^[a-z]+:/.test(l));
        assert.ok(
          links.some((l) => l.startsWith('docs/')),
          `${p.name}: the README links its guides`,
        );
        for (const link of links)
          assert.ok(
            p.entries.includes(path.posix.normalize(link)),
            `${p.name}: README links ${link}, which is not in ${path.basename(p.tarball)}`,
          );
        assert.doesNotMatch(
          readme,
          /kit\.invalid|the repository's `docs/,
          `${p.name}: the README sends readers where they cannot go`,
        );
        for (const page of ['decisions.md', 'packages.md'])
          assert.ok(p.entries.includes(`docs/${page}`), `${p.name}: docs/${page} ships`);
      }
    },
  );

  it(
    'a strict TypeScript service compiles against the installed declarations (schema.summary, typed routes, stores)',
    { timeout: 600_000 },
    (t) => {
      const { app, skipped } = installed();
      if (skipped) return t.skip(skipped);
      for (const p of tarballs()) {
        assert.ok(
          !lstatSync(path.join(app, 'node_modules', p.name)).isSymbolicLink(),
          `${p.name} is installed from its tarball, not linked`,
        );
      }
      const { status, output } = compiled();
      if (!compilerChecksHere)
        t.diagnostic(
          'emitted with tsc --noCheck here: the strict type check runs once per CI run, on the line .ci/run names (KIT_HEAVY_TESTS=skip here)',
        );
      assert.equal(status, 0, `tsc failed against the installed packages:\n${output}`);
    },
  );

  it(
    'the compiled service runs under plain node: routes (TypeBox-typed, AutoCrud on PGlite), OpenAPI summaries, Redis stores, health, and every audit entry flushed on SIGTERM',
    { skip: skipRedis, timeout: 600_000 },
    async (t) => {
      const { app, skipped } = installed();
      if (skipped) return t.skip(skipped);
      assert.equal(compiled().status, 0, 'the service compiles (the previous test)');
      const redis = await RedisServer.start();
      const child = spawn(process.execPath, [path.join(app, 'dist', 'main.js')], {
        cwd: app,
        env: childEnv({ REDIS_URL: redis.url, NODE_ENV: 'production' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const exited = new Promise<number | null>((resolve) =>
        child.once('exit', (code) => resolve(code)),
      );
      try {
        const ready = await new Promise<{
          address: string;
          packageExports: Record<string, number>;
        }>((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error(`the service did not start within 60 s:\n${output}`)),
            60_000,
          );
          child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
          child.stdout.on('data', (chunk: Buffer) => {
            output += chunk.toString();
            const line = output.split('\n').find((l) => l.includes('"packaging fixture ready"'));
            if (line) {
              clearTimeout(timer);
              resolve(
                JSON.parse(line) as { address: string; packageExports: Record<string, number> },
              );
            }
          });
          void exited.then((code) =>
            reject(new Error(`the service exited with ${code} before it was ready:\n${output}`)),
          );
        });
        for (const p of tarballs())
          assert.ok(
            (ready.packageExports[p.name] ?? 0) > 0,
            `${p.name} loads and exports something: ${JSON.stringify(ready.packageExports)}`,
          );

        const base = ready.address;
        const audited: { id: string; path: string; status: number }[] = [];
        const call = async (method: string, url: string, body?: unknown) => {
          const res = await fetch(`${base}${url}`, {
            method,
            ...(body === undefined
              ? {}
              : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
          });
          const text = await res.text();
          const id = res.headers.get('x-correlation-id');
          if (url.startsWith('/api/')) {
            assert.ok(id, `${method} ${url} carries x-correlation-id`);
            audited.push({ id, path: url, status: res.status });
          }
          return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
        };

        assert.deepEqual(await call('GET', '/api/widgets'), {
          status: 200,
          body: [
            { id: 'w1', name: 'Sprocket' },
            { id: 'w2', name: 'Flange' },
          ],
        });
        assert.deepEqual(await call('GET', '/api/widgets/w2'), {
          status: 200,
          body: { id: 'w2', name: 'Flange' },
        });
        assert.equal((await call('GET', '/api/widgets/nope')).status, 404);
        assert.equal(
          (await call('POST', '/api/widgets/w1/orders', { quantity: 0 })).status,
          400,
          'the body schema is enforced',
        );
        const orders = [];
        for (let i = 0; i < 3; i++)
          orders.push((await call('POST', '/api/widgets/w1/orders', { quantity: 1 })).status);
        assert.deepEqual(orders, [201, 201, 429], 'two orders per minute, counted in Redis');
        assert.match(
          await redisCommand(redis.port, 'DBSIZE'),
          /^:[1-9]/,
          'the rate-limit store wrote to the real Redis',
        );

        // A TypeBox-typed route and the AutoCrud routes over the embedded database.
        assert.deepEqual(await call('POST', '/api/parts', { name: 'bolt', size: 3 }), {
          status: 201,
          body: { name: 'bolt', size: 3, label: 'BOLT-3' },
        });
        assert.equal(
          (await call('POST', '/api/parts', { name: 'bolt', size: 'three' })).status,
          400,
          'the TypeBox schema is enforced',
        );
        const created = await call('POST', '/api/products', { name: 'Lamp', price: 12.5 });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        const product = created.body as { id: number; name: string; price: number };
        assert.deepEqual(
          { name: product.name, price: product.price },
          { name: 'Lamp', price: 12.5 },
        );
        await call('POST', '/api/products', { name: 'Sofa', price: 499 });
        assert.deepEqual(await call('GET', `/api/products/${product.id}`), {
          status: 200,
          body: product,
        });
        const cheap = (await call('GET', '/api/products?filter[price][lt]=100')).body as {
          items: unknown[];
          total: number;
        };
        assert.deepEqual(
          { items: cheap.items, total: cheap.total },
          { items: [product], total: 1 },
        );
        assert.equal(
          (await call('POST', '/api/products', { name: 'Lamp', price: 1, id: 99 })).status,
          400,
          'the primary key is not writable',
        );

        const doc = (await call('GET', '/openapi.json')).body as {
          paths: Record<string, Record<string, { summary?: string; tags?: string[] }>>;
        };
        assert.equal(doc.paths['/api/widgets']?.get?.summary, 'List widgets');
        assert.deepEqual(doc.paths['/api/widgets']?.get?.tags, ['catalog']);
        assert.equal(doc.paths['/api/widgets/{id}']?.get?.summary, 'One widget');
        assert.equal(doc.paths['/api/widgets/{id}/orders']?.post?.summary, 'Order a widget');
        assert.equal(doc.paths['/api/parts']?.post?.summary, 'Make a part');
        assert.ok(
          doc.paths['/api/products']?.get && doc.paths['/api/products/{id}']?.put,
          'the generated routes are documented',
        );

        const health = await call('GET', '/healthz');
        assert.equal(health.status, 200, JSON.stringify(health.body));
        const checks = (health.body as { checks: Record<string, { status: string }> }).checks;
        assert.equal(checks.redis?.status, 'healthy');
        assert.equal(checks.self?.status, 'healthy');
        assert.equal(checks.database?.status, 'healthy', 'the AutoCrud check surfaced by itself');

        child.kill('SIGTERM');
        assert.equal(await exited, 0, `exit code after SIGTERM:\n${output}`);
        const entries = output
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map(
            (l) => JSON.parse(l) as { CorrelationId?: string; Path?: string; StatusCode?: number },
          )
          .filter((l) => l.CorrelationId !== undefined);
        for (const request of audited) {
          const mine = entries.filter((e) => e.CorrelationId === request.id);
          assert.equal(
            mine.length,
            1,
            `one audit entry for ${request.path} (${request.id}):\n${output}`,
          );
          assert.equal(mine[0]?.StatusCode, request.status);
        }
        assert.equal(
          entries.length,
          audited.length,
          'no entries for the excluded /openapi.json and /healthz',
        );
      } finally {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGKILL');
          await exited;
        }
        await redis.dispose();
      }
    },
  );
});
