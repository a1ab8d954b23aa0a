// @test-lines: every - the README's quick start: the sample started as a process on this line, signals
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { redoclyLint } from '@kit/test-support/redocly';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

/** Starts the sample the way `npm start` does, on a free port, and returns its base URL. */
async function startSample(
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcess; base: string; output: () => string }> {
  const child = spawn(
    process.execPath,
    ['--conditions=kit-source', '--import', 'tsx', 'src/main.ts'],
    {
      cwd: root,
      env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const base = await new Promise<string>((resolve, reject) => {
    // Generous: this waits for tsx to compile the sample and PGlite to initdb in memory, which took
    // over 30 s on a 2-core CI machine under load; a sample that fails to start exits and says so.
    const timer = setTimeout(
      () => reject(new Error(`sample did not start within 120 s:\n${out}`)),
      120_000,
    );
    child.stdout?.on('data', () => {
      const m = /listening on (http:\/\/[^\s"]+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`sample exited with ${code}:\n${out}`)));
  });
  return { child, base, output: () => out };
}

describe('sample service', () => {
  let sample: Awaited<ReturnType<typeof startSample>>;
  before(async () => {
    sample = await startSample();
  });
  after(() => {
    sample?.child.kill('SIGKILL');
  });

  it('prints the URLs of its API, /docs, /openapi.json and /healthz', () => {
    for (const p of ['/api/users', '/docs', '/openapi.json', '/healthz'])
      assert.ok(sample.output().includes(`${sample.base}${p}`), p);
  });

  it('answers on /api/... for every group, including a V1/V2 pair and the shared admin hook', async () => {
    assert.equal((await fetch(`${sample.base}/api/users`)).status, 200);
    assert.equal((await fetch(`${sample.base}/api/users/1`)).status, 200);
    assert.equal((await fetch(`${sample.base}/api/orders@1`)).status, 200);
    assert.equal((await fetch(`${sample.base}/api/orders%402/100`)).status, 200);
    assert.equal((await fetch(`${sample.base}/api/admin/jobs`)).status, 401);
    assert.equal(
      (await fetch(`${sample.base}/api/admin/jobs`, { headers: { 'x-admin-key': 'change-me' } }))
        .status,
      200,
    );
  });

  it('prints no deprecation warning: the deprecated endpoint style is shown in legacy-endpoint.test.ts, not here', () => {
    assert.doesNotMatch(sample.output(), /DeprecationWarning|KIT_DEP_/);
  });

  it('answers /api/products on the embedded default database (PGlite), with the starter products', async () => {
    // The sample listens before start-up completes; the starters are written by a warm-up, before /healthz turns 200.
    const deadline = Date.now() + 120_000;
    while ((await fetch(`${sample.base}/healthz`)).status !== 200) {
      assert.ok(Date.now() < deadline, `not ready within 120 s:\n${sample.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const res = await fetch(`${sample.base}/api/products`);
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { total: number }).total, 3);
    assert.ok(sample.output().includes(`${sample.base}/api/products`));
  });

  it('serves /docs with local assets', async () => {
    const res = await fetch(`${sample.base}/docs/`);
    assert.equal(res.status, 200);
    assert.equal((await fetch(`${sample.base}/docs/static/swagger-ui.css`)).status, 200);
  });

  it('its /openapi.json passes `redocly lint` (recommended rules) with no errors', async () => {
    const doc: unknown = await (await fetch(`${sample.base}/openapi.json`)).json();
    const { ok, output } = await redoclyLint(doc);
    assert.ok(ok, `redocly lint reported errors:\n${output}`);
    // Every operation declares its problem answers (before problem details, 8 of the document's 15 warnings were this rule).
    assert.doesNotMatch(output, /operation-4xx-response/);
  });

  it('documents the admin group as guarded by its API key, and the key opens it', async () => {
    const doc = (await (await fetch(`${sample.base}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { security?: unknown }>>;
      components: {
        securitySchemes?: Record<string, { type: string; in?: string; name?: string }>;
      };
    };
    for (const path of ['/api/admin/users', '/api/admin/jobs'])
      assert.deepEqual(doc.paths[path]?.get?.security, [{ adminKey: [] }], path);
    const scheme = doc.components.securitySchemes?.adminKey;
    assert.deepEqual([scheme?.type, scheme?.in, scheme?.name], ['apiKey', 'header', 'x-admin-key']);
    const refused = await fetch(`${sample.base}/api/admin/users`);
    assert.equal(refused.status, 401);
    assert.match(String(refused.headers.get('content-type')), /^application\/problem\+json/);
  });
});
