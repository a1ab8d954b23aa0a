// Optimistic concurrency on one engine: the version column as a strong ETag, If-Match on PUT and
// DELETE (412 and nothing changed on another version, checked in the UPDATE/DELETE itself),
// requireIfMatch (428), If-None-Match (304), and every generated write incrementing the version.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { KIT_AUTOCRUD, VersionConflictError, type KitAutoCrud } from '@kit/autocrud';
import {
  assertBadParameter,
  assertProblem,
  call,
  crudApp,
  Document,
  racingWrites,
  suiteTables,
  type EngineUnderTest,
} from './fixtures.ts';

interface DocumentRow {
  id: number;
  title: string;
  words?: number | null;
  version: number;
  isArchived: boolean;
}

function put(
  app: FastifyInstance,
  url: string,
  payload: Record<string, unknown>,
  ifMatch?: string,
): Promise<LightMyRequestResponse> {
  return call(app, {
    method: 'PUT',
    url,
    payload,
    headers: ifMatch === undefined ? {} : { 'if-match': ifMatch },
  });
}

function remove(
  app: FastifyInstance,
  url: string,
  ifMatch?: string,
): Promise<LightMyRequestResponse> {
  return call(app, {
    method: 'DELETE',
    url,
    headers: ifMatch === undefined ? {} : { 'if-match': ifMatch },
  });
}

export function versionSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud optimistic concurrency on ${engine.name}`, () => {
    let app: FastifyInstance;
    /** The row as stored, read beside Kit. */
    const stored = async (table: string, id: number) =>
      (await engine.sql(`select * from ${table} where id = ${id}`))[0];
    const createDocument = async (title: string) => {
      const res = await call(app, { method: 'POST', url: '/api/documents', payload: { title } });
      assert.equal(res.statusCode, 201, res.body);
      return res;
    };

    before(async () => {
      for (const statement of suiteTables(engine.flavour)) await engine.sql(statement);
      app = await crudApp(engine);
    });
    after(async () => {
      await app?.close();
    });

    it('a create answers version 1 and its ETag; GET answers the ETag; If-None-Match with it is 304', async () => {
      const created = await createDocument('one');
      const row = created.json<DocumentRow>();
      assert.equal(row.version, 1);
      assert.equal(created.headers.etag, '"1"');
      const read = await call(app, `/api/documents/${row.id}`);
      assert.equal(read.headers.etag, '"1"');
      assert.deepEqual(read.json(), row);
      const cached = await call(app, {
        url: `/api/documents/${row.id}`,
        headers: { 'if-none-match': '"1"' },
      });
      assert.equal(cached.statusCode, 304);
      assert.equal(cached.body, '');
      assert.equal(cached.headers.etag, '"1"');
      assert.equal(
        (
          await call(app, {
            url: `/api/documents/${row.id}`,
            headers: { 'if-none-match': 'W/"1", "7"' },
          })
        ).statusCode,
        304,
        'weak comparison',
      );
      assert.equal(
        (await call(app, { url: `/api/documents/${row.id}`, headers: { 'if-none-match': '"7"' } }))
          .statusCode,
        200,
      );
    });

    it('PUT with the current If-Match writes, increments the version and answers the new ETag; a stale one is 412 with the current ETag and changes nothing', async () => {
      const { id } = (await createDocument('two')).json<DocumentRow>();
      const first = await put(
        app,
        `/api/documents/${id}`,
        { title: 'two, edited', words: 2 },
        '"1"',
      );
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(first.headers.etag, '"2"');
      assert.equal(first.json<DocumentRow>().version, 2);
      const stale = await put(app, `/api/documents/${id}`, { title: 'lost update' }, '"1"');
      assertProblem(stale, 412, 'Precondition Failed');
      assert.equal(stale.headers.etag, '"2"');
      assert.match(stale.json<{ detail: string }>().detail, /version 2/);
      const row = await stored('documents', id);
      assert.equal(row?.title, 'two, edited');
      assert.equal(Number(row?.version), 2);
    });

    it('every generated write increments the version: PUT without If-Match, and the soft delete', async () => {
      const { id } = (await createDocument('three')).json<DocumentRow>();
      assert.equal(
        (await put(app, `/api/documents/${id}`, { title: 'three' })).headers.etag,
        '"2"',
      );
      assert.equal(
        (await put(app, `/api/documents/${id}`, { title: 'three' })).headers.etag,
        '"3"',
      );
      assert.equal((await remove(app, `/api/documents/${id}`, '"3"')).statusCode, 204);
      const row = await stored('documents', id);
      assert.equal(Number(row?.version), 4);
      assert.ok(row?.is_archived === true || row?.is_archived === 1);
      assert.equal((await call(app, `/api/documents/${id}`)).statusCode, 404);
    });

    it('DELETE with a stale If-Match is 412 and deletes nothing; with the current one it deletes', async () => {
      const created = await call(app, {
        method: 'POST',
        url: '/api/ledgers',
        payload: { label: 'rent', amount: 900 },
      });
      assert.equal(created.headers.etag, '"1"');
      const { id } = created.json<{ id: number }>();
      assert.equal(
        (await put(app, `/api/ledgers/${id}`, { label: 'rent', amount: 950 }, '"1"')).headers.etag,
        '"2"',
      );
      assertProblem(await remove(app, `/api/ledgers/${id}`, '"1"'), 412);
      assert.equal(Number((await stored('ledgers', id))?.revision), 2);
      assert.equal((await remove(app, `/api/ledgers/${id}`, '"2"')).statusCode, 204);
      assert.equal(await stored('ledgers', id), undefined);
    });

    it('If-Match: * writes while the row exists; a missing row is 404 whatever If-Match says', async () => {
      const { id } = (await createDocument('four')).json<DocumentRow>();
      assert.equal(
        (await put(app, `/api/documents/${id}`, { title: 'four' }, '*')).headers.etag,
        '"2"',
      );
      for (const ifMatch of ['*', '"1"', '"2"', 'W/"2"']) {
        assertProblem(await put(app, '/api/documents/424242', { title: 'ghost' }, ifMatch), 404);
        assertProblem(await remove(app, '/api/documents/424242', ifMatch), 404);
      }
    });

    it('strong comparison: a weak ETag or an unknown tag never matches; a list matches any of its versions', async () => {
      const { id } = (await createDocument('five')).json<DocumentRow>();
      for (const ifMatch of ['W/"1"', '"x"', '"01"', '"1.0"', '""'])
        assertProblem(await put(app, `/api/documents/${id}`, { title: 'nope' }, ifMatch), 412);
      assert.equal(
        (await put(app, `/api/documents/${id}`, { title: 'five' }, '"7", W/"3" ,"1"')).headers.etag,
        '"2"',
      );
      assert.equal((await stored('documents', id))?.title, 'five');
    });

    it('a malformed If-Match is a 400 naming the header and changes nothing', async () => {
      const { id } = (await createDocument('six')).json<DocumentRow>();
      for (const ifMatch of ['1', '"1', '*, "1"', 'W/1', '"1" "2"']) {
        assertBadParameter(
          await put(app, `/api/documents/${id}`, { title: 'bad' }, ifMatch),
          'headers',
          'If-Match',
          /entity-tags/,
        );
        assertBadParameter(
          await remove(app, `/api/documents/${id}`, ifMatch),
          'headers',
          'If-Match',
        );
      }
      assert.equal(Number((await stored('documents', id))?.version), 1);
    });

    it('requireIfMatch: PUT and DELETE without If-Match are 428 and change nothing', async () => {
      const { id } = (
        await call(app, {
          method: 'POST',
          url: '/api/ledgers',
          payload: { label: 'food', amount: 10 },
        })
      ).json<{ id: number }>();
      const unconditional = await put(app, `/api/ledgers/${id}`, { label: 'food', amount: 99 });
      assertProblem(unconditional, 428, 'Precondition Required');
      assert.match(unconditional.json<{ detail: string }>().detail, /If-Match/);
      assertProblem(await remove(app, `/api/ledgers/${id}`), 428);
      const row = await stored('ledgers', id);
      assert.equal(Number(row?.amount), 10);
      assert.equal(Number(row?.revision), 1);
    });

    it('concurrent writes with the same If-Match: exactly one wins, every other one is 412 (the check is in the UPDATE itself)', async (t) => {
      const { id } = (await createDocument('race')).json<DocumentRow>();
      // On a server, the ten writes are made to queue at the table together (reads still pass), so
      // that a check made before the UPDATE would let all of them through.
      const { answers, queued } = await racingWrites(engine, 'documents', 10, (i) =>
        put(app, `/api/documents/${id}`, { title: `writer ${i}` }, '"1"'),
      );
      const won = answers.filter((r) => r.statusCode === 200);
      assert.equal(won.length, 1, answers.map((r) => r.statusCode).join(','));
      assert.equal(answers.filter((r) => r.statusCode === 412).length, 9);
      const row = await stored('documents', id);
      assert.equal(row?.title, won[0]?.json<DocumentRow>().title);
      assert.equal(Number(row?.version), 2);
      t.diagnostic(
        `winner: ${String(row?.title)}${queued ? ' (all ten queued at the table first)' : ''}`,
      );
    });

    it('an entity without a version field: its rows have no ETag, so If-Match with tags is 412; * writes', async () => {
      const created = await call(app, {
        method: 'POST',
        url: '/api/product',
        payload: { name: 'plain', price: 1 },
      });
      assert.equal(created.headers.etag, undefined);
      const { id } = created.json<{ id: number }>();
      assert.equal((await call(app, `/api/product/${id}`)).headers.etag, undefined);
      assertProblem(await put(app, `/api/product/${id}`, { name: 'plain', price: 2 }, '"1"'), 412);
      assert.equal(Number((await stored('products', id))?.price), 1);
      assert.equal(
        (await put(app, `/api/product/${id}`, { name: 'plain', price: 3 }, '*')).statusCode,
        200,
      );
      assertProblem(await put(app, '/api/product/424242', { name: 'ghost', price: 3 }, '"1"'), 404);
    });

    it('the version field is read-only, and the repository checks versions too', async () => {
      const { id } = (await createDocument('seven')).json<DocumentRow>();
      assertBadParameter(
        await put(app, `/api/documents/${id}`, { title: 'seven', version: 9 }, '"1"'),
        'body',
        'version',
        /read-only/,
      );
      const documents = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD).repository(Document);
      await assert.rejects(
        documents.update(id, { title: 'x' }, { ifVersion: [5, 6] }),
        (err: unknown) => err instanceof VersionConflictError && err.currentVersion === 1,
      );
      await assert.rejects(documents.delete(id, { ifVersion: [] }), VersionConflictError);
      assert.equal(
        (await documents.update(id, { title: 'seven' }, { ifVersion: [1] }))?.version,
        2,
      );
      assert.equal(await documents.update(424242, { title: 'x' }, { ifVersion: [1] }), undefined);
    });
  });
}
