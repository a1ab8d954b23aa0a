// The conformance and hostile-input suites on a real PostgreSQL server the test starts itself
// (Debian's binaries, a temporary directory, a free loopback port).
import { after, before } from 'node:test';
import { crudSuite } from './suite/crud.ts';
import type { EngineUnderTest } from './suite/fixtures.ts';
import pg from 'pg';
import { cursorSuite } from './suite/cursors.ts';
import { hostileSuite } from './suite/hostile.ts';
import { idempotencySuite } from './suite/idempotency.ts';
import { versionSuite } from './suite/versions.ts';
import { startupSuite } from './suite/startup.ts';
import { valuesSuite } from './suite/values.ts';
import { quietSuite } from './suite/quiet.ts';
import { typesSuite } from './suite/types.ts';
import { patchSuite } from './suite/patch.ts';
import { atomicSuite } from './suite/atomic.ts';
import { bulkSuite } from './suite/bulk.ts';
import { nestedSuite } from './suite/nested.ts';
import { upsertSuite } from './suite/upsert.ts';
import { selectSuite } from './suite/select.ts';
import { relationsSuite } from './suite/relations.ts';
import { includesSuite } from './suite/includes.ts';
import { includeValuesSuite } from './suite/include-values.ts';
import { historySuite } from './suite/history.ts';
import { describePostgres, PostgresServer } from './postgres-server.ts';

describePostgres('PostgreSQL', () => {
  let server: PostgresServer;
  const engine: EngineUnderTest = {
    name: 'PostgreSQL',
    flavour: 'postgres',
    get connection() {
      return server.url;
    },
    async sql(text) {
      return (await server.sql(text)).rows as Array<Record<string, unknown>>;
    },
    async lockWaiters() {
      return Number((await server.sql('select count(*) as n from pg_locks where not granted')).rows[0].n);
    },
    // Another session locks the table against writes until released.
    async hold(table) {
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      await client.query('begin');
      await client.query(`lock table ${table} in exclusive mode`);
      return async () => {
        await client.query('commit');
        await client.end();
      };
    },
  };
  before(async () => {
    server = await PostgresServer.start();
  });
  after(async () => {
    await server?.dispose();
  });

  crudSuite(engine);
  hostileSuite(engine);
  startupSuite(engine);
  idempotencySuite(engine);
  versionSuite(engine);
  cursorSuite(engine);
  valuesSuite(engine);
  quietSuite(engine);
  typesSuite(engine);
  patchSuite(engine);
  atomicSuite(engine);
  bulkSuite(engine);
  nestedSuite(engine);
  upsertSuite(engine);
  selectSuite(engine);
  relationsSuite(engine);
  includesSuite(engine);
  includeValuesSuite(engine);
  historySuite(engine);
});
