// Atomic writes on one engine: a POST of an array creates every row in one transaction or none,
// a PATCH on the collection changes every row (each at its own version) or none. Every failure
// names the row as the client wrote it and is checked against the database: nothing written.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { assertProblem, call, countRows, crudApp, suiteTables, type EngineUnderTest } from './fixtures.ts';

interface Problem {
  detail: string;
  errors?: Array<{ in: string; name: string; pointer: string; detail: string }>;
}

interface DocumentRow {
  id: number;
  title: string;
  words?: number | null;
  version: number;
  isArchived: boolean;
}

function send(app: FastifyInstance, method: 'POST' | 'PATCH', url: string, payload: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return call(app, { method, url, payload: JSON.stringify(payload), headers: { 'content-type': 'application/json', ...headers } });
}

/** A problem naming the row (and field) `name` at `pointer`. */
function assertRowProblem(res: LightMyRequestResponse, status: number, name: string, pointer: string): Problem {
  assertProblem(res, status);
  const body = res.json<Problem>();
  assert.equal(body.errors?.[0]?.name, name, res.body);
  assert.equal(body.errors?.[0]?.pointer, pointer, res.body);
  assert.ok(body.detail.includes(name), body.detail);
  return body;
}

export function atomicSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud atomic writes on ${engine.name}`, () => {
    let app: FastifyInstance;
    const products = (prefix: string) => countRows(engine, 'products', `name like '${prefix}%'`);
    const documents = async (titles: string[]) => {
      const res = await send(app, 'POST', '/api/documents', titles.map((title) => ({ title, words: 1 })));
      assert.equal(res.statusCode, 201, res.body);
      return res.json<DocumentRow[]>();
    };

    before(async () => {
      for (const statement of suiteTables(engine.flavour)) await engine.sql(statement);
      app = await crudApp(engine);
    });
    after(async () => {
      await app?.close();
    });

    describe('bulk create', () => {
      it('a POST of an array creates every row and answers them as stored, in the order sent', async () => {
        const rows = [
          { name: 'bulk-a', price: 1 },
          { name: 'bulk-b', price: 2.5, stock: 3, tag: null },
          { name: 'bulk-c', price: 0, tag: 'x' },
        ];
        const res = await send(app, 'POST', '/api/product', rows);
        assert.equal(res.statusCode, 201, res.body);
        assert.equal(res.headers.location, undefined);
        const created = res.json<Array<{ id: number; name: string }>>();
        assert.deepEqual(
          created.map(({ id: _id, ...rest }) => rest),
          [
            { name: 'bulk-a', price: 1, isDeleted: false },
            { name: 'bulk-b', price: 2.5, stock: 3, tag: null, isDeleted: false },
            { name: 'bulk-c', price: 0, tag: 'x', isDeleted: false },
          ].map((row) => ({ stock: null, tag: null, ...row })),
        );
        for (const row of created) assert.deepEqual((await call(app, `/api/product/${row.id}`)).json(), row);
        assert.equal(await products('bulk-'), 3);
        // One row as an object is still the single create: Location and the row.
        const one = await send(app, 'POST', '/api/product', { name: 'bulk-single', price: 1 });
        assert.equal(one.statusCode, 201, one.body);
        assert.equal(one.headers.location, `/api/product/${one.json<{ id: number }>().id}`);
      });

      it('a bad row is a 400 naming it and its field ([2].price), and no row of the array is written', async () => {
        const good = (n: number) => ({ name: `bad-batch-${n}`, price: 1 });
        const cases: Array<[unknown, string, string]> = [
          [{ name: 'bad-batch-x', price: 'cheap' }, '[2].price', '#/2/price'],
          [{ name: 'bad-batch-x' }, '[2].price', '#/2/price'],
          [{ name: 'bad-batch-x', price: 1, colour: 'red' }, '[2].colour', '#/2/colour'],
          [{ name: 'bad-batch-x', price: 1, id: 4 }, '[2].id', '#/2/id'],
          [{ name: null, price: 1 }, '[2].name', '#/2/name'],
          [{ name: 'bad-batch-x', price: 1, stock: 2 ** 53 }, '[2].stock', '#/2/stock'],
          ['a string', '[2]', '#/2'],
          [null, '[2]', '#/2'],
        ];
        for (const [bad, name, pointer] of cases) {
          assertRowProblem(await send(app, 'POST', '/api/product', [good(0), good(1), bad, good(3)]), 400, name, pointer);
        }
        assert.equal(await products('bad-batch-'), 0);
      });

      it('a row the database refuses (a unique name, in the table or earlier in the array) is a 409 naming it, and nothing is written', async () => {
        await send(app, 'POST', '/api/product', { name: 'taken-name', price: 1 });
        const existing = await send(app, 'POST', '/api/product', [
          { name: 'uniq-0', price: 1 },
          { name: 'uniq-1', price: 1 },
          { name: 'taken-name', price: 1 },
        ]);
        assertRowProblem(existing, 409, '[2]', '#/2');
        const inArray = await send(app, 'POST', '/api/product', [
          { name: 'uniq-0', price: 1 },
          { name: 'uniq-1', price: 1 },
          { name: 'uniq-0', price: 2 },
        ]);
        assertRowProblem(inArray, 409, '[2]', '#/2');
        assert.equal(await products('uniq-'), 0);
        // A foreign key: the review of a product that does not exist.
        const product = (await send(app, 'POST', '/api/product', { name: 'reviewed', price: 1 })).json<{ id: number }>().id;
        const reviews = await send(app, 'POST', '/api/reviews', [
          { productId: product, text: 'fk-ok' },
          { productId: 999_999, text: 'fk-bad' },
        ]);
        assertRowProblem(reviews, 409, '[1]', '#/1');
        assert.equal(await countRows(engine, 'reviews', `text like 'fk-%'`), 0);
      });

      it('an empty array and one above 1000 rows are refused, nothing written', async () => {
        const empty = await send(app, 'POST', '/api/product', []);
        assertProblem(empty, 400);
        assert.match(empty.json<Problem>().detail, /1 to 1000 rows/);
        const many = Array.from({ length: 1001 }, (_, i) => ({ name: `too-many-${i}`, price: 1 }));
        assertProblem(await send(app, 'POST', '/api/product', many), 400);
        assert.equal(await products('too-many-'), 0);
        // Exactly the bound is taken.
        const bound = await send(app, 'POST', '/api/product', many.slice(0, 1000));
        assert.equal(bound.statusCode, 201, bound.body.slice(0, 500));
        assert.equal(bound.json<unknown[]>().length, 1000);
        assert.equal(await products('too-many-'), 1000);
      });

      it('with Idempotency-Key, the whole array is created at most once: a retry replays it, another array is 422', async () => {
        const key = randomUUID();
        const rows = [{ title: 'idem-a', words: 1 }, { title: 'idem-b' }];
        const first = await send(app, 'POST', '/api/documents', rows, { 'idempotency-key': key });
        assert.equal(first.statusCode, 201, first.body);
        assert.equal(first.headers['idempotent-replayed'], 'false');
        assert.equal(first.json<DocumentRow[]>().length, 2);
        const again = await send(app, 'POST', '/api/documents', rows, { 'idempotency-key': key });
        assert.equal(again.statusCode, 201, again.body);
        assert.equal(again.headers['idempotent-replayed'], 'true');
        assert.deepEqual(again.json(), first.json());
        assert.equal(await countRows(engine, 'documents', `title like 'idem-%'`), 2);
        const other = await send(app, 'POST', '/api/documents', [...rows, { title: 'idem-c' }], { 'idempotency-key': key });
        assertProblem(other, 422);
        // A failed batch frees its key: the corrected batch runs.
        const failKey = randomUUID();
        assertRowProblem(await send(app, 'POST', '/api/documents', [{ title: 'idem-d' }, { title: '' }], { 'idempotency-key': failKey }), 400, '[1].title', '#/1/title');
        const fixed = await send(app, 'POST', '/api/documents', [{ title: 'idem-d' }, { title: 'idem-e' }], { 'idempotency-key': failKey });
        assert.equal(fixed.statusCode, 201, fixed.body);
        assert.equal(await countRows(engine, 'documents', `title like 'idem-%'`), 4);
      });
    });

    describe('bulk PATCH', () => {
      it('a PATCH of an array changes each row at its version and answers the stored rows in order', async () => {
        const [a, b, c] = (await documents(['bp-a', 'bp-b', 'bp-c'])) as [DocumentRow, DocumentRow, DocumentRow];
        const res = await send(app, 'PATCH', '/api/documents', [
          { id: c.id, words: 30, version: 1 },
          { id: a.id, title: 'bp-a2', words: null, version: 1 },
          { id: b.id },
        ]);
        assert.equal(res.statusCode, 200, res.body);
        const rows = res.json<DocumentRow[]>();
        assert.deepEqual(
          rows.map((r) => [r.id, r.title, r.words, r.version]),
          [
            [c.id, 'bp-c', 30, 2],
            [a.id, 'bp-a2', null, 2],
            [b.id, 'bp-b', 1, 1],
          ],
        );
        for (const row of rows) assert.deepEqual((await call(app, `/api/documents/${row.id}`)).json(), row);
        // As a merge patch too.
        const merge = await send(app, 'PATCH', '/api/documents', [{ id: b.id, words: 5 }], { 'content-type': 'application/merge-patch+json' });
        assert.equal(merge.statusCode, 200, merge.body);
        assert.equal(merge.json<DocumentRow[]>()[0]?.version, 2);
      });

      it('one stale row fails the batch with 412 naming it, and no row changes', async () => {
        const [a, b] = (await documents(['stale-a', 'stale-b'])) as [DocumentRow, DocumentRow];
        await send(app, 'PATCH', `/api/documents/${b.id}`, { words: 9 });
        const res = await send(app, 'PATCH', '/api/documents', [
          { id: a.id, title: 'stale-a2', version: 1 },
          { id: b.id, title: 'stale-b2', version: 1 },
        ]);
        const body = assertRowProblem(res, 412, '[1]', '#/1') as Problem & { currentVersion: number };
        assert.equal(body.currentVersion, 2);
        assert.ok(body.detail.includes(`id ${b.id}`), body.detail);
        const [stored] = await engine.sql(`select title, version from documents where id = ${a.id}`);
        assert.deepEqual([stored?.title, Number(stored?.version)], ['stale-a', 1]);
        assert.equal(await countRows(engine, 'documents', `title like 'stale-%2'`), 0);
      });

      it('a missing row is 404 naming it, a bad field 400 naming it, and no row changes', async () => {
        const [a] = (await documents(['miss-a'])) as [DocumentRow];
        assertRowProblem(await send(app, 'PATCH', '/api/documents', [{ id: a.id, title: 'miss-a2' }, { id: 999_999, title: 'x' }]), 404, '[1]', '#/1');
        assertRowProblem(await send(app, 'PATCH', '/api/documents', [{ id: a.id, title: 'miss-a2' }, { id: a.id, words: -1 }]), 400, '[1].words', '#/1/words');
        assertRowProblem(await send(app, 'PATCH', '/api/documents', [{ id: a.id, title: 'miss-a2' }, { words: 1 }]), 400, '[1].id', '#/1/id');
        assertRowProblem(await send(app, 'PATCH', '/api/documents', [{ id: a.id, title: 'miss-a2' }, { id: a.id, title: null }]), 400, '[1].title', '#/1/title');
        assertRowProblem(await send(app, 'PATCH', '/api/documents', [{ id: a.id, title: 'miss-a2', isArchived: true }]), 400, '[0].isArchived', '#/0/isArchived');
        // A deleted row is missing.
        await call(app, { method: 'DELETE', url: `/api/documents/${a.id}` });
        assertRowProblem(await send(app, 'PATCH', '/api/documents', [{ id: a.id, title: 'miss-a2' }]), 404, '[0]', '#/0');
        assert.equal(await countRows(engine, 'documents', `title = 'miss-a2'`), 0);
        const notArray = await send(app, 'PATCH', '/api/documents', { id: a.id, title: 'x' });
        assertProblem(notArray, 400);
        assert.match(notArray.json<Problem>().detail, /must be an array/);
      });

      it('a unique conflict on any row is 409 naming it, nothing changed; an entity without a version takes no version key', async () => {
        const created = (await send(app, 'POST', '/api/product', [{ name: 'bpu-a', price: 1 }, { name: 'bpu-b', price: 1 }])).json<Array<{ id: number }>>();
        const [a, b] = created as [{ id: number }, { id: number }];
        assertRowProblem(await send(app, 'PATCH', '/api/product', [{ id: a.id, price: 9 }, { id: b.id, name: 'bpu-a' }]), 409, '[1]', '#/1');
        const [stored] = await engine.sql(`select price from products where id = ${a.id}`);
        assert.equal(Number(stored?.price), 1);
        assertRowProblem(await send(app, 'PATCH', '/api/product', [{ id: a.id, version: 1 }]), 400, '[0].version', '#/0/version');
        const ok = await send(app, 'PATCH', '/api/product', [{ id: a.id, price: 9 }, { id: b.id, tag: 't' }]);
        assert.equal(ok.statusCode, 200, ok.body);
        assert.deepEqual(ok.json<Array<{ price: number; tag: string | null }>>().map((r) => [r.price, r.tag]), [[9, null], [1, 't']]);
      });

      it('under requireIfMatch, a row without its version is 428 naming it; with it, the batch runs', async () => {
        const [x, y] = (await send(app, 'POST', '/api/ledgers', [{ label: 'l-x', amount: 1 }, { label: 'l-y', amount: 2 }])).json<Array<{ id: number }>>() as [{ id: number }, { id: number }];
        const missing = await send(app, 'PATCH', '/api/ledgers', [{ id: x.id, amount: 5, revision: 1 }, { id: y.id, amount: 6 }]);
        assertProblem(missing, 428);
        assert.match(missing.json<Problem>().detail, /\[1\]/);
        assert.equal(await countRows(engine, 'ledgers', `amount = 5`), 0);
        const ok = await send(app, 'PATCH', '/api/ledgers', [{ id: x.id, amount: 5, revision: 1 }, { id: y.id, amount: 6, revision: 1 }]);
        assert.equal(ok.statusCode, 200, ok.body);
        assert.deepEqual(ok.json<Array<{ revision: number }>>().map((r) => r.revision), [2, 2]);
      });
    });

    it('the document: POST takes one row or an array, PATCH on the collection ({group}_PATCH) takes {name}BatchPatch rows', async () => {
      const doc = (await app.inject('/openapi.json')).json<{
        paths: Record<string, Record<string, { operationId: string; requestBody?: { content: Record<string, { schema: Record<string, unknown> }> }; responses: Record<string, unknown> }>>;
        components: { schemas: Record<string, { required?: string[]; properties: Record<string, unknown> }> };
      }>();
      const post = doc.paths['/api/product']?.post;
      assert.equal(post?.operationId, 'product_POST');
      const postBody = post?.requestBody?.content['application/json']?.schema as { anyOf: Array<Record<string, unknown>> };
      assert.equal(postBody.anyOf.length, 2);
      assert.equal(postBody.anyOf[1]?.maxItems, 1000);
      const bulk = doc.paths['/api/documents']?.patch;
      assert.equal(bulk?.operationId, 'documents_PATCH');
      assert.ok(bulk?.responses['412']);
      const row = doc.components.schemas.DocumentBatchPatch;
      assert.deepEqual(row?.required, ['id']);
      assert.deepEqual(Object.keys(row?.properties ?? {}), ['id', 'title', 'words', 'version']);
      assert.equal(doc.paths['/api/reviews']?.patch, undefined);
    });
  });
}
