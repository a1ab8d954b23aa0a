// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AuditTrailFormat } from '@kit/core';
import { createExcludeMatcher } from '../src/audit/exclude.js';
import {
  AUDIT_HEADER_VALUE_CAP,
  AUDIT_PATH_CAP,
  AUDIT_QUERY_CAP,
  REDACTED,
  TRUNCATED_MARKER,
} from '../src/audit/redaction.js';
import { auditApp, settle, type AuditApp, type LogLine } from './audit-helpers.js';

describe('excluded paths', () => {
  let h: AuditApp;
  before(async () => {
    h = await auditApp({
      routes: (app) => {
        // Kit's own /healthz and /livez answer for the probes; near misses and a deeper path are the host's.
        for (const url of ['/healthzz', '/livez/deep', '/livezz', '/docsx', '/openapi.jsonx'])
          app.get(url, async () => ({ url }));
      },
    });
  });
  after(() => h.app.close());

  async function audited(url: string): Promise<{ audited: boolean; header: unknown }> {
    h.logs.clear();
    const res = await h.app.inject(url);
    await settle();
    return { audited: h.logs.audit().length === 1, header: res.headers['x-correlation-id'] };
  }

  it('by default the health path, /livez, the OpenAPI document and the reference UI are excluded: no entry, no header', async () => {
    assert.deepEqual(
      [...h.app.kit.options.auditTrail!.excludePaths],
      ['/healthz', '/livez', '/openapi.json', '/docs'],
    );
    for (const url of [
      '/healthz',
      '/livez',
      '/openapi.json',
      '/docs',
      '/docs/',
      '/docs/static/index.html',
    ]) {
      assert.deepEqual(await audited(url), { audited: false, header: undefined }, url);
    }
  });

  it('matching is exact or a prefix ending at "/", case-insensitive, and ignores the query', async () => {
    for (const url of [
      '/HEALTHZ',
      '/Healthz?verbose=1',
      '/livez/deep',
      '/LIVEZ/',
      '/healthz#frag',
      '/docs?x=1',
    ]) {
      assert.deepEqual(await audited(url), { audited: false, header: undefined }, url);
    }
  });

  it('near misses are audited: /healthzz, /livezz, /docsx, /openapi.jsonx', async () => {
    for (const url of ['/healthzz', '/livezz', '/docsx', '/openapi.jsonx', '/hello']) {
      const r = await audited(url);
      assert.equal(r.audited, true, url);
      assert.equal(typeof r.header, 'string', url);
    }
  });

  it('a custom list replaces the default; a trailing "/" in the list means the same prefix', async () => {
    const custom = await auditApp({
      audit: (a) => {
        a.excludePaths = ['/Metrics/', '/internal'];
      },
      routes: (app) => {
        app.get('/metrics', async () => 'm');
        app.get('/internal/x', async () => 'i');
      },
    });
    try {
      for (const [url, expected] of [
        ['/metrics', false],
        ['/METRICS/x', false],
        ['/internal/x', false],
        ['/healthz', true],
        ['/metricsx', true],
      ] as const) {
        custom.logs.clear();
        const res = await custom.app.inject(url);
        await settle();
        assert.equal(custom.logs.audit().length === 1, expected, url);
        assert.equal(res.headers['x-correlation-id'] !== undefined, expected, url);
      }
    } finally {
      await custom.app.close();
    }
  });

  it('the default follows a custom health path', async () => {
    const custom = await auditApp({
      kit: (opt) => {
        opt.healthCheckPath = '/ready';
      },
    });
    try {
      assert.deepEqual(
        [...custom.app.kit.options.auditTrail!.excludePaths],
        ['/ready', '/livez', '/openapi.json', '/docs'],
      );
    } finally {
      await custom.app.close();
    }
  });

  it('404s are audited', async () => {
    assert.equal((await audited('/no/such/route')).audited, true);
  });

  it('a %40 path Kit routes again as "@" gives one entry, for the route it reached', async () => {
    const custom = await auditApp({
      routes: (app) => app.get('/orders@1/ping', async () => ({ pong: true })),
    });
    try {
      const res = await custom.app.inject({
        url: '/orders%401/ping',
        headers: { 'x-correlation-id': 'at-1' },
      });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['x-correlation-id'], 'at-1');
      await settle();
      const lines = custom.logs.audit();
      assert.equal(lines.length, 1);
      assert.equal(lines[0]?.Path, '/orders@1/ping');
      assert.equal(lines[0]?.StatusCode, 200);
    } finally {
      await custom.app.close();
    }
  });
});

describe('redaction', () => {
  let h: AuditApp;
  before(async () => {
    h = await auditApp({
      audit: (a) => {
        a.logFormat = AuditTrailFormat.Default;
      },
    });
  });
  after(() => h.app.close());

  async function entry(url: string, headers: Record<string, string> = {}): Promise<LogLine> {
    h.logs.clear();
    await h.app.inject({ url, headers });
    await settle();
    return h.logs.audit()[0] as LogLine;
  }

  it('the default headers Authorization, Proxy-Authorization, X-Api-Key and Cookie are written ***, names kept', async () => {
    const line = await entry('/hello', {
      Authorization: 'Bearer eyJhbGciOi.secret',
      'proxy-authorization': 'Basic c2VjcmV0',
      'X-API-KEY': 'k-123',
      cookie: 'session=s3cr3t',
      accept: 'application/json',
    });
    const headers = line.Headers as Record<string, string>;
    assert.equal(headers.authorization, REDACTED);
    assert.equal(headers['proxy-authorization'], REDACTED);
    assert.equal(headers['x-api-key'], REDACTED);
    assert.equal(headers.cookie, REDACTED);
    assert.equal(headers.accept, 'application/json');
    const text = JSON.stringify(line);
    for (const secret of ['eyJhbGciOi', 'c2VjcmV0', 'k-123', 's3cr3t'])
      assert.ok(!text.includes(secret), `${secret} leaked: ${text}`);
  });

  it('the default query parameters are written ***, case-insensitively, names and order kept', async () => {
    const line = await entry(
      '/hello?a=1&token=t0k&Access_Token=at&API_KEY=ak&apikey=k&Secret=s&password=p&b=2',
    );
    assert.equal(
      line.Query,
      '?a=1&token=***&Access_Token=***&API_KEY=***&apikey=***&Secret=***&password=***&b=2',
    );
    assert.ok((line.msg as string).includes('/hello?a=1&token=***&Access_Token=***'));
  });

  it('percent-encoded parameter names are redacted too; parameters without a value are kept', async () => {
    const line = await entry('/hello?%74oken=x1&pass%77ord=x2&token&token=&x=token');
    assert.equal(line.Query, '?%74oken=***&pass%77ord=***&token&token=***&x=token');
  });

  it('custom lists replace the defaults', async () => {
    const custom = await auditApp({
      audit: (a) => {
        a.redactHeaders = ['X-Tenant-Secret'];
        a.redactQueryParams = ['SSN'];
      },
    });
    try {
      await custom.app.inject({
        url: '/hello?ssn=123-45&token=visible',
        headers: { 'x-tenant-secret': 'abc', authorization: 'visible-now' },
      });
      await settle();
      const line = custom.logs.audit()[0] as LogLine;
      assert.equal(line.Query, '?ssn=***&token=visible');
      assert.deepEqual(
        {
          secret: (line.Headers as Record<string, string>)['x-tenant-secret'],
          auth: (line.Headers as Record<string, string>).authorization,
        },
        { secret: REDACTED, auth: 'visible-now' },
      );
    } finally {
      await custom.app.close();
    }
  });

  it(`a 100 KB query string is served, and logged capped at ${AUDIT_QUERY_CAP} characters with a marker`, async () => {
    const query = `a=${'x'.repeat(100 * 1024)}&token=late-secret`;
    h.logs.clear();
    const res = await h.app.inject(`/hello?${query}`);
    assert.equal(res.statusCode, 200);
    await settle();
    const line = h.logs.audit()[0] as LogLine;
    const logged = (line.Query as string).slice(1);
    assert.equal(logged.length, AUDIT_QUERY_CAP);
    assert.ok(logged.endsWith(TRUNCATED_MARKER));
    assert.ok(logged.startsWith('a=xxxx'));
    assert.ok(!JSON.stringify(line).includes('late-secret'));
    assert.ok(JSON.stringify(line).length < 3 * AUDIT_QUERY_CAP + 2000, 'the line stays small');
  });

  for (const size of [12 * 1024, 100 * 1024]) {
    it(`a ${size / 1024} KB path is served, and logged capped at ${AUDIT_PATH_CAP} characters with a marker saying it was cut`, async () => {
      const path = `/hello/${'p'.repeat(size)}`;
      h.logs.clear();
      const res = await h.app.inject(`${path}?a=1&token=t`);
      assert.equal(res.statusCode, 404, 'served (no such route)');
      await settle();
      const line = h.logs.audit()[0] as LogLine;
      const logged = line.Path as string;
      assert.equal(logged.length, AUDIT_PATH_CAP);
      assert.ok(logged.endsWith(TRUNCATED_MARKER), 'the entry says the path was cut');
      assert.ok(path.startsWith(logged.slice(0, -TRUNCATED_MARKER.length)));
      assert.equal(line.Query, '?a=1&token=***', 'the query is kept whole');
      assert.ok(
        (line.msg as string).includes(`${logged}?a=1&token=***`),
        'the message logs the same cut path',
      );
      const bytes = JSON.stringify(line).length;
      assert.ok(
        bytes < 3 * AUDIT_PATH_CAP,
        `the line stays small: ${bytes} characters for a ${size}-character path`,
      );
    });
  }

  it('a redacted value cut by the cap is still redacted', async () => {
    const line = await entry(
      `/hello?pad=${'p'.repeat(AUDIT_QUERY_CAP - 20)}&token=${'s'.repeat(500)}`,
    );
    const logged = (line.Query as string).slice(1);
    assert.ok(logged.length <= AUDIT_QUERY_CAP);
    assert.ok(!logged.includes('sss'), logged.slice(-60));
  });

  it(`header values are capped at ${AUDIT_HEADER_VALUE_CAP} characters with a marker`, async () => {
    const line = await entry('/hello', { 'x-long': 'v'.repeat(5000), 'x-short': 'ok' });
    const headers = line.Headers as Record<string, string>;
    assert.equal(headers['x-long']?.length, AUDIT_HEADER_VALUE_CAP);
    assert.ok(headers['x-long']?.endsWith(TRUNCATED_MARKER));
    assert.equal(headers['x-short'], 'ok');
  });

  it('includeQueryString = false leaves the query out of the path and the entry', async () => {
    const custom = await auditApp({
      audit: (a) => {
        a.includeQueryString = false;
      },
    });
    try {
      await custom.app.inject('/hello?a=1&b=2');
      await settle();
      const line = custom.logs.audit()[0] as LogLine;
      assert.equal(line.Query, '');
      assert.match(line.msg as string, /^HTTP GET \/hello responded 200 in/);
    } finally {
      await custom.app.close();
    }
  });
});

describe('the exclude matcher', () => {
  // The table of first characters answers most URLs; every answer must be the list's own.
  it('answers as the list does, whatever the character after the leading "/"', () => {
    const isExcluded = createExcludeMatcher(['/healthz', '/Docs/', '/été']);
    const cases: Array<[string, boolean]> = [
      ['/healthz', true],
      ['/HEALTHZ?x=1', true],
      ['/docs/a.js', true],
      ['/DOCS', true],
      ['/été', true],
      ['/été/x', true],
      ['/ÉTÉ', false],
      ['/hello', false],
      ['/api/healthz', false],
      ['/', false],
      ['', false],
      ['*', false],
      ['http://h/healthz', false],
      ['/healthzz', false],
      ['/d', false],
      ['/\u00e9', false],
    ];
    for (const [url, expected] of cases) assert.equal(isExcluded(url), expected, url);
  });
});
