// @test-lines: once - the change SQL through Kit's API on each engine
// The one-statement recorded write's change rows against the JavaScript sinks' (suite/change-sql.ts),
// on PGlite and on a real PostgreSQL, each with a session time zone far from UTC (and the process's
// own TZ, whatever it is: `TZ=Pacific/Kiritimati node scripts/test.mjs change-sql`).
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { after, before, it } from 'node:test';
import Fastify from 'fastify';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud } from '@kit/autocrud';
import { changeSqlSuite, SqlHard, SqlHardEndpoint } from './suite/change-sql.ts';
import { describePostgres, PostgresServer } from '@kit/test-support/postgres';
import { freshPGlite } from './suite/engines.ts';

const pglite = await freshPGlite();
// PGlite is one session: its time zone is every statement's.
before(async () => {
  await pglite.exec("set timezone to 'America/St_Johns'");
});
after(() => pglite.close());

changeSqlSuite({
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
    // Every session Kit opens starts in a time zone 13 hours from UTC.
    server = await PostgresServer.start({
      settings: { log_statement: 'all', timezone: 'Pacific/Kiritimati' },
    });
  });
  after(async () => {
    await server?.stop();
  });
  changeSqlSuite({
    name: 'PostgreSQL',
    flavour: 'postgres',
    get connection() {
      return server.url;
    },
    async sql(text) {
      return (await server.sql(text)).rows as Array<Record<string, unknown>>;
    },
  });
  it('the sessions run in Pacific/Kiritimati (what the suite above ran under)', async () => {
    assert.equal(
      (await server.sql("select current_setting('TimeZone') as tz")).rows[0].tz,
      'Pacific/Kiritimati',
    );
  });
  it('the statement log shows each single recorded write as one named statement, no BEGIN or COMMIT', async () => {
    await server.sql(
      'drop table if exists csql_hard, kit_changes, kit_outbox, kit_outbox_dead, kit_outbox_lease',
    );
    const app = Fastify();
    addKit(app, [SqlHardEndpoint]);
    const crud = addKitAutoCrud(app, server.url, {
      createTables: true,
      outbox: { dispatch: false },
    });
    await useKit(app);
    await app.ready();
    try {
      const start = statSync(server.log).size;
      const repo = crud.repository(SqlHard);
      const row = (await repo.create({
        count: 1,
        amount: 1,
        flag: true,
        label: 'a',
        ref: null,
        at: '2024-01-01T00:00:00Z',
        price: '1',
        big: '1',
      })) as { id: number };
      await repo.patch(row.id, { count: 2 });
      await repo.update(row.id, {
        count: 3,
        amount: 1,
        flag: true,
        label: 'a',
        ref: null,
        at: '2024-01-01T00:00:00Z',
        price: '1',
        big: '1',
      });
      await repo.delete(row.id);
      const statements = (
        await server.logSince(start, (text) =>
          /LOG: {2}(?:statement|execute [^:]*):.*delete from "csql_hard"/.test(text),
        )
      )
        .split('\n')
        .filter((line) => /LOG: {2}(?:statement|execute [^:]*):/.test(line));
      const writes = statements.filter((line) => line.includes('"csql_hard"'));
      assert.equal(writes.length, 4, statements.map((line) => line.slice(0, 160)).join('\n'));
      for (const line of writes) assert.match(line, /LOG: {2}execute kit_[^:]*: with "kit_/, line);
      assert.equal(
        statements.filter((line) =>
          /\b(?:begin|commit)\b/i.test(line.split(':').slice(3).join(':')),
        ).length,
        0,
        statements.join('\n'),
      );
      assert.equal(
        Number(
          (await server.sql("select count(*)::int as n from kit_changes where entity = 'SqlHard'"))
            .rows[0].n,
        ),
        4,
      );
      assert.equal(
        Number(
          (await server.sql("select count(*)::int as n from kit_outbox where entity = 'SqlHard'"))
            .rows[0].n,
        ),
        4,
      );
    } finally {
      await app.close();
    }
  });
});
