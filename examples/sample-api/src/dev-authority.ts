// A throwaway OpenID provider for trying the sample's protected /api/account routes on one
// machine: discovery, a key set, and a token endpoint that signs a token for any subject.
// Listens on 127.0.0.1 only, keeps its key in memory. Never use it for anything real.
//
//   npm run dev-authority -w examples/sample-api          # prints the env vars and a token
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import http from 'node:http';

const port = Number(process.env.DEV_AUTHORITY_PORT ?? 4000);
const audience = process.env.JWT_AUDIENCE ?? 'api://sample-shop';
const base = `http://127.0.0.1:${port}/dev`;
const kid = randomUUID();
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

function token(subject: string, roles: string[] = []): string {
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64url({ alg: 'RS256', kid, typ: 'JWT' })}.${b64url({ iss: base, aud: audience, sub: subject, scope: 'account.read', ...(roles.length > 0 ? { roles } : {}), iat: now, exp: now + 3600 })}`;
  return `${input}.${sign('RSA-SHA256', Buffer.from(input), privateKey).toString('base64url')}`;
}

function json(res: http.ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', base);
  if (url.pathname === '/dev/.well-known/openid-configuration') {
    return json(res, {
      issuer: base,
      jwks_uri: `${base}/keys`,
      token_endpoint: `${base}/token`,
      id_token_signing_alg_values_supported: ['RS256'],
    });
  }
  if (url.pathname === '/dev/keys') return json(res, { keys: [jwk] });
  if (url.pathname === '/dev/token') {
    const roles = (url.searchParams.get('roles') ?? '').split(',').filter((r) => r !== '');
    return json(res, {
      access_token: token(url.searchParams.get('sub') ?? '1', roles),
      token_type: 'Bearer',
      expires_in: 3600,
    });
  }
  res.writeHead(404).end();
});

server.listen(port, '127.0.0.1', () => {
  console.log(`
Development token authority on ${base} (throwaway keys; tokens valid 1 h)

Start the sample against it:
  JWT_AUTHORITY=${base} JWT_AUDIENCE=${audience} npm start

Customer 1 of the shop (its orders only), and staff (every order):
  CUSTOMER=$(curl -s '${base}/token?sub=1&roles=customer' | node -p 'JSON.parse(require("fs").readFileSync(0)).access_token')
  STAFF=$(curl -s '${base}/token?sub=clerk&roles=staff' | node -p 'JSON.parse(require("fs").readFileSync(0)).access_token')

Call the protected group (user 1 owns order 100):
  TOKEN=$(curl -s '${base}/token?sub=1' | node -p 'JSON.parse(require("fs").readFileSync(0)).access_token')
  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:3000/api/account/me
  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:3000/api/account/orders

A token for now:
  ${token('1')}
`);
});
