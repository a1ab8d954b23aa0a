// @test-lines: once - the sample's books routes through Kit's API; the engines' conformance suites check the drivers on every line
// The sample's /api/books: a table with a timestamp, an exact decimal price, an enum status, a
// JSON attribute bag and Kit-maintained createdAt/updatedAt, on the embedded default database
// (PGlite, tables made by createTables), and on SQLite where node:sqlite exists: the same answers.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { useKit } from '@kit/core';
import { createApp } from '../src/app.js';

interface BookRow {
  id: number;
  title: string;
  price: string;
  status: string;
  publishedAt?: string | null;
  attributes: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

// getBuiltinModule answers undefined for a module this Node does not have.
const sqlite =
  typeof process.getBuiltinModule === 'function' &&
  process.getBuiltinModule('node:sqlite') !== undefined;
const dir = mkdtempSync(path.join(tmpdir(), 'kit-books-'));
after(() => rmSync(dir, { recursive: true, force: true }));

for (const [engine, url] of [
  ['PGlite', 'pglite:'],
  ['node:sqlite', `sqlite:${path.join(dir, 'books.db')}`],
] as const) {
  describe(
    `the sample's /api/books on ${engine}`,
    { skip: engine === 'node:sqlite' && !sqlite ? 'node:sqlite is not in this Node' : false },
    () => {
      let app: FastifyInstance;
      before(async () => {
        app = createApp({ adminApiKey: 'k', logger: false, databaseUrl: url });
        await useKit(app);
        await app.ready();
      });
      after(async () => {
        await app?.close();
      });

      const post = async (payload: Record<string, unknown>) => {
        const res = await app.inject({ method: 'POST', url: '/api/books', payload });
        assert.equal(res.statusCode, 201, res.body);
        return res.json<BookRow>();
      };

      it('creates, reads, filters and sorts a book with every kind of column, values exactly as sent', async () => {
        const book = await post({
          title: 'Tea for Two',
          price: '19.9',
          publishedAt: '2026-11-24T10:15:30.123456+01:00',
          attributes: { isbn: '978-0-00-000000-2', languages: ['en', 'fr'], signed: true },
        });
        assert.equal(book.price, '19.90');
        assert.equal(book.status, 'draft');
        assert.equal(book.publishedAt, '2026-11-24T09:15:30.123456Z');
        assert.deepEqual(book.attributes, {
          isbn: '978-0-00-000000-2',
          languages: ['en', 'fr'],
          signed: true,
        });
        assert.equal(book.createdAt, book.updatedAt);
        const cheap = await post({
          title: 'Coffee at Noon',
          price: '0.10',
          status: 'published',
          publishedAt: '2026-03-29T01:30:00Z',
        });
        assert.deepEqual(cheap.attributes, {}, 'the default bag');
        assert.deepEqual((await app.inject(`/api/books/${book.id}`)).json<BookRow>(), book);
        const list = (await app.inject('/api/books?filter[price][gt]=0.1&sort=-publishedAt')).json<{
          items: BookRow[];
        }>();
        assert.deepEqual(
          list.items.map((b) => b.id),
          [book.id],
        );
        const published = (
          await app.inject('/api/books?filter[status][in]=published,retired&sort=price')
        ).json<{ items: BookRow[] }>();
        assert.deepEqual(
          published.items.map((b) => b.title),
          ['Coffee at Noon'],
        );
        const put = await app.inject({
          method: 'PUT',
          url: `/api/books/${book.id}`,
          payload: {
            title: 'Tea for Two',
            price: '21.00',
            status: 'published',
            attributes: book.attributes,
          },
        });
        assert.equal(put.statusCode, 200, put.body);
        const updated = put.json<BookRow>();
        assert.equal(updated.createdAt, book.createdAt);
        assert.ok(updated.updatedAt >= book.updatedAt);
        assert.equal(updated.price, '21.00');
      });

      it('a status outside the list, a price with more digits than declared, a bag that breaks its schema, a Kit timestamp: each a 400 naming the field', async () => {
        for (const [payload, field, detail] of [
          [
            { title: 'x', price: '1.00', status: 'sold-out' },
            'status',
            /"draft", "published", "retired"/,
          ],
          [{ title: 'x', price: '1.005' }, 'price', /2 after it/],
          [{ title: 'x', price: 1.5 }, 'price', /string/],
          [{ title: 'x', price: '1.00', attributes: { pages: 0 } }, 'attributes', /pages/],
          [
            { title: 'x', price: '1.00', createdAt: '2026-01-01T00:00:00Z' },
            'createdAt',
            /read-only/,
          ],
        ] as const) {
          const res = await app.inject({ method: 'POST', url: '/api/books', payload });
          assert.equal(res.statusCode, 400, res.body);
          const error = res.json<{ errors: Array<{ name: string; detail: string }> }>().errors[0];
          assert.equal(error?.name, field, res.body);
          assert.match(error?.detail ?? '', detail);
        }
      });
    },
  );
}
