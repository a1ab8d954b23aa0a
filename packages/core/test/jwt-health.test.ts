// @test-lines: once - the authority's health check over inject
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { HealthCheckResult, IHealthCheck } from '@kit/core';
import {
  jwtApp,
  startJwtFixture,
  stopJwtFixture,
  TestAuthority,
} from '@kit/test-support/jwt-authority';

/** Runs the `jwt` check exactly as registered through the builder. */
async function runJwtCheck(
  app: FastifyInstance,
  signal: AbortSignal = AbortSignal.timeout(5000),
): Promise<HealthCheckResult> {
  const registration = app.kit.healthChecks.registrations().find((r) => r.name === 'jwt');
  assert.ok(registration, 'configureJwt registered a check named jwt');
  assert.equal(typeof registration.check, 'object', 'a ready instance, not a class to build');
  return (registration.check as IHealthCheck).checkHealth({
    name: registration.name,
    tags: registration.tags,
    signal,
  });
}

/** Everything the report could show at Full detail. */
function fullOutput(result: HealthCheckResult): string {
  return JSON.stringify({
    status: result.status,
    description: result.description,
    data: result.data,
    exception: result.exception?.message,
    stack: result.exception?.stack,
    cause: String(result.exception?.cause ?? ''),
  });
}

function assertNoAddress(result: HealthCheckResult, authority: TestAuthority): void {
  const text = fullOutput(result);
  for (const fragment of [
    '://',
    '127.0.0.1',
    `:${authority.port}`,
    String(authority.port),
    'tenant-a',
    '.well-known',
    authority.jwksPath,
    'localhost',
  ]) {
    assert.ok(!text.includes(fragment), `the check output contains "${fragment}": ${text}`);
  }
}

describe('the jwt health check', () => {
  let authority: TestAuthority;
  let app: FastifyInstance;

  beforeEach(async () => {
    ({ authority, app } = await startJwtFixture());
  });
  afterEach(() => stopJwtFixture({ authority, app }));

  it('healthy with the authority up: discovery document and key set both fetched', async () => {
    const result = await runJwtCheck(app);
    assert.equal(result.status, 'healthy');
    assert.equal(result.description, 'The token authority is reachable.');
    assert.deepEqual(result.data, { signingKeys: 1 });
    assert.deepEqual(authority.counts, { discovery: 1, jwks: 1, other: 0 });
    assertNoAddress(result, authority);
  });

  it('caches its result for 30 s (counted on the provider) and shares a probe in flight', async () => {
    await Promise.all([runJwtCheck(app), runJwtCheck(app), runJwtCheck(app)]);
    assert.deepEqual(
      authority.counts,
      { discovery: 1, jwks: 1, other: 0 },
      'concurrent calls: one probe',
    );
    for (let i = 0; i < 5; i++) await runJwtCheck(app);
    mock.timers.tick(29_999);
    await runJwtCheck(app);
    assert.deepEqual(
      authority.counts,
      { discovery: 1, jwks: 1, other: 0 },
      'within 30 s: no request',
    );
    mock.timers.tick(1);
    await runJwtCheck(app);
    assert.deepEqual(
      authority.counts,
      { discovery: 2, jwks: 2, other: 0 },
      'at 30 s: probed again',
    );
  });

  it('unhealthy with the authority down when no key was ever fetched; no URL anywhere in the output', async () => {
    await authority.stop();
    const result = await runJwtCheck(app);
    assert.equal(result.status, 'unhealthy');
    assert.equal(
      result.description,
      'The token authority is unreachable; tokens cannot be validated.',
    );
    assert.deepEqual(result.data, { stage: 'discovery document', reason: 'connection failed' });
    assert.equal(result.exception?.message, 'discovery document: connection failed');
    assert.equal(result.exception?.cause, undefined);
    assertNoAddress(result, authority);
  });

  it('degraded with the authority down while keys fetched earlier still validate tokens', async () => {
    const token = await authority.sign();
    const ok = await app.inject({
      method: 'GET',
      url: '/api/account/me',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(ok.statusCode, 200);
    await authority.stop();
    // Token validation's fetch just said healthy: the check probes again once that is 30 s old.
    assert.equal((await runJwtCheck(app)).status, 'healthy');
    mock.timers.tick(30_000);
    const result = await runJwtCheck(app);
    assert.equal(result.status, 'degraded');
    assert.equal(
      result.description,
      'The token authority is unreachable; signing keys fetched earlier are still in use.',
    );
    assertNoAddress(result, authority);
  });

  it('recovers: healthy again at the first probe after the cached failure expires', async () => {
    await authority.stop();
    assert.equal((await runJwtCheck(app)).status, 'unhealthy');
    await authority.restart();
    assert.equal((await runJwtCheck(app)).status, 'unhealthy', 'cached');
    mock.timers.tick(30_000);
    assert.equal((await runJwtCheck(app)).status, 'healthy');
  });

  it('a key set answering 500, or a discovery document without jwks_uri, is unhealthy with a generic reason', async () => {
    authority.jwksStatus = 500;
    let result = await runJwtCheck(app);
    assert.equal(result.status, 'unhealthy');
    assert.deepEqual(result.data, { stage: 'signing keys', reason: 'HTTP status 500' });
    assertNoAddress(result, authority);

    authority.jwksStatus = undefined;
    authority.discoveryPatch = { jwks_uri: undefined };
    mock.timers.tick(30_000);
    result = await runJwtCheck(app);
    assert.deepEqual(result.data, {
      stage: 'discovery document',
      reason: 'discovery document has no valid jwks_uri',
    });
  });

  it('an authority that never answers is unhealthy when the check is aborted at its timeout', async () => {
    authority.hang = true;
    const result = await runJwtCheck(app, AbortSignal.timeout(200));
    assert.equal(result.status, 'unhealthy');
    assert.deepEqual(result.data, { stage: 'discovery document', reason: 'timed out' });
    assertNoAddress(result, authority);
  });

  it('a successful probe also warms the discovery cache token validation uses', async () => {
    await runJwtCheck(app);
    const token = await authority.sign();
    const res = await app.inject({
      method: 'GET',
      url: '/api/account/me',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(authority.counts, { discovery: 1, jwks: 2, other: 0 });
  });
});

describe('the jwt check follows what token validation sees, without requests of its own', () => {
  let authority: TestAuthority;
  let app: FastifyInstance;

  beforeEach(async () => {
    ({ authority, app } = await startJwtFixture());
  });
  afterEach(() => stopJwtFixture({ authority, app }));

  const me = (token: string) =>
    app.inject({
      method: 'GET',
      url: '/api/account/me',
      headers: { authorization: `Bearer ${token}` },
    });

  it('the authority returns: the first token validated turns the check healthy at once, not 30 s later', async () => {
    await authority.stop();
    assert.equal((await runJwtCheck(app)).status, 'unhealthy');
    await authority.restart();
    mock.timers.tick(1000); // past the discovery retry wait the failed probe started
    const token = await authority.sign();
    assert.equal((await me(token)).statusCode, 200);
    const seen = { ...authority.counts };
    const result = await runJwtCheck(app);
    assert.equal(result.status, 'healthy', fullOutput(result));
    assert.deepEqual(result.data, { signingKeys: 1 });
    assert.deepEqual(authority.counts, seen, 'the check itself asked the authority nothing');
  });

  it('an outage starts: the first request that cannot reach the authority turns the check unhealthy at once', async () => {
    assert.equal((await runJwtCheck(app)).status, 'healthy');
    await authority.stop();
    const token = await authority.sign();
    assert.equal(
      (await me(token)).statusCode,
      503,
      'no key set was ever fetched by token validation',
    );
    const result = await runJwtCheck(app);
    assert.equal(result.status, 'unhealthy', fullOutput(result));
    // The verifier's failure (the key set), not a probe of the check's own (which would fail at discovery).
    assert.deepEqual(result.data, { stage: 'signing keys', reason: 'key set fetch failed' });
    assertNoAddress(result, authority);
  });

  it('an outage found by a key rotation while keys are held turns the check degraded at once', async () => {
    assert.equal((await me(await authority.sign())).statusCode, 200);
    assert.equal((await runJwtCheck(app)).status, 'healthy');
    await authority.stop();
    const rotated = await authority.addKey('RS256');
    mock.timers.tick(30_000); // past jose's refetch cooldown; the check's own result lapses too
    assert.equal((await me(await authority.sign({ kid: rotated.kid }))).statusCode, 503);
    const result = await runJwtCheck(app);
    assert.equal(result.status, 'degraded', fullOutput(result));
    assert.deepEqual(result.data, { stage: 'signing keys', reason: 'key set fetch failed' });
  });
});

describe('the jwt check in the /healthz report', () => {
  it('appears in /healthz at Full detail, healthy with the provider up and unhealthy with it down, never with a URL', async () => {
    const authority = await TestAuthority.start();
    const app = await jwtApp(authority, (opt) => {
      opt.healthCheckDetailLevel = 'Full';
    });
    try {
      const up = await app.inject('/healthz');
      assert.equal(up.statusCode, 200, up.body);
      const upBody = up.json<{ status: string; checks: Record<string, { status: string }> }>();
      assert.equal(upBody.checks.jwt?.status, 'healthy');
      for (const fragment of [
        '://',
        '127.0.0.1',
        String(authority.port),
        '.well-known',
        authority.jwksPath,
      ]) {
        assert.ok(!up.body.includes(fragment), `/healthz shows "${fragment}": ${up.body}`);
      }

      const fresh = await jwtApp(authority, (opt) => {
        opt.healthCheckDetailLevel = 'Full';
      });
      await authority.stop();
      const down = await fresh.inject('/healthz');
      const downBody = down.json<{ status: string; checks: Record<string, { status: string }> }>();
      assert.equal(downBody.checks.jwt?.status, 'unhealthy', down.body);
      assert.equal(down.statusCode, 503);
      for (const fragment of [
        '://',
        '127.0.0.1',
        String(authority.port),
        '.well-known',
        authority.jwksPath,
        'ECONNREFUSED',
      ]) {
        assert.ok(!down.body.includes(fragment), `/healthz shows "${fragment}": ${down.body}`);
      }
      await fresh.close();
    } finally {
      await app.close();
      await authority.stop().catch(() => {});
    }
  });
});
