// @test-lines: once - heavy: crashes under load, once per CI run
// A bulk create is one transaction: when the PostgreSQL backend running it is terminated
// (pg_terminate_backend) at a random moment while 500 rows go in, the table holds all 500 or none
// of them, never a part; an answered 201 always means 500. Many rounds: half at a moment spread over
// the request's whole duration (measured first), so that rounds die early, late and not at all;
// half inside the transaction for certain: another session holds the table's lock, so the insert
// waits in its open transaction until the kill. The transaction alone is too short now that the rows
// go in one multi-row statement: waiting to see it, 27 of 30 rounds and once all 30 completed.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { heavy } from '@kit/test-support/heavy';
import { crudApp, ProductEndpoint, suiteTables, type EngineUnderTest } from './suite/fixtures.ts';
import { serverEngine } from './suite/engines.ts';
import { describePostgres, PostgresServer } from '@kit/test-support/postgres';

const ROWS = 500;
const ROUNDS = 30;
/** How long a kill waits for the backend to exit. */
const KILL_WAIT_MS = 10_000;

heavy('a terminated backend leaves a bulk create all or nothing', () => {
  describePostgres('bulk create under pg_terminate_backend (PostgreSQL)', () => {
    let server: PostgresServer;
    let app: FastifyInstance;

    before(async () => {
      server = await PostgresServer.start();
      const engine: EngineUnderTest = serverEngine(server);
      for (const statement of suiteTables('postgres')) await server.sql(statement);
      app = await crudApp(engine, {}, undefined, [ProductEndpoint], { logger: false });
    });
    after(async () => {
      await app?.close();
      await server?.dispose();
    });

    const batch = (round: string) =>
      Array.from({ length: ROWS }, (_, i) => ({ name: `${round}-${i}`, price: i, stock: i }));
    const post = (round: string) =>
      app.inject({ method: 'POST', url: '/api/product', payload: batch(round) });
    // Another session's exclusive lock on the table: Kit's insert waits for it inside its transaction.
    const holdLock = async () => {
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      await client.query('begin');
      await client.query('lock table products in exclusive mode');
      return async () => {
        await client.query('commit');
        await client.end();
      };
    };
    const stored = async (round: string) =>
      Number(
        (await server.sql(`select count(*) as n from products where name like '${round}-%'`))
          .rows[0].n,
      );

    it(`${ROUNDS} rounds: 0 or ${ROWS} rows each, 201 only with ${ROWS}; some rounds interrupted, some complete`, async (t) => {
      // How long one batch takes here, to spread the kills over it.
      const started = performance.now();
      assert.equal((await post('warm')).statusCode, 201);
      const duration = performance.now() - started;
      const outcomes = { complete: 0, interrupted: 0 };
      for (let round = 0; round < ROUNDS; round++) {
        const name = `r${round}`;
        // Odd rounds: the lock is taken first, so Kit's insert waits for it inside its transaction.
        const release = round % 2 === 1 ? await holdLock() : undefined;
        let answered = false;
        const answer = post(name).finally(() => (answered = true));
        if (release === undefined) await sleep(Math.random() * duration * 1.2);
        else
          while (
            !answered &&
            (
              await server.sql(
                "select 1 from pg_stat_activity where application_name = 'kit-autocrud' and xact_start is not null and wait_event_type = 'Lock'",
              )
            ).rowCount === 0
          )
            await sleep(5);
        // pg_terminate_backend only signals: a loaded backend may still run (even be granted the
        // lock released next, or serve the next round) after it returned; with a timeout it waits
        // until the backend is gone, so the kill lands here and nowhere later.
        const killed = await server.sql(
          `select pg_terminate_backend(pid, ${KILL_WAIT_MS}) as gone from pg_stat_activity where application_name = 'kit-autocrud'`,
        );
        assert.ok(
          killed.rows.every((r: { gone: boolean }) => r.gone),
          `round ${round}: a terminated backend still ran after ${KILL_WAIT_MS} ms`,
        );
        await release?.();
        const res = await answer;
        const count = await stored(name);
        assert.ok(
          count === 0 || count === ROWS,
          `round ${round}: ${count} rows stored (killed ${killed.rowCount} backends, answered ${res.statusCode})`,
        );
        if (res.statusCode === 201)
          assert.equal(count, ROWS, `round ${round}: 201 with ${count} rows`);
        else assert.equal(res.statusCode, 503, `round ${round}: ${res.statusCode} ${res.body}`);
        if (count === ROWS) outcomes.complete++;
        else outcomes.interrupted++;
      }
      t.diagnostic(JSON.stringify(outcomes));
      // Both outcomes happened, so the kills did land inside the transaction.
      assert.ok(outcomes.interrupted > 0, JSON.stringify(outcomes));
      assert.ok(outcomes.complete > 0, JSON.stringify(outcomes));
      // And the service serves afterwards.
      assert.equal((await post('after')).statusCode, 201);
      assert.equal(await stored('after'), ROWS);
    });
  });
});
