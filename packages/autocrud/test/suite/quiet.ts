// Client errors are the client's: a battery of requests that must each answer 4xx (malformed
// headers, bodies, query strings and ids; conflicts, preconditions, unknown rows) runs with every
// log line captured, and none of them may be at error level or above. A 4xx logged as an error
// pages someone for a client's mistake, and hides the real errors among them.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { crudApp, suiteTables, type EngineUnderTest } from './fixtures.ts';

interface Line {
  level: number;
  msg?: string;
  err?: { message?: string };
}

const JSON_TYPE = { 'content-type': 'application/json' };

/** Requests that must each be answered with a 4xx; `{id}`/`{doc}`/`{ledger}`/`{tag}` are existing rows. */
function battery(): InjectOptions[] {
  const writes = (
    url: string,
    headers: Record<string, string>,
    payload?: unknown,
  ): InjectOptions[] => [
    { method: 'PUT', url, headers, payload: payload ?? { title: 'x' } },
    { method: 'DELETE', url, headers },
  ];
  const badIfMatch = ['garbage', '"1', 'W/', '', ',', '"1" garbage', 'W/"1', '*x', '"\u00ff'];
  return [
    // Malformed headers.
    ...badIfMatch.flatMap((value) => writes('/api/documents/{doc}', { 'if-match': value })),
    ...badIfMatch.flatMap((value) =>
      writes('/api/ledgers/{ledger}', { 'if-match': value }, { label: 'x', amount: 1 }),
    ),
    ...writes('/api/ledgers/{ledger}', {}, { label: 'x', amount: 1 }),
    ...writes('/api/ledgers/{ledger}', { 'if-match': '"99"' }, { label: 'x', amount: 1 }),
    ...writes('/api/documents/{doc}', { 'if-match': 'W/"1"' }),
    {
      method: 'PUT',
      url: '/api/product/{id}',
      headers: { 'if-match': '"1"' },
      payload: { name: 'x', price: 1 },
    },
    {
      method: 'POST',
      url: '/api/documents',
      headers: { 'idempotency-key': '' },
      payload: { title: 'x' },
    },
    {
      method: 'POST',
      url: '/api/documents',
      headers: { 'idempotency-key': 'ä' },
      payload: { title: 'x' },
    },
    {
      method: 'POST',
      url: '/api/documents',
      headers: { 'idempotency-key': 'k'.repeat(300) },
      payload: { title: 'x' },
    },
    {
      method: 'POST',
      url: '/api/documents',
      headers: { 'idempotency-key': 'used-key' },
      payload: { title: 'other body' },
    },
    // Bodies.
    { method: 'POST', url: '/api/product', headers: JSON_TYPE, payload: '{"name": "fig",' },
    { method: 'POST', url: '/api/product', headers: JSON_TYPE, payload: '' },
    { method: 'POST', url: '/api/product', headers: JSON_TYPE, payload: 'null' },
    { method: 'POST', url: '/api/product', headers: JSON_TYPE, payload: '"text"' },
    { method: 'POST', url: '/api/product', headers: JSON_TYPE, payload: '[]' },
    {
      method: 'POST',
      url: '/api/product',
      headers: JSON_TYPE,
      payload: '{"__proto__": {"x": 1}, "name": "p", "price": 1}',
    },
    {
      method: 'POST',
      url: '/api/product',
      headers: JSON_TYPE,
      payload: '{"name": "big", "price": 1, "stock": 9007199254740993}',
    },
    {
      method: 'POST',
      url: '/api/product',
      headers: JSON_TYPE,
      payload: '{"name": "inf", "price": 1e400}',
    },
    {
      method: 'POST',
      url: '/api/product',
      headers: { 'content-type': 'text/plain' },
      payload: '{"name":"fig","price":1}',
    },
    {
      method: 'POST',
      url: '/api/product',
      headers: { 'content-type': 'application/xml' },
      payload: '<p/>',
    },
    {
      method: 'POST',
      url: '/api/product',
      headers: JSON_TYPE,
      payload: JSON.stringify({ name: 'x'.repeat(1_100_000), price: 1 }),
    },
    { method: 'POST', url: '/api/product', payload: { name: 'fig', price: 1, colour: 'red' } },
    { method: 'POST', url: '/api/product', payload: { name: 'fig', price: 1, id: 5 } },
    { method: 'POST', url: '/api/product', payload: { name: 'fig', price: '1' } },
    { method: 'POST', url: '/api/product', payload: { name: null, price: 1 } },
    { method: 'POST', url: '/api/product', payload: { name: 'nul\u0000', price: 1 } },
    { method: 'POST', url: '/api/product', payload: { name: 'lone\uD800', price: 1 } },
    { method: 'POST', url: '/api/product', payload: { name: 'apple', price: 1 } },
    { method: 'POST', url: '/api/reviews', payload: { productId: 424242, text: 'orphan' } },
    { method: 'PUT', url: '/api/product/{id}', payload: { name: 'apple' } },
    // Query strings.
    { method: 'GET', url: '/api/product?limit=5' },
    { method: 'GET', url: '/api/product?filter[weight]=1' },
    { method: 'GET', url: '/api/product?filter[price][between]=1' },
    { method: 'GET', url: '/api/product?filter[price][lt]=cheap' },
    { method: 'GET', url: '/api/product?filter[price][lt]=0x10' },
    { method: 'GET', url: '/api/product?filter[id][in]=1,2,x' },
    { method: 'GET', url: '/api/product?filter[isDeleted][like]=t' },
    { method: 'GET', url: '/api/product?filter[name]=a&filter[name]=b' },
    { method: 'GET', url: '/api/product?filter[name]=%00' },
    { method: 'GET', url: '/api/product?sort=weight' },
    { method: 'GET', url: '/api/product?sort=name,-name' },
    { method: 'GET', url: '/api/product?page=0' },
    { method: 'GET', url: '/api/product?pageSize=1e1' },
    { method: 'GET', url: '/api/product?page=2&after=x.y' },
    { method: 'GET', url: '/api/product?after=not-a-cursor' },
    { method: 'GET', url: `/api/product?after=${'A'.repeat(9000)}` },
    { method: 'GET', url: '/api/product?filter[[x]]=1' },
    // Ids.
    ...['abc', '0x10', '1e1', '+1', '1.0', '99999999999999999', '-', '%00'].flatMap(
      (id): InjectOptions[] => [
        { method: 'GET', url: `/api/product/${id}` },
        { method: 'PUT', url: `/api/product/${id}`, payload: { name: 'x', price: 1 } },
        { method: 'DELETE', url: `/api/product/${id}` },
      ],
    ),
    { method: 'GET', url: '/api/tags/urn:uuid:a0b1c2d3-e4f5-4a6b-8c7d-8e9fa0b1c2d3' },
    { method: 'GET', url: '/api/tags/not-a-uuid' },
    { method: 'GET', url: '/api/product/424242' },
    { method: 'PUT', url: '/api/product/424242', payload: { name: 'x', price: 1 } },
    { method: 'DELETE', url: '/api/product/424242' },
    { method: 'GET', url: '/api/nothing-here' },
  ];
}

export function quietSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud client errors on ${engine.name}`, () => {
    let app: FastifyInstance;
    const lines: Line[] = [];
    const ids: Record<string, string> = {};

    before(async () => {
      for (const statement of suiteTables(engine.flavour)) await engine.sql(statement);
      const stream = new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString().split('\n'))
            if (line.trim() !== '') lines.push(JSON.parse(line) as Line);
          done();
        },
      });
      app = await crudApp(engine, {}, undefined, undefined, { logger: { level: 'trace', stream } });
      const created = async (
        url: string,
        payload: unknown,
        headers: Record<string, string> = {},
      ) => {
        const res = await app.inject({
          method: 'POST',
          url,
          payload: payload as Record<string, unknown>,
          headers,
        });
        assert.equal(res.statusCode, 201, res.body);
        return String(res.json<{ id: unknown }>().id);
      };
      ids.id = await created('/api/product', { name: 'apple', price: 1 });
      ids.doc = await created(
        '/api/documents',
        { title: 'doc' },
        { 'idempotency-key': 'used-key' },
      );
      ids.ledger = await created('/api/ledgers', { label: 'l', amount: 1 });
      ids.tag = await created('/api/tags', { label: 't' });
    });
    after(async () => {
      await app?.close();
    });

    it('every request of the battery answers 4xx, and no log line is at error level or above', async () => {
      const start = lines.length;
      const statuses = new Map<number, number>();
      for (const request of battery()) {
        const url = String(request.url).replace(
          /\{(\w+)\}/g,
          (_, name: string) => ids[name] ?? name,
        );
        const res = await app.inject({ ...request, url });
        assert.ok(
          res.statusCode >= 400 && res.statusCode < 500,
          `${request.method} ${url.slice(0, 120)} ${JSON.stringify(request.headers ?? {})}: ${res.statusCode} ${res.body.slice(0, 300)}`,
        );
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      }
      // Let any late line (a promise settling after the answer) arrive.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const loud = lines.slice(start).filter((l) => l.level >= 50);
      assert.deepEqual(
        loud.map((l) => `${l.level} ${l.msg} ${l.err?.message ?? ''}`),
        [],
      );
      for (const status of [400, 404, 409, 412, 413, 415, 422, 428])
        assert.ok(
          statuses.has(status),
          `the battery provokes ${status}: ${JSON.stringify([...statuses])}`,
        );
      // And nothing of the battery was written.
      assert.equal(
        (await app.inject(`/api/product/${ids.id}`)).json<{ name: string }>().name,
        'apple',
      );
    });
  });
}
