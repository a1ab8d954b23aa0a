// The values suite on every engine this runtime has, in the time zone the process was started
// with (TZ must be set before Node starts: time-zones.test.ts runs this file in a child process).
// Not a *.test.ts: it only runs that way.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { sqliteAvailable } from '../../src/mapper/sqlite.ts';
import { describePostgres, PostgresServer } from '../postgres-server.ts';
import type { EngineUnderTest } from '../suite/fixtures.ts';
import { valuesSuite } from '../suite/values.ts';

describePostgres('PostgreSQL', () => {
  let server: PostgresServer;
  before(async () => {
    server = await PostgresServer.start();
  });
  after(async () => {
    await server?.dispose();
  });
  valuesSuite({
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

describe('PGlite', () => {
  const pglite = new PGlite();
  before(() => pglite.waitReady);
  after(() => pglite.close());
  const engine: EngineUnderTest = {
    name: 'PGlite',
    flavour: 'postgres',
    connection: pglite,
    async sql(text) {
      const result = await pglite.query<Record<string, unknown>>(text);
      return result.rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])));
    },
  };
  valuesSuite(engine);
});

if (sqliteAvailable()) {
  describe('node:sqlite', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kit-sqlite-tz-'));
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite') as { DatabaseSync: new (file: string) => { prepare(sql: string): { all(): Array<Record<string, unknown>>; run(): unknown }; close(): void } };
    const direct = new DatabaseSync(path.join(dir, 'tz.db'));
    after(() => {
      direct.close();
      rmSync(dir, { recursive: true, force: true });
    });
    valuesSuite({
      name: 'node:sqlite',
      flavour: 'sqlite',
      connection: `sqlite:${path.join(dir, 'tz.db')}`,
      async sql(text) {
        const stmt = direct.prepare(text);
        if (/^\s*select/i.test(text)) return stmt.all();
        stmt.run();
        return [];
      },
    });
  });
}
