// @test-lines: every - the README's quick start: the sample started as a process on this line, signals
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startProcess } from '@kit/test-support/processes';
import { redoclyLint } from '@kit/test-support/redocly';
import { until } from '@kit/test-support/until';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

// The quick start's `npm start`, as package.json writes it: `node <node args> src/main.ts`.
const startScript = (
  JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  }
).scripts.start.split(' ');
assert.equal(startScript[0], 'node', 'npm start runs node');
const entry = startScript.at(-1) ?? '';

/** Starts the sample the way `npm start` does, on a free port, once it prints its base URL. */
async function startSample(env: Record<string, string> = {}) {
  const host = await startProcess(
    entry,
    { PORT: '0', LOG_LEVEL: 'info', ...env },
    {
      cwd: root,
      nodeArgs: startScript.slice(1, -1),
      // Generous: this waits for tsx to compile the sample and PGlite to initdb in memory, which took
      // over 30 s on a 2-core CI machine under load; a sample that fails to start exits and says so.
      startMs: 120_000,
      // All of stderr: a deprecation warning printed at start-up must not fall out of a tail.
      stderrTail: Infinity,
      ready: (line) => {
        const base = /listening on (http:\/\/[^\s"]+)/.exec(line)?.[1];
        return base === undefined ? undefined : { port: Number(new URL(base).port), base };
      },
    },
  );
  return {
    child: host.child,
    base: host.ready.base,
    output: () => host.stdout() + host.stderr(),
  };
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
    await until(
      '/healthz 200',
      async () => (await fetch(`${sample.base}/healthz`)).status === 200,
      {
        timeoutMs: 120_000,
        intervalMs: 100,
        diagnostic: () => sample.output(),
      },
    );
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
