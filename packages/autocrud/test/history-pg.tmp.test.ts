import { after, before } from 'node:test';
import { describePostgres, PostgresServer } from './postgres-server.ts';
import { historySuite } from './suite/history.ts';
import type { EngineUnderTest } from './suite/fixtures.ts';
describePostgres('PostgreSQL', () => {
  let server: PostgresServer;
  const engine: EngineUnderTest = { name: 'PostgreSQL', flavour: 'postgres', get connection() { return server.url; }, async sql(text) { return (await server.sql(text)).rows as Array<Record<string, unknown>>; } };
  before(async () => { server = await PostgresServer.start(); });
  after(async () => { await server?.dispose(); });
  historySuite(engine);
});
