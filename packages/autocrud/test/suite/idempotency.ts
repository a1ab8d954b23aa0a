// Exactly-once creates on one engine: a retry with the same Idempotency-Key and body replays the
// first answer and inserts nothing; another body is 422; a duplicate while the first is in flight
// is 409 with Retry-After; a failed create frees its key. Rows are counted in the database itself.
// On PostgreSQL, which several instances share, start-up warns once when the keys are kept in
// Kit's in-memory store; never with another store, never on an engine of this process alone.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { asValue } from 'awilix';
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import {
  addKit,
  KitStoreNames,
  MemoryIdempotencyStore,
  useKit,
  type IIdempotencyStore,
} from '@kit/core';
import { addKitStore } from '@kit/store-redis';
import { addKitAutoCrud, AutoCrud } from '@kit/autocrud';
import { RedisServer, skipRedis } from '@kit/test-support/redis';
import {
  assertBadParameter,
  assertProblem,
  call,
  countRows,
  crudApp,
  DocumentsEndpoint,
  ENDPOINTS,
  suiteTables,
  Tag,
  TagsEndpoint,
  type EngineUnderTest,
} from './fixtures.ts';
import { until } from '@kit/test-support/until';

// The same entity as TagsEndpoint, in another group, with idempotency turned off for the class.
@AutoCrud(Tag, { idempotency: false })
class LabelsEndpoint {}

interface LogLine {
  level: number;
  msg: string;
  idempotencyKey?: string;
  store?: string;
}

/** Log lines of the app, to wait on what it reports instead of on time. */
class LogLines {
  readonly lines: LogLine[] = [];
  readonly stream = new Writable({
    write: (chunk: Buffer, _encoding, done) => {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        this.lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
}

/** The start-up warning about keys kept per process. */
const IN_MEMORY_WARNING = /idempotency keys are kept in this process's memory/;

function post(
  app: FastifyInstance,
  url: string,
  payload: unknown,
  key?: string,
): Promise<LightMyRequestResponse> {
  return call(app, {
    method: 'POST',
    url,
    payload: payload as Record<string, unknown>,
    headers: key === undefined ? {} : { 'idempotency-key': key },
  });
}

export function idempotencySuite(engine: EngineUnderTest): void {
  describe(`AutoCrud idempotent creates on ${engine.name}`, () => {
    let app: FastifyInstance;
    const log = new LogLines();

    before(async () => {
      for (const statement of suiteTables(engine.flavour)) await engine.sql(statement);
      // On for every class (DocumentsEndpoint has it of its own), off for LabelsEndpoint. A create
      // held in flight (engine.hold) may wait for its lock as long as the test needs.
      app = await crudApp(
        engine,
        { idempotency: { reservationTtlMs: 30_000 }, acquireTimeoutMs: 10_000 },
        undefined,
        [...ENDPOINTS, LabelsEndpoint],
        { logger: { level: 'debug', stream: log.stream } },
      );
    });
    after(async () => {
      await app?.close();
    });

    it('a retry with the same key and body answers the first result with Idempotent-Replayed: true and creates nothing', async () => {
      const key = randomUUID();
      const first = await post(app, '/api/documents', { title: 'alpha', words: 3 }, key);
      assert.equal(first.statusCode, 201, first.body);
      assert.equal(first.headers['idempotent-replayed'], 'false');
      const row = first.json<{ id: number; version: number }>();
      assert.equal(first.headers.location, `/api/documents/${row.id}`);
      assert.equal(first.headers.etag, '"1"');

      // The row changes afterwards: a replay still answers the first result.
      assert.equal(
        (
          await call(app, {
            method: 'PUT',
            url: `/api/documents/${row.id}`,
            payload: { title: 'alpha', words: 4 },
          })
        ).statusCode,
        200,
      );
      for (const payload of [
        { title: 'alpha', words: 3 },
        { words: 3, title: 'alpha' },
      ]) {
        const again = await post(app, '/api/documents', payload, key);
        assert.equal(again.statusCode, 201, again.body);
        assert.equal(again.headers['idempotent-replayed'], 'true');
        assert.equal(again.headers.location, first.headers.location);
        assert.equal(again.headers.etag, '"1"');
        assert.deepEqual(again.json(), first.json());
      }
      assert.equal(await countRows(engine, 'documents', "title = 'alpha'"), 1);
    });

    it('the same key with another body is 422 and creates nothing', async () => {
      const key = randomUUID();
      assert.equal((await post(app, '/api/documents', { title: 'beta' }, key)).statusCode, 201);
      const other = await post(app, '/api/documents', { title: 'beta-2' }, key);
      assertProblem(other, 422, 'Unprocessable Content');
      assert.match(other.json<{ detail: string }>().detail, /another body/);
      assert.equal(await countRows(engine, 'documents', "title = 'beta-2'"), 0);
      // A field left out is another body too (it would take the column's default).
      assertProblem(await post(app, '/api/documents', { title: 'beta', words: null }, key), 422);
    });

    it('a duplicate while the first is in flight is 409 with Retry-After; the first then completes and is replayed', async (t) => {
      if (!engine.hold)
        return t.skip(
          `${engine.name} runs queries synchronously: a create cannot be held in flight (the burst test below covers concurrency)`,
        );
      const key = randomUUID();
      const release = await engine.hold('documents');
      let first: Promise<LightMyRequestResponse> | undefined;
      try {
        first = post(app, '/api/documents', { title: 'gamma' }, key);
        // The first request has its key and waits for the table.
        await until('the key reserved in the log', () =>
          log.lines.some((line) => line.idempotencyKey === key && /reserved/.test(line.msg)),
        );
        const duplicate = await post(app, '/api/documents', { title: 'gamma' }, key);
        assertProblem(duplicate, 409, 'Conflict');
        assert.match(duplicate.json<{ detail: string }>().detail, /still in progress/);
        assert.ok(
          Number(duplicate.headers['retry-after']) >= 1,
          `Retry-After: ${String(duplicate.headers['retry-after'])}`,
        );
        // Another body with the key is refused as such even while the first runs.
        assertProblem(await post(app, '/api/documents', { title: 'gamma-2' }, key), 422);
      } finally {
        await release();
      }
      const done = await first;
      assert.equal(done.statusCode, 201, done.body);
      assert.equal(done.headers['idempotent-replayed'], 'false');
      const replay = await post(app, '/api/documents', { title: 'gamma' }, key);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.deepEqual(replay.json(), done.json());
      assert.equal(await countRows(engine, 'documents', "title like 'gamma%'"), 1);
    });

    it('a burst of 20 concurrent requests with one key creates exactly one row; the others replay it or are told to retry', async (t) => {
      const key = randomUUID();
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => post(app, '/api/documents', { title: 'delta' }, key)),
      );
      const fresh = answers.filter(
        (r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === 'false',
      );
      const replayed = answers.filter(
        (r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === 'true',
      );
      const busy = answers.filter((r) => r.statusCode === 409);
      assert.equal(fresh.length, 1, answers.map((r) => r.statusCode).join(','));
      assert.equal(fresh.length + replayed.length + busy.length, 20);
      for (const r of replayed) assert.deepEqual(r.json(), fresh[0]?.json());
      for (const r of busy) assert.ok(Number(r.headers['retry-after']) >= 1);
      assert.equal(await countRows(engine, 'documents', "title = 'delta'"), 1);
      t.diagnostic(`1 created, ${replayed.length} replayed, ${busy.length} told to retry`);
    });

    it('a create the database refuses frees its key: the retry runs again instead of replaying the failure', async () => {
      const key = randomUUID();
      const orphan = { productId: 424242, text: 'no such product' };
      for (let i = 0; i < 2; i++) {
        const res = await post(app, '/api/reviews', orphan, key);
        assertProblem(res, 409);
        assert.doesNotMatch(res.json<{ detail: string }>().detail, /in progress/);
      }
      // The key is free again: another body with it runs.
      const product = await post(app, '/api/product', { name: 'reviewed', price: 1 });
      const created = await post(
        app,
        '/api/reviews',
        { productId: product.json<{ id: number }>().id, text: 'fine' },
        key,
      );
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(await countRows(engine, 'reviews', 'product_id = 424242'), 0);
    });

    it('without Idempotency-Key a create is a plain create; a class can turn idempotency off; keys are per group', async () => {
      for (let i = 0; i < 2; i++) {
        const res = await post(app, '/api/documents', { title: 'epsilon' });
        assert.equal(res.statusCode, 201);
        assert.equal(res.headers['idempotent-replayed'], undefined);
      }
      assert.equal(await countRows(engine, 'documents', "title = 'epsilon'"), 2);
      const key = randomUUID();
      for (let i = 0; i < 2; i++)
        assert.equal(
          (await post(app, '/api/labels', { label: 'zeta' }, key)).headers['idempotent-replayed'],
          undefined,
        );
      assert.equal(await countRows(engine, 'tags', "label = 'zeta'"), 2);
      // The same key in two groups is two keys.
      assert.equal(
        (await post(app, '/api/tags', { label: 'eta' }, key)).headers['idempotent-replayed'],
        'false',
      );
      assert.equal(
        (await post(app, '/api/documents', { title: 'eta' }, key)).headers['idempotent-replayed'],
        'false',
      );
    });

    it('a malformed Idempotency-Key is a 400 naming the header and creates nothing', async () => {
      for (const key of ['has space', 'x'.repeat(256), 'tab\tkey', 'ünïcode']) {
        assertBadParameter(
          await post(app, '/api/documents', { title: 'theta' }, key),
          'headers',
          'Idempotency-Key',
        );
      }
      assert.equal(await countRows(engine, 'documents', "title = 'theta'"), 0);
    });

    // A server several instances share (PostgreSQL) against an engine of this process alone.
    const shared = engine.name === 'PostgreSQL';
    it(
      shared
        ? "start-up warns once that Kit's in-memory store keeps the keys per instance, naming the store to register"
        : "start-up does not warn about the in-memory store: the database is this process's own",
      () => {
        // The suite's app: idempotency on for every class that creates, Kit's default memory store.
        const warnings = log.lines.filter((l) => IN_MEMORY_WARNING.test(l.msg));
        if (!shared) {
          assert.deepEqual(warnings, []);
          return;
        }
        assert.equal(warnings.length, 1, JSON.stringify(warnings));
        const [warning] = warnings as [LogLine];
        assert.equal(warning.level, 40);
        assert.equal(warning.store, 'idempotencyStore');
        assert.match(
          warning.msg,
          /another instance runs again\. Register a shared 'idempotencyStore' \(addKitStore from @kit\/store-redis\) when more than one instance serves the API/,
        );
      },
    );

    if (shared) {
      it("with a store that is not Kit's in-memory one (the host's own, Redis) start-up does not warn", async (t) => {
        const memory = new MemoryIdempotencyStore();
        const own: IIdempotencyStore = {
          reserve: (key, options) => memory.reserve(key, options),
          complete: (key, token, response, options) =>
            memory.complete(key, token, response, options),
          release: (key, token) => memory.release(key, token),
        };
        const redis = skipRedis ? undefined : await RedisServer.start();
        try {
          const stores: Array<[string, (app: FastifyInstance) => void]> = [
            [
              'own',
              (app) => app.kit.services.register({ [KitStoreNames.idempotency]: asValue(own) }),
            ],
          ];
          if (redis)
            stores.push([
              'redis',
              (app) => addKitStore(app, redis.url, { keyPrefix: `warning:${randomUUID()}:` }),
            ]);
          for (const [store, register] of stores) {
            const lines = new LogLines();
            const other = Fastify({ logger: { level: 'warn', stream: lines.stream } });
            addKit(other, [DocumentsEndpoint, TagsEndpoint]);
            register(other);
            addKitAutoCrud(other, engine.connection, { createTables: true, idempotency: true });
            try {
              await useKit(other);
              await other.ready();
              const key = randomUUID();
              for (const replayed of ['false', 'true'])
                assert.equal(
                  (await post(other, '/api/documents', { title: `kappa-${store}` }, key)).headers[
                    'idempotent-replayed'
                  ],
                  replayed,
                  store,
                );
            } finally {
              await other.close();
            }
            assert.deepEqual(
              lines.lines.filter((l) => IN_MEMORY_WARNING.test(l.msg)),
              [],
              store,
            );
          }
        } finally {
          await redis?.dispose();
        }
        if (!redis) t.diagnostic(`the Redis store was not tried: ${String(skipRedis)}`);
      });
    }
  });
}
