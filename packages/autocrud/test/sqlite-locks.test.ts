// @test-lines: every - node:sqlite: its locks and busy waits on this line
// SQLite's write lock held by another connection (here in this process; in another process in
// sqlite-processes.test.ts): node:sqlite is synchronous, and with busy_timeout=5000 a write that met
// the lock slept on the event loop for up to 5 s (/livez took 11 s behind three of them, and the
// lock's holder in this process could not even let go). Now the wait happens on timers: probes
// answer at once, reads go on beside the writer, a write answers 201 once the lock frees or 503
// busy after acquireTimeoutMs, and the database is never called down for it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { Kysely, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler, sql } from 'kysely';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud, AutoCrud, DatabaseBusyError, defineEntity } from '@kit/autocrud';
import { sqliteAvailable } from '../src/mapper/engines/sqlite/engine.ts';
import { NodeSqliteDriver, type DatabaseSync } from '../src/mapper/engines/sqlite/driver.ts';

interface Connection extends DatabaseSync {
  prepare(sql: string): {
    all(...p: unknown[]): Array<Record<string, unknown>>;
    get(...p: unknown[]): Record<string, unknown> | undefined;
    run(...p: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  };
}

const Note = defineEntity({
  name: 'Note',
  table: 'notes',
  schema: Type.Object({ id: Type.Integer(), text: Type.String({ maxLength: 100 }) }),
  writable: ['text'],
});
@AutoCrud(Note)
class NotesEndpoint {}

if (!sqliteAvailable()) {
  it("SQLite under another connection's write lock", (t) =>
    t.skip(`node:sqlite is not in Node ${process.version} (it is from 22.13 and 23.4)`));
} else {
  const { DatabaseSync: Sqlite } = process.getBuiltinModule('node:sqlite') as {
    DatabaseSync: new (file: string) => Connection;
  };
  const dir = mkdtempSync(path.join(tmpdir(), 'kit-sqlite-locks-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function serve(
    file: string,
    acquireTimeoutMs: number,
  ): Promise<{ app: FastifyInstance; base: string; lines: Array<{ msg: string; level: number }> }> {
    const lines: Array<{ msg: string; level: number }> = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean))
          lines.push(JSON.parse(line) as { msg: string; level: number });
        done();
      },
    });
    const app = Fastify({ logger: { level: 'info', stream } });
    addKit(app, [NotesEndpoint], (opt) => {
      opt.healthCheckDetailLevel = 'Full';
    });
    addKitAutoCrud(app, `sqlite:${file}`, { createTables: true, acquireTimeoutMs });
    await useKit(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    return {
      app,
      base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`,
      lines,
    };
  }

  async function timed(
    url: string,
    init?: RequestInit,
  ): Promise<{ status: number; ms: number; body: string; retryAfter: string | null }> {
    const asked = performance.now();
    const res = await fetch(url, init);
    const body = await res.text();
    return {
      status: res.status,
      ms: performance.now() - asked,
      body,
      retryAfter: res.headers.get('retry-after'),
    };
  }

  /**
   * Probes answered on time: the median within 100 ms and none past 500 ms. (A write that slept on
   * the event loop for its busy_timeout made every probe behind it wait seconds. The margin on the
   * slowest is for a machine whose cores are shared: a process not scheduled for a moment is not
   * an event loop blocked.)
   */
  function assertPrompt(name: string, answers: Array<{ status: number; ms: number }>): void {
    const times = answers.map((a) => a.ms).sort((a, b) => a - b);
    const summary = `${name}: median ${Math.round(times[times.length >> 1] as number)} ms, slowest ${Math.round(times.at(-1) as number)} ms`;
    assert.ok((times[times.length >> 1] as number) < 100, summary);
    assert.ok((times.at(-1) as number) < 500, summary);
    for (const answer of answers) assert.equal(answer.status, 200, name);
  }

  const write = (base: string, text: string) =>
    timed(`${base}/api/notes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });

  /** `count` probes of `url`, one every 20 ms, while `during` runs; the answers. */
  async function probe(url: string, count: number): Promise<Array<{ status: number; ms: number }>> {
    const answers = [];
    for (let i = 0; i < count; i++) {
      answers.push(await timed(url));
      await sleep(20);
    }
    return answers;
  }

  describe('SQLite while another connection holds the write lock', () => {
    it('/livez and /healthz answer within 100 ms (40 probes each, the median; none past 500 ms), the check stays healthy, reads answer, and waiting writes answer 201 once the lock frees', async () => {
      const file = path.join(dir, 'held.db');
      const { app, base, lines } = await serve(file, 5000);
      const other = new Sqlite(file);
      try {
        assert.equal((await write(base, 'before')).status, 201);
        other.exec('begin immediate');
        const writes = Promise.all(['w1', 'w2', 'w3'].map((text) => write(base, text)));
        const [livez, healthz, reads] = await Promise.all([
          probe(`${base}/livez`, 40),
          probe(`${base}/healthz`, 40),
          probe(`${base}/api/notes/1`, 20),
        ]);
        other.exec('commit');
        const written = await writes;
        assertPrompt('/livez', livez);
        assertPrompt('/healthz', healthz);
        for (const answer of reads)
          assert.equal(answer.status, 200, 'a read waits for no lock (WAL)');
        for (const answer of written) assert.equal(answer.status, 201, answer.body);
        assert.equal(JSON.parse((await timed(`${base}/api/notes`)).body).total, 4);
        assert.equal(lines.filter((l) => /unavailable/i.test(l.msg)).length, 0);
      } finally {
        other.close();
        await app.close();
      }
    });

    it('a write that waits longer than acquireTimeoutMs answers 503 busy with Retry-After: 1 when it passes, nothing written; the database is not called down; after the lock, writes succeed', async () => {
      const file = path.join(dir, 'busy.db');
      const { app, base, lines } = await serve(file, 400);
      const other = new Sqlite(file);
      try {
        assert.equal((await write(base, 'before')).status, 201);
        other.exec('begin immediate');
        const refused = await Promise.all(
          Array.from({ length: 5 }, (_, i) => write(base, `refused-${i}`)),
        );
        const health = await timed(`${base}/healthz`);
        other.exec('commit');
        for (const answer of refused) {
          assert.equal(answer.status, 503, answer.body);
          assert.equal(answer.retryAfter, '1');
          assert.match(JSON.parse(answer.body).detail, /busy/);
          // Promptly: at acquireTimeoutMs, not at a 5 s busy_timeout (a generous margin for a loaded machine).
          assert.ok(answer.ms >= 380 && answer.ms < 2500, `answered in ${answer.ms} ms`);
        }
        assert.equal(health.status, 200, health.body);
        assert.equal(JSON.parse(health.body).checks.database.status, 'healthy');
        assert.equal(
          lines.filter((l) => /unavailable/i.test(l.msg)).length,
          0,
          JSON.stringify(lines),
        );
        assert.equal(
          other.prepare("select count(*) as n from notes where text like 'refused-%'").get()?.n,
          0,
        );
        assert.equal((await write(base, 'after')).status, 201);
      } finally {
        other.close();
        await app.close();
      }
    });
  });

  describe('transactions on the node:sqlite driver', () => {
    function kysely(
      database: DatabaseSync,
      acquireTimeoutMs: number,
    ): Kysely<Record<string, { x: number }>> {
      return new Kysely({
        dialect: {
          createAdapter: () => new SqliteAdapter(),
          createDriver: () => new NodeSqliteDriver(() => database, acquireTimeoutMs),
          createQueryCompiler: () => new SqliteQueryCompiler(),
          createIntrospector: (db) => new SqliteIntrospector(db),
        },
      });
    }

    function open(file: string, journal: 'wal' | 'delete'): Connection {
      const connection = new Sqlite(file);
      connection.exec(
        `pragma busy_timeout = 0; pragma journal_mode = ${journal}; create table if not exists t (x integer)`,
      );
      return connection;
    }

    it('BEGIN IMMEDIATE waits for another writer on timers, the event loop running meanwhile', async () => {
      const file = path.join(dir, 'tx-begin.db');
      const mine = open(file, 'wal');
      const other = open(file, 'wal');
      const db = kysely(mine, 3000);
      other.exec('begin immediate');
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 10);
      setTimeout(() => other.exec('commit'), 300);
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('t').values({ x: 1 }).execute();
      });
      clearInterval(ticker);
      assert.ok(
        ticks >= 10,
        `the event loop ran ${ticks} timer ticks while the transaction waited`,
      );
      assert.equal(other.prepare('select count(*) as n from t').get()?.n, 1);
      await db.destroy();
      mine.close();
      other.close();
    });

    it('a COMMIT that meets readers of a rollback-journal database is tried again until they finish', async () => {
      const file = path.join(dir, 'tx-commit.db');
      const mine = open(file, 'delete');
      const reader = open(file, 'delete');
      const db = kysely(mine, 3000);
      reader.exec('begin');
      reader.prepare('select count(*) from t').get();
      setTimeout(() => reader.exec('commit'), 300);
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('t').values({ x: 2 }).execute();
      });
      assert.equal(reader.prepare('select count(*) as n from t where x = 2').get()?.n, 1);
      await db.destroy();
      mine.close();
      reader.close();
    });

    it('a statement that meets the lock inside a transaction is not tried again: the transaction rolls back with DatabaseBusyError at once', async () => {
      const file = path.join(dir, 'tx-inside.db');
      const mine = open(file, 'wal');
      const other = open(file, 'wal');
      const db = kysely(mine, 3000);
      const started = performance.now();
      await assert.rejects(
        db
          .transaction()
          .setAccessMode('read only')
          .execute(async (trx) => {
            // A deferred transaction reads (its snapshot), another connection writes, then this one
            // tries to write: SQLite answers BUSY_SNAPSHOT, which no amount of waiting fixes.
            await sql`select count(*) from t`.execute(trx);
            other.exec('insert into t values (9)');
            await trx.insertInto('t').values({ x: 3 }).execute();
          }),
        (err: unknown) => err instanceof DatabaseBusyError,
      );
      assert.ok(performance.now() - started < 1000, 'failed at once, not after acquireTimeoutMs');
      assert.equal(
        other.prepare('select count(*) as n from t where x = 3').get()?.n,
        0,
        'rolled back',
      );
      // The connection is free again: the next transaction runs.
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('t').values({ x: 4 }).execute();
      });
      await db.destroy();
      mine.close();
      other.close();
    });
  });
}
