// @test-lines: every - token verification: jose on this line's WebCrypto
import assert from 'node:assert/strict';
import { after, before, describe, it, mock } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { CompactSign, exportSPKI, SignJWT } from 'jose';
import {
  AUDIENCE,
  b64url,
  jwtApp,
  startJwtFixture,
  stopJwtFixture,
  TestAuthority,
} from '@kit/test-support/jwt-authority';
import { until } from '@kit/test-support/until';

const CHALLENGE = /^Bearer error="invalid_token", error_description="[^"\\]+"$/;

async function get(
  app: FastifyInstance,
  token: string | undefined,
  url = '/api/account/me',
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'GET',
    url,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
}

/** A 401 with the invalid_token challenge and a problem-details body that does not echo the token. */
function assertRejected(res: LightMyRequestResponse, token: string, description: RegExp): void {
  assert.equal(res.statusCode, 401, res.body);
  const challenge = String(res.headers['www-authenticate']);
  assert.match(challenge, CHALLENGE);
  assert.match(challenge, description);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = res.json<Record<string, unknown>>();
  assert.deepEqual(Object.keys(body).sort(), [
    'correlationId',
    'detail',
    'status',
    'title',
    'type',
  ]);
  assert.equal(body.correlationId, res.headers['x-correlation-id']);
  assert.equal(body.status, 401);
  assert.equal(body.title, 'Unauthorized');
  assert.equal(body.type, 'about:blank');
  assert.match(String(body.detail), description);
  for (const part of token.split('.').filter((p) => p.length > 8)) {
    assert.ok(!res.body.includes(part), 'the body never echoes the token');
    assert.ok(!challenge.includes(part), 'the challenge never echoes the token');
  }
}

describe('JWT validation against a real OpenID provider', () => {
  let authority: TestAuthority;
  let app: FastifyInstance;

  before(async () => {
    authority = await TestAuthority.start();
    app = await jwtApp(authority);
  });
  after(async () => {
    await app.close();
    await authority.stop();
  });

  it('loads discovery lazily: nothing is fetched before the first token', () => {
    assert.deepEqual(authority.counts, { discovery: 0, jwks: 0, other: 0 });
  });

  it('a valid token passes and request.user carries the verified claims', async () => {
    const token = await authority.sign({ claims: { roles: ['admin'] } });
    const res = await get(app, token);
    assert.equal(res.statusCode, 200, res.body);
    const { user } = res.json<{ user: Record<string, unknown> }>();
    assert.equal(user.sub, 'user-42');
    assert.equal(user.iss, authority.url);
    assert.equal(user.aud, AUDIENCE);
    assert.equal(user.scope, 'orders.read');
    assert.deepEqual(user.roles, ['admin']);
    assert.equal(typeof user.exp, 'number');
    assert.deepEqual(authority.counts, { discovery: 1, jwks: 1, other: 0 });
  });

  it('later tokens reuse the cached discovery document and key set', async () => {
    for (let i = 0; i < 3; i++)
      assert.equal((await get(app, await authority.sign())).statusCode, 200);
    assert.deepEqual(authority.counts, { discovery: 1, jwks: 1, other: 0 });
  });

  it('accepts any configured audience, and an aud list containing one', async () => {
    assert.equal(
      (await get(app, await authority.sign({ claims: { aud: 'api://other' } }))).statusCode,
      200,
    );
    assert.equal(
      (await get(app, await authority.sign({ claims: { aud: ['api://unrelated', AUDIENCE] } })))
        .statusCode,
      200,
    );
  });

  it('missing token: 401 with the bare Bearer challenge (RFC 6750 3.1) and a problem body', async () => {
    for (const headers of [
      {},
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'BearerXYZ' },
    ]) {
      const res = await app.inject({ method: 'GET', url: '/api/account/me', headers });
      assert.equal(res.statusCode, 401);
      assert.equal(res.headers['www-authenticate'], 'Bearer');
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      assert.deepEqual(res.json(), {
        type: 'about:blank',
        title: 'Unauthorized',
        status: 401,
        detail: 'A bearer token is required.',
        correlationId: res.headers['x-correlation-id'],
      });
    }
  });

  it('the scheme name is case-insensitive', async () => {
    const token = await authority.sign();
    const res = await app.inject({
      method: 'GET',
      url: '/api/account/me',
      headers: { authorization: `bearer ${token}` },
    });
    assert.equal(res.statusCode, 200);
  });

  it('malformed tokens are 401 invalid_token and never reach the provider', async () => {
    const before = { ...authority.counts };
    for (const token of [
      'not-a-jwt',
      'a.b.c',
      `${b64url({ alg: 'RS256' })}.%%%.sig`,
      'e30.e30.e30.e30.e30',
      `${b64url('{oops')}.${b64url({})}.sig`,
    ]) {
      const res = await app.inject({
        method: 'GET',
        url: '/api/account/me',
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(res.statusCode, 401, token);
      assert.match(
        String(res.headers['www-authenticate']),
        /^Bearer error="invalid_token", error_description="The token is malformed"$/,
      );
    }
    const empty = await app.inject({
      method: 'GET',
      url: '/api/account/me',
      headers: { authorization: 'Bearer ' },
    });
    assert.equal(empty.statusCode, 401);
    assert.match(String(empty.headers['www-authenticate']), /error="invalid_token"/);
    assert.deepEqual(authority.counts, before);
  });

  it('expired token: 401', async () => {
    const token = await authority.sign({
      claims: { iat: Math.floor(Date.now() / 1000) - 600 },
      expiresIn: -120,
    });
    assertRejected(await get(app, token), token, /The token expired/);
  });

  it('within the 60 s clock tolerance an expired token still passes', async () => {
    const token = await authority.sign({ expiresIn: -30 });
    assert.equal((await get(app, token)).statusCode, 200);
  });

  it('token without exp: 401', async () => {
    const token = await authority.sign({ claims: { exp: undefined } });
    assertRejected(await get(app, token), token, /The token has no valid expiry/);
  });

  it('not-yet-valid token (nbf in the future): 401', async () => {
    const token = await authority.sign({ claims: { nbf: Math.floor(Date.now() / 1000) + 300 } });
    assertRejected(await get(app, token), token, /The token is not valid yet/);
  });

  it('wrong audience: 401', async () => {
    const token = await authority.sign({ claims: { aud: 'api://someone-else' } });
    assertRejected(await get(app, token), token, /The token audience is not accepted/);
  });

  it('wrong issuer: 401 (signed with the right key, but iss is not the discovery issuer)', async () => {
    for (const iss of ['https://evil.example.com/tenant-a', `${authority.url}/`, undefined]) {
      const token = await authority.sign({ claims: { iss } });
      assertRejected(await get(app, token), token, /The token issuer is not accepted/);
    }
  });

  it('alg "none" (hand-built, unsigned): 401 without a provider request', async () => {
    const before = { ...authority.counts };
    const now = Math.floor(Date.now() / 1000);
    const payload = {
      iss: authority.url,
      aud: AUDIENCE,
      sub: 'attacker',
      iat: now,
      exp: now + 300,
    };
    for (const alg of ['none', 'None', 'NONE']) {
      const token = `${b64url({ alg, typ: 'JWT' })}.${b64url(payload)}.`;
      const res = await app.inject({
        method: 'GET',
        url: '/api/account/me',
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(res.statusCode, 401);
      assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
    }
    const token = `${b64url({ alg: 'none', kid: authority.currentKid })}.${b64url(payload)}.${b64url('x')}`;
    assertRejected(await get(app, token), token, /The token signing algorithm is not accepted/);
    assert.deepEqual(authority.counts, before);
  });

  it('HS256 signed with the public key as the HMAC secret (key confusion): 401', async () => {
    const key = authority.keys.get(authority.currentKid);
    assert.ok(key);
    const pem = await exportSPKI(key.publicKey);
    for (const secret of [
      new TextEncoder().encode(pem),
      new TextEncoder().encode(JSON.stringify(key.publicJwk)),
    ]) {
      const now = Math.floor(Date.now() / 1000);
      const token = await new SignJWT({ sub: 'attacker' })
        .setProtectedHeader({ alg: 'HS256', kid: key.kid })
        .setIssuer(authority.url)
        .setAudience(AUDIENCE)
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(secret);
      assertRejected(await get(app, token), token, /The token signing algorithm is not accepted/);
    }
  });

  it('a critical header parameter Kit does not understand (RFC 7515 4.1.11): 401 saying so, without a provider request', async () => {
    const key = authority.keys.get(authority.currentKid);
    assert.ok(key);
    const now = Math.floor(Date.now() / 1000);
    const payload = new TextEncoder().encode(
      JSON.stringify({
        iss: authority.url,
        aud: AUDIENCE,
        sub: 'user-42',
        iat: now,
        exp: now + 300,
      }),
    );
    const before = { ...authority.counts };
    for (const crit of [['urn:example:binding'], ['exp']]) {
      const header = {
        alg: key.alg,
        kid: key.kid,
        typ: 'JWT',
        crit,
        ...Object.fromEntries(crit.map((name) => [name, 1])),
      };
      const token = await new CompactSign(payload)
        .setProtectedHeader(header)
        .sign(key.privateKey, { crit: Object.fromEntries(crit.map((name) => [name, true])) });
      assertRejected(
        await get(app, token),
        token,
        /The token has a critical header parameter that is not supported/,
      );
    }
    assert.deepEqual(authority.counts, before);
  });

  it('a tampered payload fails the signature check: 401', async () => {
    const [header, , signature] = (await authority.sign()).split('.');
    const now = Math.floor(Date.now() / 1000);
    const token = `${header}.${b64url({ iss: authority.url, aud: AUDIENCE, sub: 'admin', exp: now + 300 })}.${signature}`;
    assertRejected(await get(app, token), token, /The token signature is not valid/);
  });

  it('a token signed by a key the provider never published (unknown kid): 401', async () => {
    await authority.addKey('RS256', 'rogue-key');
    const token = await authority.sign({ kid: 'rogue-key' });
    assertRejected(await get(app, token), token, /The token signing key is unknown/);
  });

  it('a known kid whose signature is by another key: 401', async () => {
    const rogue = authority.keys.get('rogue-key');
    assert.ok(rogue);
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ sub: 'attacker' })
      .setProtectedHeader({ alg: 'RS256', kid: authority.currentKid })
      .setIssuer(authority.url)
      .setAudience(AUDIENCE)
      .setExpirationTime(now + 300)
      .sign(rogue.privateKey);
    assertRejected(await get(app, token), token, /The token signature is not valid/);
  });

  it('guards route-level (single hook and array) and leaves public routes alone', async () => {
    assert.equal((await app.inject({ method: 'GET', url: '/api/catalog/items' })).statusCode, 200);
    assert.equal((await app.inject({ method: 'POST', url: '/api/catalog/items' })).statusCode, 401);
    const token = await authority.sign();
    const created = await app.inject({
      method: 'POST',
      url: '/api/catalog/items',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.deepEqual(created.json(), { createdBy: 'user-42' });
    // The route's own 4xx response schema does not reshape the problem body.
    const refused = await app.inject({ method: 'DELETE', url: '/api/catalog/items/7' });
    assert.equal(refused.statusCode, 401);
    assert.deepEqual(Object.keys(refused.json<object>()).sort(), [
      'correlationId',
      'detail',
      'status',
      'title',
      'type',
    ]);
  });

  it('a group-wide hook guards every route of the group, including those declared before it', async () => {
    assert.equal((await get(app, undefined, '/api/account/orders/9')).statusCode, 401);
    const res = await get(app, await authority.sign(), '/api/account/orders/9');
    assert.deepEqual(res.json(), { id: '9', owner: 'user-42' });
  });
});

describe('JWT signing keys: rotation, removal, several keys, algorithms', () => {
  let authority: TestAuthority;
  let app: FastifyInstance;

  before(async () => {
    ({ authority, app } = await startJwtFixture({ path: '/realms/rotation/' }));
  });
  after(() => stopJwtFixture({ authority, app }));

  it('an authority URL with a trailing slash finds the discovery document below it', async () => {
    assert.equal((await get(app, await authority.sign())).statusCode, 200);
    assert.deepEqual(authority.counts, { discovery: 1, jwks: 1, other: 0 });
  });

  it('a key rotation is picked up: the provider switches to a new key, the first token with its kid refetches the set', async () => {
    const oldToken = await authority.sign({ expiresIn: 3600 });
    const next = await authority.addKey('ES256', 'rotated-es256');
    authority.published = [next.kid];
    authority.currentKid = next.kid;
    mock.timers.tick(31_000); // past jose's 30 s cooldown since the last fetch
    const res = await get(app, await authority.sign());
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(authority.counts.jwks, 2);
    // The refetched set no longer holds the retired key.
    assertRejected(await get(app, oldToken), oldToken, /The token signing key is unknown/);
  });

  it('made-up kids cost at most one key-set fetch per 30 s cooldown', async () => {
    await authority.addKey('ES256', 'never-published');
    const fetches = authority.counts.jwks;
    for (let i = 0; i < 5; i++) {
      const token = await authority.sign({ kid: 'never-published' });
      assertRejected(await get(app, token), token, /The token signing key is unknown/);
    }
    assert.equal(
      authority.counts.jwks,
      fetches,
      'within the cooldown an unknown kid is refused without a fetch',
    );
    mock.timers.tick(31_000);
    for (let i = 0; i < 5; i++)
      assert.equal(
        (await get(app, await authority.sign({ kid: 'never-published' }))).statusCode,
        401,
      );
    assert.equal(
      authority.counts.jwks,
      fetches + 1,
      'one fetch once the cooldown passed, then cooling down again',
    );
  });

  it('a key the authority removes stops being accepted after the 10 min background refresh', async () => {
    const extra = await authority.addKey('ES256', 'short-lived');
    authority.published = ['rotated-es256', extra.kid];
    mock.timers.tick(31_000);
    const token = await authority.sign({ kid: extra.kid, expiresIn: 3600 });
    assert.equal((await get(app, token)).statusCode, 200);
    authority.published = ['rotated-es256'];
    assert.equal((await get(app, token)).statusCode, 200, 'still in the cached set');
    const fetches = authority.counts.jwks;
    mock.timers.tick(10 * 60 * 1000);
    // This request is answered from the cache and starts the refresh in the background.
    assert.equal((await get(app, await authority.sign())).statusCode, 200);
    await until(
      'the background refresh to fetch the key set',
      () => authority.counts.jwks === fetches + 1,
    );
    await new Promise((resolve) => setImmediate(resolve));
    assertRejected(await get(app, token), token, /The token signing key is unknown/);
  });

  it('a token without kid is checked against each key of its type', async () => {
    const second = await authority.addKey('ES256', 'second-es256');
    authority.published = ['rotated-es256', second.kid];
    mock.timers.tick(31_000);
    assert.equal((await get(app, await authority.sign({ kid: second.kid }))).statusCode, 200); // refetch: both ES256 keys held
    for (const kid of ['rotated-es256', second.kid]) {
      assert.equal(
        (await get(app, await authority.sign({ kid, omitKid: true }))).statusCode,
        200,
        kid,
      );
    }
    const rogue = await authority.addKey('ES256', 'rogue-es256');
    const token = await authority.sign({ kid: rogue.kid, omitKid: true });
    assertRejected(await get(app, token), token, /The token signature is not valid/);
  });

  it('EdDSA, PS256 and ES384 keys verify too', async () => {
    const kids: string[] = [];
    for (const alg of ['EdDSA', 'PS256', 'ES384']) kids.push((await authority.addKey(alg)).kid);
    authority.published = [...authority.published, ...kids];
    mock.timers.tick(31_000);
    for (const kid of kids)
      assert.equal((await get(app, await authority.sign({ kid }))).statusCode, 200, kid);
  });
});

describe('JWT when the discovery issuer differs from the configured authority', () => {
  it("tokens must carry the discovery document's issuer, not the authority URL", async () => {
    const authority = await TestAuthority.start();
    authority.issuerOverride = 'https://issuer.example.com/tenant-a/v2.0';
    const app = await jwtApp(authority);
    try {
      assert.equal((await get(app, await authority.sign())).statusCode, 200);
      const token = await authority.sign({ claims: { iss: authority.url } });
      assertRejected(await get(app, token), token, /The token issuer is not accepted/);
    } finally {
      await app.close();
      await authority.stop();
    }
  });
});
