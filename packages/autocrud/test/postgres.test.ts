// The conformance and hostile-input suites on a real PostgreSQL server the test starts itself
// (Debian's binaries, a temporary directory, a free loopback port).
import { after, before } from 'node:test';
import { crudSuite } from './suite/crud.ts';
import type { EngineUnderTest } from './suite/fixtures.ts';
import { hostileSuite } from './suite/hostile.ts';
import { startupSuite } from './suite/startup.ts';
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
});
