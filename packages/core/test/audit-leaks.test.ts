// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
// No value the audit trail redacts may reach the log through any line, since one line that leaks
// a token defeats the redaction everywhere else: every test here captures the WHOLE log output of a real Fastify app, as raw text, and
// looks for the secrets in all of it: the audit entries, Fastify's own lines (incoming request,
// request completed, route not found, error lines), Kit's lines.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as fastifyModule from 'fastify';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import {
  addKit,
  AuditTrailFormat,
  DEFAULT_REDACT_QUERY_PARAMS,
  useKit,
  type AuditTrailOptions,
} from '@kit/core';
import { REDACTED } from '../src/audit/redaction.js';
import { settle } from './audit-helpers.js';

// Fastify before 5.10 has no log controller: Kit cannot redact or drop Fastify's own request lines
// there and warns at start-up instead (internals.test.ts checks that side, the version matrix of
// .ci/run runs it).
const { LogController } = fastifyModule as { LogController?: typeof fastifyModule.LogController };
const noController =
  LogController === undefined &&
  "Fastify < 5.10 has no log controller (internals.test.ts checks Kit's warning there)";

/** Every byte the logger wrote. */
class RawLog {
  text = '';
  write(chunk: string): void {
    this.text += chunk;
  }
  lines(): Array<Record<string, unknown>> {
    return this.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

// Each secret is unique, so a hit names the way it leaked.
const QUERY_SECRETS: Record<string, string> = {
  token: 'S-token-1',
  access_token: 'S-access-2',
  refresh_token: 'S-refresh-3',
  id_token: 'S-idtoken-4',
  client_secret: 'S-clientsecret-5',
  code: 'S-code-6',
  jwt: 'S-jwt-7',
  password: 'S-password-8',
  authorization: 'S-authq-9',
  api_key: 'S-apikey-10',
  'token[]': 'S-bracket-array-11',
  'user[password]': 'S-bracket-nested-12',
  'user%5Bpassword%5D': 'S-bracket-encoded-13',
  'a.b.secret': 'S-dotted-14',
  Client_Secret: 'S-case-15',
  'X-Amz-Signature': 'S-amz-16',
  sig: 'S-sas-17',
};
const HEADER_SECRETS: Record<string, string> = {
  authorization: 'Bearer S-bearer-20',
  cookie: 'sid=S-cookie-21',
  'x-api-key': 'S-xapikey-22',
  'x-auth-token': 'S-xauth-23',
  'proxy-authorization': 'Basic S-proxy-24',
};
const SECRETS = [
  ...Object.values(QUERY_SECRETS),
  ...Object.values(HEADER_SECRETS).map((v) => v.split(/[ =]/).pop() as string),
];
const QUERY = `keep=visible&${Object.entries(QUERY_SECRETS)
  .map(([k, v]) => `${k}=${v}`)
  .join('&')}`;

async function app(options: {
  audit?: (a: AuditTrailOptions) => void;
  fastify?: FastifyServerOptions;
  log: RawLog;
  problemDetails?: boolean;
}): Promise<FastifyInstance> {
  const instance = Fastify({ logger: { level: 'trace', stream: options.log }, ...options.fastify });
  addKit(instance, [], (opt) => {
    opt.configureAuditTrail(options.audit);
    if (options.problemDetails !== undefined) opt.problemDetails = options.problemDetails;
  });
  instance.get('/hello', async () => ({ ok: true }));
  instance.get('/boom', async () => {
    throw new Error('kaboom');
  });
  instance.get(
    '/validated',
    { schema: { querystring: { type: 'object', properties: { n: { type: 'integer' } } } } },
    async () => ({ ok: true }),
  );
  instance.get('/teapot', async (_req, reply) => reply.code(418).send('short and stout'));
  // An onResponse hook that fails: Fastify logs "request errored" with the error.
  instance.get(
    '/after',
    { onResponse: (_req, _reply, done) => done(new Error('onResponse failed')) },
    async () => ({ ok: true }),
  );
  await useKit(instance);
  await instance.ready();
  return instance;
}

/** The same secrets sent to every kind of route: 200, 404, 500, 400 (validation), 418, an excluded path. */
async function sendEverything(instance: FastifyInstance): Promise<void> {
  for (const path of [
    '/hello',
    '/nowhere',
    '/boom',
    '/validated',
    '/teapot',
    '/after',
    '/healthz',
    '/livez',
  ]) {
    const url = path === '/validated' ? `${path}?n=abc&${QUERY}` : `${path}?${QUERY}`;
    await instance.inject({ url, headers: HEADER_SECRETS });
  }
  await settle();
}

function assertNoSecret(log: RawLog): void {
  const leaked = SECRETS.filter((s) => log.text.includes(s));
  const lines = log.text.split('\n').filter((l) => SECRETS.some((s) => l.includes(s)));
  assert.deepEqual(leaked, [], `secrets in the log:\n${lines.join('\n')}`);
  assert.ok(
    log.text.includes('keep=visible'),
    'the query is still logged, unlisted parameters in clear',
  );
}

describe('no redacted value in any line of the log', { skip: noController }, () => {
  for (const format of Object.values(AuditTrailFormat)) {
    it(`default setup, ${format}: Fastify's request lines are off, its error lines redacted, every entry redacted`, async () => {
      const log = new RawLog();
      const instance = await app({
        log,
        audit: (a) => {
          a.logFormat = format;
        },
      });
      try {
        await sendEverything(instance);
        assertNoSecret(log);
        const msgs = log.lines().map((l) => l.msg);
        assert.ok(
          !msgs.includes('incoming request') && !msgs.includes('request completed'),
          "Fastify's per-request lines are off",
        );
        assert.ok(
          !msgs.some((m) => typeof m === 'string' && m.startsWith('Route GET:')),
          "and its 'Route ... not found' line",
        );
        const error = log.lines().find((l) => l.msg === 'kaboom') as
          { req?: { url?: string }; err?: { stack?: string } } | undefined;
        assert.ok(error?.err?.stack, "the 500's error line, with its stack, stays");
        assert.match(
          error?.req?.url ?? '',
          /^\/boom\?keep=visible&token=\*\*\*&/,
          'its URL redacted like the entry',
        );
        const errored = log.lines().find((l) => l.msg === 'request errored') as
          { err?: { message?: string } } | undefined;
        assert.equal(
          errored?.err?.message,
          'onResponse failed',
          '"request errored" carries an error: it stays',
        );
      } finally {
        await instance.close();
      }
    });
  }

  for (const problemDetails of [true, false])
    it(`fastifyRequestLogging = true: Fastify's lines are back, with the URL and headers redacted (problemDetails ${problemDetails})`, async () => {
      const log = new RawLog();
      const instance = await app({
        log,
        problemDetails,
        audit: (a) => {
          a.fastifyRequestLogging = true;
        },
        // A host serializer that logs every header: it sees the redacted view too.
        fastify: {
          logger: {
            level: 'trace',
            stream: log,
            serializers: {
              req: (req: { method: string; url: string; headers: unknown }) => ({
                method: req.method,
                url: req.url,
                headers: req.headers,
              }),
            },
          },
        },
      });
      try {
        await sendEverything(instance);
        assertNoSecret(log);
        const incoming = log.lines().filter((l) => l.msg === 'incoming request') as Array<{
          req: { url: string; headers: Record<string, string> };
        }>;
        assert.equal(incoming.length, 8, 'one per request, excluded paths included');
        assert.match(
          incoming[0]?.req.url ?? '',
          /^\/hello\?keep=visible&token=\*\*\*&access_token=\*\*\*/,
        );
        assert.equal(incoming[0]?.req.headers.authorization, REDACTED);
        assert.equal(
          log.lines().filter((l) => l.msg === 'request completed').length,
          7,
          'and "request errored" for /after',
        );
        // Fastify's own 404 handler logs the URL in its message; Kit's problem-details 404 logs
        // nothing (the entry and 'request completed' record the 404).
        const routeLine = log
          .lines()
          .some(
            (l) =>
              typeof l.msg === 'string' &&
              l.msg.startsWith('Route GET:/nowhere?keep=visible&token=***'),
          );
        assert.equal(routeLine, !problemDetails);
      } finally {
        await instance.close();
      }
    });

  it("the host's own LogController keeps deciding (here: quiet probes), Kit only redacts", async () => {
    const log = new RawLog();
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }): void => void warnings.push(w.code ?? w.name);
    process.on('warning', onWarning);
    try {
      const instance = await app({
        log,
        audit: (a) => {
          a.fastifyRequestLogging = true;
        },
        fastify: {
          logController: new (LogController as typeof fastifyModule.LogController)({
            disableRequestLogging: (req: { url: string }) =>
              req.url.startsWith('/healthz') || req.url.startsWith('/livez'),
          }),
        },
      });
      try {
        await sendEverything(instance);
        assertNoSecret(log);
        const urls = log
          .lines()
          .filter((l) => l.msg === 'incoming request')
          .map((l) => (l.req as { url: string }).url.split('?')[0]);
        assert.deepEqual(urls, ['/hello', '/nowhere', '/boom', '/validated', '/teapot', '/after']);
      } finally {
        await instance.close();
      }
      await new Promise((resolve) => setImmediate(resolve));
      assert.ok(!warnings.includes('FSTDEP023'), `no deprecation warning: ${warnings.join(', ')}`);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('includeQueryString = false: no query at all in the lines Fastify still writes', async () => {
    const log = new RawLog();
    const instance = await app({
      log,
      audit: (a) => {
        a.includeQueryString = false;
      },
    });
    try {
      await sendEverything(instance);
      assert.deepEqual(
        SECRETS.filter((s) => log.text.includes(s)),
        [],
      );
      assert.ok(!log.text.includes('keep=visible'));
    } finally {
      await instance.close();
    }
  });
});

describe('default redaction lists: the credential names of OAuth, OpenID Connect and common HTTP APIs', () => {
  it('OAuth and OpenID Connect names, passwords, authorization, bracketed and dotted forms are redacted in the entry; names kept', async () => {
    const log = new RawLog();
    const instance = await app({ log });
    try {
      await instance.inject({ url: `/hello?${QUERY}`, headers: HEADER_SECRETS });
      await settle();
      const entry = log.lines().find((l) => l.Method === 'GET') as {
        Query: string;
        Headers: Record<string, string>;
      };
      const expected = `?keep=visible&${Object.keys(QUERY_SECRETS)
        .map((k) => `${k}=${REDACTED}`)
        .join('&')}`;
      assert.equal(entry.Query, expected);
      for (const name of Object.keys(HEADER_SECRETS))
        assert.equal(entry.Headers[name], REDACTED, name);
    } finally {
      await instance.close();
    }
  });

  it('a bracketed name is matched by each of its parts, not by substrings', async () => {
    const log = new RawLog();
    const instance = await app({
      log,
      audit: (a) => {
        a.redactQueryParams = ['pin'];
      },
    });
    try {
      await instance.inject('/hello?pin[]=1&card[pin]=2&a[b][pin]=3&pinned=4&spin[x]=5&card.pin=6');
      await settle();
      const entry = log.lines().find((l) => l.Method === 'GET') as { Query: string };
      assert.equal(
        entry.Query,
        '?pin[]=***&card[pin]=***&a[b][pin]=***&pinned=4&spin[x]=5&card.pin=***',
      );
    } finally {
      await instance.close();
    }
  });

  it('the documented list is the one in force', () => {
    for (const name of [
      'client_secret',
      'refresh_token',
      'id_token',
      'access_token',
      'code',
      'jwt',
      'password',
      'authorization',
    ]) {
      assert.ok(DEFAULT_REDACT_QUERY_PARAMS.includes(name), name);
    }
  });
});
