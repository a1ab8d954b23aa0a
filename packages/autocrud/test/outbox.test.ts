// The outbox conformance suite (suite/outbox.ts) on the three engines: PGlite, a real PostgreSQL
// server the test starts, and node:sqlite (Node >= 22.13; skipped, and said so, before).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { sqliteAvailable } from '../src/mapper/sqlite.ts';
import { describePostgres, PostgresServer } from './postgres-server.ts';
import { outboxSuite } from './suite/outbox.ts';

const pglite = new PGlite();
before(() => pglite.waitReady);
after(() => pglite.close());
outboxSuite({
  name: 'PGlite',
  flavour: 'postgres',
  connection: pglite,
  async sql(text) {
    return (await pglite.query<Record<string, unknown>>(text)).rows;
  },
});

describePostgres('PostgreSQL', () => {
  let server: PostgresServer;
  before(async () => {
    server = await PostgresServer.start();
  });
  after(async () => {
    await server?.dispose();
  });
  outboxSuite({
    name: 'PostgreSQL',
    flavour: 'postgres',
    get connection() {
      return server.url;
    },
    async sql(text) {
      return (await server.sql(text)).rows as Array<Record<string, unknown>>;
    },
  });
});

if (!sqliteAvailable()) {
  it('AutoCrud outbox on node:sqlite', (t) => t.skip(`node:sqlite is not in Node ${process.version} (it is from 22.13 and 23.4)`));
} else {
  interface DatabaseSync {
    prepare(sql: string): { all(): Array<Record<string, unknown>>; run(): unknown };
    close(): void;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'kit-outbox-'));
  const file = path.join(dir, 'outbox.db');
  const { DatabaseSync } = process.getBuiltinModule('node:sqlite') as { DatabaseSync: new (file: string) => DatabaseSync };
  const direct = new DatabaseSync(file);
  after(() => {
    direct.close();
    rmSync(dir, { recursive: true, force: true });
  });
  outboxSuite({
    name: 'node:sqlite',
    flavour: 'sqlite',
    connection: `sqlite:${file}`,
    async sql(text) {
      const stmt = direct.prepare(text);
      if (/^\s*select/i.test(text)) return stmt.all();
      stmt.run();
      return [];
    },
  });
}
