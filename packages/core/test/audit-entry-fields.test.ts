// @test-lines: once - the entry's fields, built in memory
// Fields of an entry computed by hand-written fast paths, against the slow, obvious way.
//
// The entry's `timestamp` (src/audit/record.ts `isoOf`): the second's prefix is formatted once a
// second and the milliseconds come from a table, so the result must be `toISOString()` exactly,
// across second, day and year boundaries, in any order, and outside the four-digit years.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultLineParts, kHeadersJsonPair } from '../src/audit/formats.js';
import { AuditRecord, isoOf } from '../src/audit/record.js';
import { HeaderNames } from '../src/audit/header-json.js';
import { DEFAULT_REDACT_HEADERS } from '../src/audit/options.js';
import { Redactor } from '../src/audit/redaction.js';

const expected = (ms: number): string => new Date(ms).toISOString();

describe('audit entry timestamps', () => {
  it('equal toISOString() across second, day and year boundaries', () => {
    const edges = [
      0,
      1,
      999,
      1000,
      1001,
      -1,
      -999,
      -1000,
      -1001,
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(2027, 0, 1),
      951_782_400_000 /* 2000-02-29 */,
    ];
    for (const edge of edges) {
      for (let d = -1500; d <= 1500; d += 7) {
        const ms = edge + d;
        assert.equal(isoOf(ms), expected(ms), `${ms}`);
      }
    }
  });

  it('equal toISOString() for repeated, decreasing and random instants', () => {
    const now = Date.now();
    for (const ms of [now, now, now + 1, now, now - 1, now - 1000, now + 86_400_000])
      assert.equal(isoOf(ms), expected(ms));
    let seed = 42;
    for (let i = 0; i < 50_000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      const ms = Math.floor((seed / 2 ** 31) * 4e12) - 1e12; // 1938 to 2096
      assert.equal(isoOf(ms), expected(ms), `${ms}`);
    }
  });

  it('fall back to toISOString() outside the years 0000-9999 and for fractional instants', () => {
    for (const ms of [
      253_402_300_799_999, 253_402_300_800_000, -62_167_219_200_000, -62_167_219_200_001, 8.64e15,
      -8.64e15, 1_700_000_000_000.5,
    ]) {
      assert.equal(isoOf(ms), expected(ms), `${ms}`);
    }
  });
});

// The redactor's copy loop skips lower-casing names that are lower case already (Node's own
// request headers); names from elsewhere may not be.
describe('header redaction by name', () => {
  it('redacts listed names whatever their case, and keeps the others as given', () => {
    const redactor = new Redactor(['Authorization', 'x-api-key'], []);
    const out = redactor.headers(
      {
        Authorization: 'Bearer a',
        'X-API-KEY': 'k',
        authorization: 'Bearer b',
        'User-Agent': 'ua',
        host: 'h',
      },
      false,
    );
    assert.deepEqual(out, {
      Authorization: '***',
      'X-API-KEY': '***',
      authorization: '***',
      'User-Agent': 'ua',
      host: 'h',
    });
  });
});

describe('the Default line of a record', () => {
  // A record writes its headers' JSON straight from the request's headers; a plain entry (the
  // record's own toEntry()) goes through the redacted headers object. The text must be the same.
  const redactor = new Redactor(DEFAULT_REDACT_HEADERS, ['token']);
  // `fast`: whether the record writes the pair itself or needs the headers object (an array, a
  // value over the cap, a character to escape), so the fast path is seen taken, not only correct.
  const cases: Array<[fast: boolean, headers: Record<string, string | string[] | undefined>]> = [
    [true, { host: 'localhost:3000' }],
    [
      true,
      {
        host: 'h',
        authorization: 'Bearer secret',
        cookie: 'a=b',
        'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)',
      },
    ],
    [true, { host: 'h', 'X-Api-Key': 'k-1', Accept: 'text/html' }],
    [false, { host: 'h', 'set-cookie': ['a=1', 'b=2'], authorization: 'x' }],
    [false, { host: 'h', 'x-long': 'v'.repeat(5000) }],
    [false, { host: 'h', 'x-quote': 'say "hi" \\ back', authorization: 'x' }],
    [false, { host: 'h', 'x-ctl': 'a\u0001b\u2028c', 'x-latin': 'caf\u00e9' }],
    [true, { host: 'h', gone: undefined, 'x-after': 'kept' }],
    [true, {}],
  ];
  for (const [i, [fast, headers]] of cases.entries()) {
    it(`is the same whether built from the request's headers or from the entry (case ${i})`, () => {
      const record = new AuditRecord(
        'GET',
        '/p?token=t&a=1',
        headers,
        `id-${i}`,
        1,
        { redactor, headerNames: new HeaderNames(redactor), includeQuery: true },
        undefined,
        undefined,
      );
      record.complete(200, 3.25, false);
      assert.equal(
        record[kHeadersJsonPair]() !== undefined,
        fast,
        'the record writes the headers pair itself',
      );
      const direct = defaultLineParts(record);
      const plain = defaultLineParts(record.toEntry());
      assert.deepEqual(direct, plain);
      for (const secret of ['Bearer secret', 'a=b', 'k-1'])
        assert.ok(!direct.members.includes(secret) && !direct.messageJson.includes(secret), secret);
      JSON.parse(`{"x":1${direct.members},"msg":${direct.messageJson}}`);
    });
  }
});
