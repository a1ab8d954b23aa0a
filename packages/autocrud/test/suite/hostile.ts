// Injection and hostile input: quotes, semicolons, comments, Unicode, huge numbers, 10,000 filter
// keys, nested brackets, prototype-pollution keys. Every request gets a 400 or a correct answer,
// never a database error, and no row changes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import {
  assertBadParameter,
  call,
  crudApp,
  names,
  suiteTables,
  type EngineUnderTest,
} from './fixtures.ts';

const ATTACKS = [
  "x' OR '1'='1",
  "apple'; DROP TABLE products; --",
  'apple" OR "1"="1',
  'apple/* comment */',
  "apple' --",
  '1; DELETE FROM products',
  "') UNION SELECT name FROM sqlite_master --",
  '$1',
  '\\',
  '%',
  '日本語🍎',
  'ｓｅｌｅｃｔ',
  'e\u0301',
  '\u202Eelppa',
];

function accepted(res: LightMyRequestResponse): void {
  assert.ok(res.statusCode === 200 || res.statusCode === 400, `${res.statusCode} ${res.body}`);
  if (res.statusCode === 400)
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
}

export function hostileSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud hostile input on ${engine.name}`, () => {
    let app: FastifyInstance;
    let snapshot: string;
    let appleId = 0;
    const table = async () =>
      JSON.stringify(
        await engine.sql(
          'select id, name, price, stock, tag, is_deleted from products order by id',
        ),
      );

    before(async () => {
      for (const statement of suiteTables(engine.flavour)) await engine.sql(statement);
      app = await crudApp(engine);
      for (const product of [
        { name: 'apple', price: 1 },
        { name: "o'reilly", price: 2, tag: 'quote' },
        { name: '日本語🍎', price: 3, tag: 'unicode' },
      ]) {
        const res = await call(app, { method: 'POST', url: '/api/product', payload: product });
        assert.equal(res.statusCode, 201, res.body);
        if (product.name === 'apple') appleId = res.json<{ id: number }>().id;
      }
      snapshot = await table();
    });
    after(async () => {
      await app?.close();
    });

    it('quotes, semicolons, comments and Unicode in filter values are values: matched literally, nothing else happens', async () => {
      for (const attack of ATTACKS) {
        for (const op of ['', '[eq]', '[ne]', '[like]', '[in]', '[nin]', '[gt]']) {
          const res = await call(
            app,
            `/api/product?filter[name]${op}=${encodeURIComponent(attack)}`,
          );
          accepted(res);
        }
        const exact = names(
          await call(app, `/api/product?filter[name]=${encodeURIComponent(attack)}`),
        );
        assert.deepEqual(exact, attack === '日本語🍎' ? ['日本語🍎'] : []);
      }
      assert.deepEqual(
        names(await call(app, `/api/product?filter[name]=${encodeURIComponent("o'reilly")}`)),
        ["o'reilly"],
      );
      assert.deepEqual(
        names(await call(app, `/api/product?filter[name][like]=${encodeURIComponent("'")}`)),
        ["o'reilly"],
      );
      assert.deepEqual(
        names(await call(app, `/api/product?filter[name][like]=${encodeURIComponent('🍎')}`)),
        ['日本語🍎'],
      );
      assert.equal(await table(), snapshot);
    });

    it('the same in bodies: stored and read back byte for byte, then put back', async () => {
      for (const attack of ATTACKS.filter((a) => a !== '日本語🍎')) {
        const res = await call(app, {
          method: 'PUT',
          url: `/api/product/${appleId}`,
          payload: { name: attack, price: 1 },
        });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json<{ name: string }>().name, attack);
        assert.equal(
          (await call(app, `/api/product/${appleId}`)).json<{ name: string }>().name,
          attack,
        );
      }
      // The attack equal to an existing name is a unique violation, which changes nothing.
      assert.equal(
        (
          await call(app, {
            method: 'PUT',
            url: `/api/product/${appleId}`,
            payload: { name: '日本語🍎', price: 1 },
          })
        ).statusCode,
        409,
      );
      assert.equal(
        (
          await call(app, {
            method: 'PUT',
            url: `/api/product/${appleId}`,
            payload: { name: 'apple', price: 1 },
          })
        ).statusCode,
        200,
      );
      assert.equal(await table(), snapshot);
    });

    it('NUL characters and lone surrogates are refused wherever text goes in (no engine stores them faithfully)', async () => {
      for (const payload of [
        '{"name": "a\\u0000b", "price": 1}',
        '{"name": "a\\ud800b", "price": 1}',
        '{"name": "\\udfff", "price": 1}',
      ]) {
        const res = await call(app, {
          method: 'POST',
          url: '/api/product',
          headers: { 'content-type': 'application/json' },
          payload,
        });
        assert.equal(res.statusCode, 400, `${payload}: ${res.body}`);
        assert.equal(res.json<{ errors: Array<{ name: string }> }>().errors[0]?.name, 'name');
      }
      assert.equal((await call(app, '/api/product?filter[name]=a%00b')).statusCode, 400);
      assert.equal((await call(app, '/api/product?filter[name][like]=%00')).statusCode, 400);
      assert.equal((await call(app, '/api/product?filter[name][in]=a,b%00c')).statusCode, 400);
      // Not UTF-8 at all (an encoded surrogate): decoded or refused, never stored.
      accepted(await call(app, '/api/product?filter[name]=a%ED%A0%80b'));
      assert.equal(await table(), snapshot);
    });

    it('huge and odd numbers: 400, or a correct answer', async () => {
      for (const value of [
        '1e309',
        '-1e309',
        'Infinity',
        'NaN',
        '99999999999999999999999',
        '0x10',
        '1_000',
        ' 1',
        '+1',
        '',
      ]) {
        accepted(await call(app, `/api/product?page=${encodeURIComponent(value)}`));
        accepted(await call(app, `/api/product?pageSize=${encodeURIComponent(value)}`));
        accepted(await call(app, `/api/product?filter[price][gt]=${encodeURIComponent(value)}`));
        accepted(await call(app, `/api/product?filter[id]=${encodeURIComponent(value)}`));
        const byKey = await call(app, `/api/product/${encodeURIComponent(value)}`);
        assert.ok(
          [200, 400, 404].includes(byKey.statusCode),
          `${value}: ${byKey.statusCode} ${byKey.body}`,
        );
      }
      assert.equal((await call(app, '/api/product?page=1e300')).statusCode, 400);
      for (const query of [
        'filter[price][gt]=1e309',
        'filter[price]=-Infinity',
        'page=1e309',
        'pageSize=Infinity',
      ]) {
        assertBadParameter(
          await call(app, `/api/product?${query}`),
          'querystring',
          query.split('=')[0] as string,
          /finite number|integer|decimal number/,
        );
      }
      const big = await call(app, {
        method: 'POST',
        url: '/api/product',
        headers: { 'content-type': 'application/json' },
        payload: '{"name": "big", "price": 1e400}',
      });
      assert.equal(big.statusCode, 400, big.body);
      const wide = await call(app, {
        method: 'POST',
        url: '/api/product',
        payload: { name: 'wide', price: 1, stock: 2 ** 40 },
      });
      assert.ok(wide.statusCode === 400 || wide.statusCode === 201, wide.body);
      if (wide.statusCode === 201) {
        assert.equal(
          wide.json<{ stock: number }>().stock,
          2 ** 40,
          'stored exactly where the column is wide enough',
        );
        await engine.sql(`delete from products where name = 'wide'`);
      }
      assert.equal(await table(), snapshot);
    });

    it('10,000 filter keys, 10,000 repeats of one key, nested and broken brackets: 400, quickly', async () => {
      const many = Array.from({ length: 10_000 }, (_, i) => `filter[f${i}]=1`).join('&');
      const res = await call(app, `/api/product?${many}`);
      assert.equal(res.statusCode, 400);
      const repeated = Array.from({ length: 10_000 }, () => 'filter[name]=apple').join('&');
      assert.equal((await call(app, `/api/product?${repeated}`)).statusCode, 400);
      for (const key of [
        'filter[name][eq][x]',
        'filter[[name]]',
        'filter[name',
        'filter]name[',
        'filter[name][]',
        'filter[]',
        'filter',
        'filter[name]]',
        'filter.name',
        'filter%5Bname%5D%5Blike%5D%5B0%5D',
      ]) {
        const r = await call(app, `/api/product?${key}=apple`);
        assert.equal(r.statusCode, 400, `${key}: ${r.body}`);
        assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
      }
      assert.equal(await table(), snapshot);
    });

    it('prototype-pollution keys in query strings and bodies: 400 or ignored, never applied', async () => {
      for (const query of [
        '__proto__=1',
        '__proto__[x]=1',
        'constructor=1',
        'constructor[prototype][x]=1',
        'filter[__proto__]=1',
        'filter[constructor][eq]=1',
        'filter[name][__proto__]=1',
        'filter[toString]=1',
        'sort=__proto__',
        'sort=constructor',
      ]) {
        accepted(await call(app, `/api/product?${query}`));
      }
      for (const payload of [
        '{"__proto__": {"polluted": true}, "name": "p", "price": 1}',
        '{"constructor": {"prototype": {"polluted": true}}, "name": "p", "price": 1}',
        '{"name": "p", "price": 1, "__proto__": null}',
        '{"name": {"__proto__": {"polluted": true}}, "price": 1}',
        '{"toString": "x", "name": "p", "price": 1}',
      ]) {
        const res = await call(app, {
          method: 'POST',
          url: '/api/product',
          headers: { 'content-type': 'application/json' },
          payload,
        });
        assert.equal(res.statusCode, 400, `${payload}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      }
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
      assert.equal(await table(), snapshot);
    });

    it('SQL in path parameters and sort keys: 400', async () => {
      for (const path of [
        '1;DROP TABLE products',
        "1' OR '1'='1",
        '1--',
        '1%00',
        '(select 1)',
        '1 or 1=1',
      ]) {
        const res = await call(app, `/api/product/${encodeURIComponent(path)}`);
        assert.equal(res.statusCode, 400, `${path}: ${res.body}`);
        const del = await call(app, {
          method: 'DELETE',
          url: `/api/product/${encodeURIComponent(path)}`,
        });
        assert.equal(del.statusCode, 400);
      }
      for (const sort of [
        'name;drop table products',
        'name desc',
        '(select 1)',
        'name,',
        ',name',
        '-',
        '--name',
        'name asc nulls first',
      ]) {
        assert.equal(
          (await call(app, `/api/product?sort=${encodeURIComponent(sort)}`)).statusCode,
          400,
          sort,
        );
      }
      assert.equal(await table(), snapshot);
    });
  });
}
