// The three engines the suites run on, each as a test file opens it: a real PostgreSQL server the
// file starts (Debian's binaries, a free loopback port), an in-process PGlite, and a node:sqlite
// file. Each helper registers the `before`/`after` hooks of the scope it is called in, so a test
// file (or one of its describe blocks) owns its database and closes it. One definition of each
// engine's direct SQL, lock holding and cleanup, for every test file that runs the suites.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { startInDirectory, startInMemory } from '../../src/mapper/engines/pglite/snapshot.ts';
import { heavy } from '@kit/test-support/heavy';
import { PostgresServer, type PostgresServerSettings } from '@kit/test-support/postgres';
import { sqliteAvailable } from '../../src/mapper/engines/sqlite/engine.ts';
import type { EngineSession, EngineUnderTest } from './fixtures.ts';

/** PostgreSQL's engine under test, and its server once started (its data directory holds the server's log). */
export interface PostgresEngine {
  readonly engine: EngineUnderTest;
  server(): PostgresServer;
}

/**
 * PostgreSQL's engine under test on a server the test started itself (and stops, restarts or
 * disposes of as its subject needs): the server's URL and direct SQL, no lock holding.
 */
export function serverEngine(server: PostgresServer): EngineUnderTest {
  return {
    name: 'PostgreSQL',
    flavour: 'postgres',
    connection: server.url,
    sql: async (text) => (await server.sql(text)).rows as Array<Record<string, unknown>>,
  };
}

/**
 * A PostgreSQL server started before the scope's tests and disposed after them, with `options`
 * (e.g. `{ settings: { log_statement: 'all' } }`). Call it inside `describePostgres`, which skips
 * (or fails in CI) where PostgreSQL is not installed.
 */
export function postgresEngine(options: PostgresServerSettings = {}): PostgresEngine {
  let server: PostgresServer | undefined;
  const started = (): PostgresServer => {
    if (!server) throw new Error('the PostgreSQL server is not started yet: use it inside a test');
    return server;
  };
  before(async () => {
    server = await PostgresServer.start(options);
  });
  after(async () => {
    await server?.dispose();
  });
  const engine: EngineUnderTest = {
    name: 'PostgreSQL',
    flavour: 'postgres',
    get connection() {
      return started().url;
    },
    async sql(text) {
      return (await started().sql(text)).rows as Array<Record<string, unknown>>;
    },
    async lockWaiters() {
      return Number(
        (await started().sql('select count(*) as n from pg_locks where not granted')).rows[0].n,
      );
    },
    // Another session locks the table against writes until released.
    async hold(table) {
      const client = new pg.Client({ connectionString: started().url });
      await client.connect();
      await client.query('begin');
      await client.query(`lock table ${table} in exclusive mode`);
      return async () => {
        await client.query('commit');
        await client.end();
      };
    },
    // A connection of its own: its transaction runs beside Kit's, under the server's locks.
    async session() {
      const client = new pg.Client({ connectionString: started().url });
      await client.connect();
      return {
        async transaction(statements) {
          await client.query('begin');
          try {
            const rows = [];
            for (const text of statements)
              rows.push((await client.query(text)).rows as Array<Record<string, unknown>>);
            await client.query('commit');
            return rows;
          } catch (err) {
            await client.query('rollback');
            throw err;
          }
        },
        close: () => client.end(),
      };
    },
  };
  return { engine, server: started };
}

/**
 * A new in-memory PGlite started as Kit's `pglite:` engine starts one (src/mapper/pglite-snapshot.ts):
 * from the fresh cluster saved beside the installed PGlite. initdb in WASM takes 7 s of a core on a
 * loaded machine, loading the saved cluster about 2 s, and eight test files start one.
 */
export async function freshPGlite(): Promise<PGlite> {
  return (await startInMemory({})).db;
}

/** A new PGlite of the test's own on `directory` (new or empty), seeded as Kit's engine seeds one: from the saved fresh cluster, not initdb. */
export async function freshPGliteIn(directory: string): Promise<PGlite> {
  mkdirSync(directory, { recursive: true });
  return (await startInDirectory(directory, {})).db;
}

/** An in-process PGlite database (`freshPGlite()` unless given), ready before the scope's tests and closed after them. */
export function pgliteEngine(given?: PGlite): EngineUnderTest {
  let pglite: PGlite | undefined = given;
  const started = (): PGlite => {
    if (!pglite) throw new Error('PGlite is not started yet: use it inside a test');
    return pglite;
  };
  before(async () => {
    pglite ??= await freshPGlite();
    await pglite.waitReady;
  });
  after(() => pglite?.close());
  const numbers = (rows: Array<Record<string, unknown>>) =>
    rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v]),
      ),
    );
  return {
    name: 'PGlite',
    flavour: 'postgres',
    get connection() {
      return started();
    },
    async sql(text) {
      return numbers((await started().query<Record<string, unknown>>(text)).rows);
    },
    // PGlite has one session: its transactions, Kit's and these, run one at a time.
    async session(): Promise<EngineSession> {
      return {
        transaction: (statements) =>
          started().transaction(async (tx) => {
            const rows = [];
            for (const text of statements)
              rows.push(numbers((await tx.query<Record<string, unknown>>(text)).rows));
            return rows;
          }),
        close: async () => {},
      };
    },
    // PGlite runs one statement at a time, a transaction exclusively: an open one makes Kit's wait.
    async hold() {
      let begun!: () => void;
      let open!: () => void;
      const holding = new Promise<void>((resolve) => (begun = resolve));
      const gate = new Promise<void>((resolve) => (open = resolve));
      const done = started().transaction(async () => {
        begun();
        await gate;
      });
      await holding;
      return async () => {
        open();
        await done;
      };
    },
  };
}

interface DatabaseSync {
  prepare(sql: string): { all(): Array<Record<string, unknown>>; run(): unknown };
  exec(sql: string): void;
  close(): void;
}

/**
 * A node:sqlite database file in a fresh temporary directory, with a direct connection of its own
 * beside Kit's; both removed after the scope's tests. Only where `sqliteAvailable()` (Node >= 22.13).
 */
export function sqliteEngine(prefix = 'kit-sqlite-'): EngineUnderTest {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const file = path.join(dir, 'suite.db');
  const { DatabaseSync } = process.getBuiltinModule('node:sqlite') as {
    DatabaseSync: new (file: string) => DatabaseSync;
  };
  const direct = new DatabaseSync(file);
  after(() => {
    direct.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    name: 'node:sqlite',
    flavour: 'sqlite',
    connection: `sqlite:${file}`,
    async sql(text) {
      const stmt = direct.prepare(text);
      if (/^\s*select/i.test(text)) return stmt.all();
      stmt.run();
      return [];
    },
    // Another connection's write lock: Kit's writes wait for it on timers, the event loop serving meanwhile.
    async hold() {
      direct.exec('begin immediate');
      return async () => direct.exec('commit');
    },
    // The direct connection: its transaction runs whole in one turn of the event loop (node:sqlite
    // is synchronous), once Kit holds no write lock (SQLITE_BUSY until then: tried again 1 ms later).
    async session(): Promise<EngineSession> {
      return {
        async transaction(statements) {
          for (;;) {
            try {
              direct.exec('begin immediate');
              break;
            } catch (err) {
              if (!/locked|busy/i.test(String((err as Error).message))) throw err;
              await sleep(1);
            }
          }
          try {
            const rows = statements.map((text) => {
              const stmt = direct.prepare(text);
              if (/^\s*select/i.test(text)) return stmt.all();
              stmt.run();
              return [];
            });
            direct.exec('commit');
            return rows;
          } catch (err) {
            direct.exec('rollback');
            throw err;
          }
        },
        close: async () => {},
      };
    },
  };
}

/**
 * `heavy` for a suite of processes on one SQLite file: where this Node has no `node:sqlite`, one
 * test in its place that says why and is skipped.
 */
export const heavyOnSqlite: (name: string, fn: () => void) => void = sqliteAvailable()
  ? heavy
  : (name) =>
      void it(name, (t) =>
        t.skip(`node:sqlite is not in Node ${process.version} (it is from 22.13 and 23.4)`),
      );

/** A direct `node:sqlite` connection to a file, beside the service processes that write it. */
export interface SqliteConnection {
  prepare(sql: string): { all(): Array<Record<string, unknown>> };
  close(): void;
}

/**
 * Opens `file` directly once the processes that wrote it are gone and checks that SQLite finds
 * it whole (`pragma integrity_check` is `ok`); the caller reads what it checks and closes it.
 */
export function openIntact(file: string): SqliteConnection {
  const { DatabaseSync } = process.getBuiltinModule('node:sqlite') as {
    DatabaseSync: new (file: string) => SqliteConnection;
  };
  const direct = new DatabaseSync(file);
  try {
    assert.deepEqual(
      direct
        .prepare('pragma integrity_check')
        .all()
        .map((r) => r.integrity_check),
      ['ok'],
    );
  } catch (err) {
    direct.close();
    throw err;
  }
  return direct;
}
