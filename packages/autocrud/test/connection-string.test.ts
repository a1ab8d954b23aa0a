// @test-lines: once - parses connection strings
// Connection strings as logs and errors show them: the password gone whatever the URL's shape
// (an unencoded @, / or ? in it, IPv6 hosts, several hosts, keyword/value strings), and nothing
// of it in the error a malformed string gets.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { addKit } from '@kit/core';
import { addKitAutoCrud, redactConnectionString } from '@kit/autocrud';

const SHAPES: Array<[string, string]> = [
  ['postgres://kit:s3cret@127.0.0.1/shop', 'postgres://kit:***@127.0.0.1/shop'],
  ['postgres://kit:p@ss@127.0.0.1/shop', 'postgres://kit:***@127.0.0.1/shop'],
  ['postgres://kit:p@ss@w@rd@db:5432/shop', 'postgres://kit:***@db:5432/shop'],
  ['postgres://kit:p%40ss@db/shop', 'postgres://kit:***@db/shop'],
  ['postgres://kit:se:cr:et@db/shop', 'postgres://kit:***@db/shop'],
  ['postgres://kit:pa/ss@db/shop', 'postgres://kit:***@db/shop'],
  ['postgres://kit:pa?ss@db/shop', 'postgres://kit:***@db/shop'],
  ['postgres://kit:pa#ss@db/shop', 'postgres://kit:***@db/shop'],
  ['postgres://kit:@@@@db/shop', 'postgres://kit:***@db/shop'],
  ['postgres://:s3cret@db/shop', 'postgres://:***@db/shop'],
  ['postgres://kit:@db/shop', 'postgres://kit:***@db/shop'],
  ['postgres://kit@db/shop', 'postgres://kit@db/shop'],
  ['postgres://db/shop', 'postgres://db/shop'],
  ['postgres://db:5432/shop', 'postgres://db:5432/shop'],
  ['postgresql://kit:s3cret@[::1]:5432/shop', 'postgresql://kit:***@[::1]:5432/shop'],
  ['postgresql://kit:s3cret@[2001:db8::1]/shop', 'postgresql://kit:***@[2001:db8::1]/shop'],
  [
    'postgres://kit:s3cret@db1:5432,db2:5433/shop?target_session_attrs=read-write',
    'postgres://kit:***@db1:5432,db2:5433/shop?target_session_attrs=read-write',
  ],
  ['POSTGRES://KIT:S3CRET@DB/SHOP', 'POSTGRES://KIT:***@DB/SHOP'],
  ['  postgres://kit:s3cret@db/shop  ', '  postgres://kit:***@db/shop  '],
  [
    'postgres://db/shop?password=s3cret&application_name=a',
    'postgres://db/shop?password=***&application_name=a',
  ],
  ['postgres://db/shop?user=kit&PassWord=s3cret', 'postgres://db/shop?user=kit&PassWord=***'],
  [
    'postgres://kit:s3cret@db:5432/shop?sslpassword=x&application_name=a',
    'postgres://kit:***@db:5432/shop?sslpassword=***&application_name=a',
  ],
  [
    'postgres:///shop?host=/var/run/postgresql&password=s3cret',
    'postgres:///shop?host=/var/run/postgresql&password=***',
  ],
  ["host=db user=kit password='s3 cr3t' dbname=shop", 'host=db user=kit password=*** dbname=shop'],
  ['host=db password = s3cret dbname=shop', 'host=db password = *** dbname=shop'],
  ['password=s3cret', 'password=***'],
];

describe('redactConnectionString', () => {
  it('hides the password of every URL shape, and password-like parameters', () => {
    for (const [given, expected] of SHAPES)
      assert.equal(redactConnectionString(given), expected, given);
  });

  it('hides too much rather than too little when an @ stands in the query', () => {
    for (const given of [
      'postgres://kit:s3cret@db/shop?application_name=a@b',
      'postgres://kit:s3c@ret@db/shop?application_name=a@b',
    ]) {
      const shown = redactConnectionString(given);
      assert.ok(!/s3c|ret/.test(shown), shown);
    }
    assert.equal(
      redactConnectionString('postgres://kit@db/shop?application_name=a@b').includes('kit'),
      true,
    );
  });

  it('a malformed connection string is refused with an error that carries no part of its password', () => {
    for (const given of [
      'postgres://kit:pa?ss@db:notaport/shop',
      'postgres://kit:p@ss@',
      'postgres://kit:p@ss@[::1/shop',
      'mysql://kit:s3cret@db/shop',
      "host=db password='s3 cr3t'",
    ]) {
      const app = Fastify();
      addKit(app, []);
      assert.throws(
        () => addKitAutoCrud(app, given),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'KIT_ERR_INVALID_OPTION', err.message);
          assert.ok(!/pa\?ss|p@ss|s3cret|s3 cr3t|ss@/.test(err.message), err.message);
          return true;
        },
      );
    }
  });
});
