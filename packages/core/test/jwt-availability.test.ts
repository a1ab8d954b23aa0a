// @test-lines: once - the authority reachability through Kit over inject
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import {
  startJwtFixture,
  stopJwtFixture,
  type TestAuthority,
} from '@kit/test-support/jwt-authority';

async function get(app: FastifyInstance, token: string): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'GET',
    url: '/api/account/me',
    headers: { authorization: `Bearer ${token}` },
  });
}

function assertUnavailable(res: LightMyRequestResponse, token: string): void {
  assert.equal(res.statusCode, 503, res.body);
  assert.equal(res.headers['www-authenticate'], undefined, 'not a token problem: no challenge');
  assert.equal(res.headers['retry-after'], '5');
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  assert.deepEqual(res.json(), {
    type: 'about:blank',
    title: 'Service Unavailable',
    status: 503,
    detail: 'The token authority cannot be reached; try again later.',
    correlationId: res.headers['x-correlation-id'],
  });
  assert.ok(!res.body.includes(token.split('.')[1] ?? '-'), 'no token in the body');
  assert.ok(!res.body.includes('127.0.0.1'), 'no authority address in the body');
}

describe('JWT when the authority is unavailable', () => {
  let authority: TestAuthority;
  let app: FastifyInstance;

  beforeEach(async () => {
    ({ authority, app } = await startJwtFixture());
  });
  afterEach(() => stopJwtFixture({ authority, app }));

  it('down before the first token: 503 (not 401), the process keeps running, retries after a backoff', async () => {
    const token = await authority.sign({ expiresIn: 3600 });
    await authority.stop();
    assertUnavailable(await get(app, token), token);

    // Back up, but within the 1 s retry backoff: answered at once without asking the authority.
    await authority.restart();
    assertUnavailable(await get(app, token), token);
    assert.equal(authority.counts.discovery, 0);

    mock.timers.tick(1000);
    const res = await get(app, token);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(authority.counts, { discovery: 1, jwks: 1, other: 0 });
  });

  it('a malformed or alg-none token is still 401 while the authority is down', async () => {
    await authority.stop();
    const res = await get(app, 'not.a.token');
    assert.equal(res.statusCode, 401);
    assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
  });

  it('down after the keys were fetched: tokens keep validating from the cached keys, even past the refresh age', async () => {
    assert.equal((await get(app, await authority.sign())).statusCode, 200);
    await authority.stop();
    assert.equal((await get(app, await authority.sign())).statusCode, 200);
    mock.timers.tick(11 * 60 * 1000); // the background key refresh fails; the old set stays
    assert.equal((await get(app, await authority.sign())).statusCode, 200);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal((await get(app, await authority.sign())).statusCode, 200);
    // Bad tokens are still refused.
    const wrong = await authority.sign({ claims: { aud: 'api://nope' } });
    assert.equal((await get(app, wrong)).statusCode, 401);
  });

  it('a discovery document without jwks_uri, or a key set answering 500: 503', async () => {
    const token = await authority.sign();
    authority.discoveryPatch = { jwks_uri: undefined };
    assertUnavailable(await get(app, token), token);

    authority.discoveryPatch = {};
    authority.jwksStatus = 500;
    mock.timers.tick(1000);
    assertUnavailable(await get(app, token), token);
    assert.equal(authority.counts.discovery, 2);

    authority.jwksStatus = undefined;
    assert.equal(
      (await get(app, token)).statusCode,
      200,
      'no key set held yet: the next token fetches it again',
    );
  });
});
