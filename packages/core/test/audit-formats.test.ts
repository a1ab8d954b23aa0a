// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AuditTrailFormat, type AuditLogLevel } from '@kit/core';
import { auditApp, LEVEL, settle, type AuditApp, type LogLine } from './audit-helpers.js';

// The headers light-my-request sends, in order, with the id we forward.
const HEADERS = '{"x-correlation-id":"fmt-1","user-agent":"lightMyRequest","host":"localhost:80"}';

const CASES = [
  { url: '/hello?a=1', status: 200, level: LEVEL.info, target: '/hello?a=1', route: '/hello' },
  { url: '/nowhere', status: 404, level: LEVEL.warn, target: '/nowhere', route: undefined },
  { url: '/boom', status: 500, level: LEVEL.error, target: '/boom', route: '/boom' },
] as const;

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The members a text format writes beside its message: the pino line's own keys, then these. */
function contextOf(line: LogLine): Record<string, unknown> {
  const { level: _level, time: _time, pid: _pid, hostname: _hostname, msg: _msg, ...rest } = line;
  for (const key of [
    'Method',
    'Path',
    'Query',
    'StatusCode',
    'ElapsedMs',
    'CorrelationId',
    'Headers',
    'Aborted',
  ])
    delete rest[key];
  return rest;
}

/** The context members: when the request started (a recent ISO time), and the route when one matched. */
function assertContext(line: LogLine, route: string | undefined): void {
  const context = contextOf(line);
  assert.deepEqual(
    Object.keys(context),
    route === undefined ? ['StartedAt'] : ['StartedAt', 'Route'],
    'the context fields, in order, and nothing else',
  );
  assert.match(context.StartedAt as string, ISO);
  assert.ok(
    Math.abs(Date.parse(context.StartedAt as string) - Date.now()) < 5000,
    'the request start',
  );
  assert.equal(context.Route, route);
}

/** The one audit line of a request to `url`, with its duration as written. */
async function lineFor(h: AuditApp, url: string): Promise<{ line: LogLine; n: string }> {
  h.logs.clear();
  await h.app.inject({ url, headers: { 'x-correlation-id': 'fmt-1' } });
  await settle();
  const lines = h.logs.audit();
  assert.equal(lines.length, 1, `one audit line for ${url}: ${JSON.stringify(h.logs.lines)}`);
  const line = lines[0] as LogLine;
  const n = /(?:in |\s)(\d+(?:\.\d+)?)ms/.exec(line.msg ?? '')?.[1] ?? '';
  return { line, n };
}

describe('audit formats: exact text and pino level for 200, 404 and 500', () => {
  const apps: Partial<Record<AuditTrailFormat, AuditApp>> = {};
  before(async () => {
    for (const format of Object.values(AuditTrailFormat))
      apps[format] = await auditApp({
        audit: (a) => {
          a.logFormat = format;
        },
      });
  });
  after(async () => {
    for (const h of Object.values(apps)) await h.app.close();
  });

  for (const c of CASES) {
    it(`Default, ${c.status}: the message and the structured fields`, async () => {
      const { line, n } = await lineFor(apps.Default as AuditApp, c.url);
      assert.ok(Number(n) >= 0 && n !== '', `a duration in ${line.msg}`);
      assert.equal(line.level, c.level);
      assert.equal(
        line.msg,
        `HTTP GET ${c.target} responded ${c.status} in ${n}ms [CorrelationId: fmt-1] Headers=${HEADERS}`,
      );
      const q = c.target.indexOf('?');
      assert.equal(line.Method, 'GET');
      assert.equal(line.Path, q === -1 ? c.target : c.target.slice(0, q));
      assert.equal(line.Query, q === -1 ? '' : c.target.slice(q));
      assert.equal(line.StatusCode, c.status);
      assert.equal(line.ElapsedMs, Number(n));
      assert.equal(line.CorrelationId, 'fmt-1');
      assert.deepEqual(line.Headers, JSON.parse(HEADERS));
      assert.equal(
        `${line.Path as string}${line.Query as string}`,
        c.target,
        '{Path}{Query} rebuilds the target',
      );
      assert.equal(line.Aborted, undefined);
      const keys = Object.keys(line);
      assert.deepEqual(
        keys.slice(keys.indexOf('Method'), keys.indexOf('Headers') + 1),
        ['Method', 'Path', 'Query', 'StatusCode', 'ElapsedMs', 'CorrelationId', 'Headers'],
        "the spec's fields first",
      );
      assertContext(line, c.route);
    });

    it(`DotnetLogger, ${c.status}`, async () => {
      const { line, n } = await lineFor(apps.DotnetLogger as AuditApp, c.url);
      assert.equal(line.level, c.level);
      assert.equal(line.msg, `GET ${c.target} => ${c.status} in ${n}ms [fmt-1] Headers=${HEADERS}`);
      assert.equal(
        line.Method,
        undefined,
        "a single message template: the spec's fields are in it, not beside it",
      );
      assertContext(line, c.route);
    });

    it(`JsonStyle, ${c.status}`, async () => {
      const { line } = await lineFor(apps.JsonStyle as AuditApp, c.url);
      assert.equal(line.level, c.level);
      const message = JSON.parse(line.msg as string) as Record<string, unknown>;
      assert.deepEqual(
        Object.keys(message).slice(0, 3),
        ['method', 'path', 'statusCode'],
        'first keys',
      );
      const q = c.target.indexOf('?');
      assert.deepEqual(
        { ...message, durationMs: 0, timestamp: '' },
        {
          method: 'GET',
          path: q === -1 ? c.target : c.target.slice(0, q),
          statusCode: c.status,
          query: q === -1 ? null : c.target.slice(q + 1),
          durationMs: 0,
          correlationId: 'fmt-1',
          timestamp: '',
          headers: JSON.parse(HEADERS),
          ...(c.route === undefined ? {} : { route: c.route }),
        },
      );
      assert.deepEqual(Object.keys(message), [
        'method',
        'path',
        'statusCode',
        'query',
        'durationMs',
        'correlationId',
        'timestamp',
        'headers',
        ...(c.route === undefined ? [] : ['route']),
      ]);
      assert.equal(typeof message.durationMs, 'number');
      assert.match(message.timestamp as string, ISO);
      assert.ok(
        Math.abs(Date.parse(message.timestamp as string) - Date.now()) < 5000,
        'the request start',
      );
      assert.deepEqual(
        contextOf(line),
        {},
        'a single message, no structured fields: its keys carry the context',
      );
    });

    it(`Compact, ${c.status}`, async () => {
      const { line, n } = await lineFor(apps.Compact as AuditApp, c.url);
      assert.equal(line.level, c.level);
      assert.equal(line.msg, `GET ${c.target} ${c.status} ${n}ms`);
      assertContext(line, c.route);
    });
  }

  it('Default is the default format', async () => {
    const h = await auditApp();
    try {
      const { line } = await lineFor(h, '/hello');
      assert.match(line.msg as string, /^HTTP GET \/hello responded 200 in /);
    } finally {
      await h.app.close();
    }
  });

  it('ElapsedMs is fractional milliseconds from the first hook to the end of the response', async () => {
    const { line } = await lineFor(apps.Default as AuditApp, '/slow?ms=120');
    const ms = line.ElapsedMs as number;
    assert.ok(ms >= 119 && ms < 2000, `${ms} ms for a 120 ms handler`);
    assert.equal(Math.round(ms * 1000) / 1000, ms, 'at most three decimals');
  });
});

describe('audit levels', () => {
  it('successLogLevel, warningLogLevel and errorLogLevel choose the level by status (< 400, 4xx, >= 500)', async () => {
    const levels: Record<string, AuditLogLevel> = {
      success: 'debug',
      warning: 'error',
      error: 'fatal',
    };
    const h = await auditApp({
      audit: (a) => {
        a.successLogLevel = 'debug';
        a.warningLogLevel = 'error';
        a.errorLogLevel = 'fatal';
      },
      routes: (app) => {
        app.get('/redirect', async (_req, reply) => reply.redirect('/hello'));
        app.get('/399', async (_req, reply) => reply.code(399).send());
        app.get('/400', async (_req, reply) => reply.code(400).send());
        app.get('/499', async (_req, reply) => reply.code(499).send());
        app.get('/503', async (_req, reply) => reply.code(503).send());
      },
    });
    try {
      const expected: Array<[string, number, AuditLogLevel]> = [
        ['/hello', 200, levels.success as AuditLogLevel],
        ['/redirect', 302, levels.success as AuditLogLevel],
        ['/399', 399, levels.success as AuditLogLevel],
        ['/400', 400, levels.warning as AuditLogLevel],
        ['/teapot', 418, levels.warning as AuditLogLevel],
        ['/499', 499, levels.warning as AuditLogLevel],
        ['/boom', 500, levels.error as AuditLogLevel],
        ['/503', 503, levels.error as AuditLogLevel],
      ];
      for (const [url, status, level] of expected) {
        const { line } = await lineFor(h, url);
        assert.equal(line.StatusCode, status, url);
        assert.equal(line.level, LEVEL[level], `${url} (${status}) at ${level}`);
      }
    } finally {
      await h.app.close();
    }
  });

  it('entries below the logger level are not written', async () => {
    const h = await auditApp();
    try {
      h.app.log.level = 'warn';
      await h.app.inject('/hello');
      await h.app.inject('/nowhere');
      await settle();
      const audit = h.logs.audit();
      assert.equal(audit.length, 1, 'only the 404');
      assert.equal(audit[0]?.StatusCode, 404);
    } finally {
      await h.app.close();
    }
  });
});

describe('text formats escape control characters', () => {
  it('CR, LF, ESC, DEL and U+2028 in the path and query cannot break or colour a line', async () => {
    for (const format of [
      AuditTrailFormat.Default,
      AuditTrailFormat.DotnetLogger,
      AuditTrailFormat.Compact,
      AuditTrailFormat.JsonStyle,
    ]) {
      // HTTP parsers refuse raw control characters and inject percent-encodes them; a host that
      // decodes URLs in rewriteUrl hands them to every hook, the audit trail's included.
      const h = await auditApp({
        audit: (a) => {
          a.logFormat = format;
        },
        fastify: { rewriteUrl: (req) => decodeURIComponent(req.url ?? '/') },
      });
      try {
        h.logs.clear();
        await h.app.inject({
          url: `/evil${encodeURIComponent('\r\nHTTP GET /forged responded 200\u001b[31m')}?x=${encodeURIComponent('\u007f\u2028')}`,
        });
        await settle();
        const msg = h.logs.audit()[0]?.msg as string;
        assert.ok(msg, format);
        // eslint-disable-next-line no-control-regex
        assert.doesNotMatch(msg, /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/, `${format}: ${msg}`);
        if (format === AuditTrailFormat.JsonStyle) {
          assert.equal(
            (JSON.parse(msg) as { path: string }).path,
            '/evil\r\nHTTP GET /forged responded 200\u001b[31m',
            'still valid JSON, same text',
          );
        } else {
          assert.ok(
            msg.includes('/evil\\r\\nHTTP GET /forged responded 200\\u001b[31m?x=\\u007f\\u2028'),
            `${format}: ${msg}`,
          );
        }
      } finally {
        await h.app.close();
      }
    }
  });
});
