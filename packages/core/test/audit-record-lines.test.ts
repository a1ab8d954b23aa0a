// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
// Kit's own records write the Default line from what they know without a scan (formats.ts,
// `RecordFacts`): their headers' JSON straight from the request's headers, through a cache of the
// header names' pieces, and their `StartedAt` and `Route` members, cached per millisecond and per
// route. Each case writes the same request through the direct path and through pino's own call
// (a twin logger with an identity `formatters.log`) and compares the bytes, with every character
// that needs escaping in every place a request can put it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino, { type LoggerOptions } from 'pino';
import { DEFAULT_REDACT_HEADERS, LoggingAuditSink } from '@kit/core';
import { HeaderNames, plainHeadersJsonPair } from '../src/audit/header-json.js';
import { AuditRecord, type RecordSettings } from '../src/audit/record.js';
import { Redactor } from '../src/audit/redaction.js';
import { ROUTE_PATTERN } from '../src/shared/route-pattern.js';
import { Chunks, ODD_TEXT } from './audit-helpers.js';

const fixedTime = () => ',"time":1700000000000';

const redactor = new Redactor(DEFAULT_REDACT_HEADERS, ['token']);
const settings: RecordSettings = {
  redactor,
  headerNames: new HeaderNames(redactor),
  includeQuery: true,
};

interface Request {
  url: string;
  headers: Record<string, string | string[] | undefined>;
  route?: Record<string | symbol, unknown>;
  user?: unknown;
}

/** The record hooks.ts would make for `request`, completed, started at a fixed time. */
function recordOf(r: Request, id: string): AuditRecord {
  const now = Date.now;
  Date.now = () => 1_795_000_000_123;
  try {
    const record = new AuditRecord(
      'GET',
      r.url,
      { ...r.headers },
      id,
      10,
      settings,
      r.route as never,
      r.user === undefined ? undefined : { user: r.user },
    );
    record.complete(200, 11.5, false);
    return record;
  } finally {
    Date.now = now;
  }
}

function both(
  requests: readonly Request[],
  options: LoggerOptions = {},
): { direct: Chunks; generic: Chunks } {
  const direct = new Chunks();
  const generic = new Chunks();
  const fast = new LoggingAuditSink(pino({ timestamp: fixedTime, ...options }, direct));
  const slow = new LoggingAuditSink(
    pino(
      { timestamp: fixedTime, ...options, formatters: { log: (o: Record<string, unknown>) => o } },
      generic,
    ),
  );
  // Two records per request: reading a record's headers on pino's path releases its raw headers.
  const records = requests.map((r, i) => recordOf(r, `id-${i}`));
  fast.writeMany(records, 0, records.length);
  for (const [i, r] of requests.entries()) slow.write(recordOf(r, `id-${i}`));
  return { direct, generic };
}

describe("the Default line of Kit's own records", () => {
  const base: Request = {
    url: '/p?a=1',
    headers: { host: 'h', accept: '*/*' },
    route: { url: '/p' },
  };
  const requests: Request[] = [
    base,
    { ...base, route: undefined },
    { ...base, route: { url: undefined } },
  ];
  for (const c of ODD_TEXT) {
    requests.push(
      { ...base, url: `/a${c}b?x=${c}` },
      { ...base, headers: { host: 'h', [`x-n${c}`]: 'v', authorization: 'Bearer s' } },
      { ...base, headers: { host: `h${c}`, cookie: 'a=b' } },
      { ...base, headers: { host: 'h', 'user-agent': `${'Mozilla/5.0 '.repeat(4)}${c}` } },
      { ...base, route: { url: `/r${c}` } },
      { ...base, route: { url: '/ignored', [ROUTE_PATTERN]: `/api/orders@2/${c}:id` } },
      { ...base, user: { sub: `u${c}` } },
    );
  }
  requests.push(
    { ...base, headers: { host: 'h', 'set-cookie': ['a=1', 'b=2'], 'X-Api-Key': 'k' } },
    { ...base, headers: { host: 'h', 'x-long': 'v'.repeat(5000) } },
    { ...base, headers: { host: 'h', gone: undefined, Authorization: 'Bearer s' } },
    { ...base, headers: {} },
  );

  for (const options of [{}, { msgPrefix: '[audit] ' }] as LoggerOptions[]) {
    it(`are byte for byte pino's own${options.msgPrefix === undefined ? '' : ', with a message prefix'}`, () => {
      const { direct, generic } = both(requests, options);
      assert.equal(direct.writes.length, 1, 'one write for the batch');
      assert.equal(direct.text, generic.text);
      const lines = direct.text.split('\n').filter(Boolean);
      assert.equal(lines.length, requests.length);
      for (const line of lines) {
        JSON.parse(line);
        for (const secret of ['Bearer s', 'a=b', '"k"'])
          assert.ok(!line.includes(secret), `${secret} is redacted`);
      }
    });
  }

  it('write the same Route member for every request of a route, and none on a 404', () => {
    const route = { url: '/api/things/:id' };
    const { direct } = both([
      { ...base, route },
      { ...base, route },
      { ...base, route: { url: undefined } },
    ]);
    const routes = direct.text
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { Route?: string }).Route);
    assert.deepEqual(routes, ['/api/things/:id', '/api/things/:id', undefined]);
  });

  it('take the route from a frozen config as well (nothing is cached on it)', () => {
    const route = Object.freeze({ url: '/frozen/"q"' });
    const { direct, generic } = both([
      { ...base, route },
      { ...base, route },
    ]);
    assert.equal(direct.text, generic.text);
    assert.ok(direct.text.includes('"Route":"/frozen/\\"q\\""'));
  });
});

describe('HeaderNames', () => {
  it('keeps at most 256 names, none longer than 64 characters, and writes every name right past that', () => {
    const names = new HeaderNames(redactor);
    const headers: Record<string, string> = {};
    for (let i = 0; i < 300; i++) headers[`x-h${i}`] = `v${i}`;
    headers[`x-${'n'.repeat(100)}`] = 'long';
    headers.authorization = 'secret';
    const pair = plainHeadersJsonPair(headers, names);
    const expected = JSON.stringify({ ...headers, authorization: '***' });
    assert.deepEqual(pair, [expected, JSON.stringify(expected).slice(1, -1)]);
    assert.deepEqual(plainHeadersJsonPair(headers, names), pair, 'the same from the cache');
  });

  it('redacts by the rules it was made with, whatever the case of the name', () => {
    const names = new HeaderNames(new Redactor(['X-Secret'], []));
    assert.deepEqual(
      plainHeadersJsonPair({ 'x-secret': 'a', 'X-SECRET': 'b', authorization: 'c' }, names)?.[0],
      '{"x-secret":"***","X-SECRET":"***","authorization":"c"}',
    );
    assert.deepEqual(
      plainHeadersJsonPair({ authorization: 'c' })?.[0],
      '{"authorization":"c"}',
      'without rules nothing is redacted',
    );
  });

  it('leaves a name that needs escaping to the general path', () => {
    assert.equal(plainHeadersJsonPair({ 'x-"q"': 'v' }, new HeaderNames(redactor)), undefined);
    assert.deepEqual(plainHeadersJsonPair({}, new HeaderNames(redactor)), ['{}', '{}']);
  });
});
