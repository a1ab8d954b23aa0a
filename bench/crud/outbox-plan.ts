// `node --conditions=kit-source --import tsx bench/crud/outbox-plan.ts`: the plans PostgreSQL picks
// for the outbox dispatcher's read (mapper/outbox-records.ts `dueRecords`) with a backlog: 10,000
// records waiting in kit_outbox (every 97th waiting for a retry an hour away, the rest due), and
// 10,000 dead ones in kit_outbox_dead. The tables are made by Kit's own createTables; the statements are the dispatcher's text, prepared with a generic plan as its
// named statements are. Prints EXPLAIN (ANALYZE, BUFFERS) of each, and how many of 100 retries
// PostgreSQL made in place (HOT).
import Fastify from 'fastify';
import pg from 'pg';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud, AutoCrud, CrudOperations } from '@kit/autocrud';
import { PostgresServer } from '@kit/test-support/postgres';
import { catalogEntity, SCHEMA } from './shape.js';

const database = await PostgresServer.start();
for (const statement of SCHEMA) await database.sql(statement);
const Product = catalogEntity();
@AutoCrud(Product, { operations: CrudOperations.All })
class ProductsEndpoint {}
const app = Fastify({ logger: false });
addKit(app, [ProductsEndpoint]);
addKitAutoCrud(app, database.url, { poolSize: 2, createTables: true, outbox: { dispatch: false } });
await useKit(app);
await app.ready();
await app.close();

const payload = JSON.stringify({
  after: { id: 1, name: 'widget', price: 12.5, stock: 3, category: 'tools' },
});
const now = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
// 10,000 records over 5,000 rows; every 97th waits for a retry an hour away (its row's later ones are held).
await database.sql(`insert into kit_outbox (id, entity, row_key, operation, version_after, payload, next_at, attempts)
  select gen_random_uuid()::text, 'Product', (g % 5000)::text, 'create', 1, '${payload}', case when g % 97 = 0 then ${now} + 3600000 else 0 end, case when g % 97 = 0 then 1 else 0 end
  from generate_series(1, 10000) g`);
await database.sql(`insert into kit_outbox_dead (seq, id, entity, row_key, operation, version_after, payload, attempts, done, last_error)
  select 100000 + g, gen_random_uuid()::text, 'Product', (g % 5000)::text, 'create', 1, '${payload}', 10, '', 'refused' from generate_series(1, 10000) g`);
await database.sql('vacuum analyze kit_outbox');
await database.sql('vacuum analyze kit_outbox_dead');

const clock = Number((await database.sql(`select ${now} as t`)).rows[0].t);
// Prepared, with a generic plan (what a named statement gets after its fifth run).
const client = new pg.Client({ connectionString: database.url });
await client.connect();
await client.query('set plan_cache_mode = force_generic_plan');
await client.query(`prepare due(bigint, bigint) as
  with d as (select * from kit_outbox where next_at <= $1 order by seq limit $2),
  w as (select entity, row_key, min(seq) as seq from kit_outbox where next_at > $1 and seq < (select max(seq) from d) group by entity, row_key)
  select d.seq, d.id, d.entity, d.row_key, case when w.seq < d.seq then 1 else 0 end as held
  from d left join w on w.entity = d.entity and w.row_key = d.row_key order by d.seq`);
await client.query('prepare gone(bigint[]) as delete from kit_outbox where seq = any($1)');
const explain = async (name: string, text: string) => {
  const { rows } = await client.query(
    `explain (analyze, buffers, costs off, timing off, summary off) ${text}`,
  );
  console.log(
    `## ${name}\n\n${rows.map((r: Record<string, string>) => `    ${r['QUERY PLAN']}`).join('\n')}\n`,
  );
};
await explain(
  'the due read (dueRecords), batch 200, the first batch',
  `execute due(${clock}, 200)`,
);
// 2,000 records delivered (deleted): read once before autovacuum came by (the scan steps over the
// deleted records' index entries, and marks them dead for the next one), then after it.
await client.query(
  `delete from kit_outbox where seq in (select seq from kit_outbox where next_at <= ${clock} order by seq limit 2000)`,
);
await explain(
  'the due read, 2,000 records delivered, not yet vacuumed',
  `execute due(${clock}, 200)`,
);
await explain('the same read again', `execute due(${clock}, 200)`);
await client.query('vacuum kit_outbox');
await explain('the due read, 2,000 records delivered, vacuumed', `execute due(${clock}, 200)`);
const batch = (
  await client.query(`select seq from kit_outbox where next_at <= ${clock} order by seq limit 200`)
).rows.map((r: { seq: string }) => r.seq);
await explain(
  'the delete of a delivered batch (deleteDelivered), 200 records',
  `execute gone('{${batch.join(',')}}')`,
);
await explain(
  'the backlog (backlog)',
  'select (select count(*) from kit_outbox) as pending, (select count(*) from kit_outbox_dead) as dead',
);
// A failed attempt's update (markRetry) touches no indexed column: PostgreSQL may update in place
// (HOT) where the page has room. 100 retries, counted in this transaction's statistics.
await client.query('begin');
await client.query(
  `update kit_outbox set attempts = attempts + 1, next_at = ${clock} + 1000, done = '', last_error = 'refused' where seq in (select seq from kit_outbox order by seq limit 100)`,
);
const { rows: hot } = await client.query(
  `select n_tup_upd as updated, n_tup_hot_upd as hot from pg_stat_xact_user_tables where relname = 'kit_outbox'`,
);
await client.query('rollback');
console.log(`## 100 retries (markRetry): ${JSON.stringify(hot[0])}\n`);
await client.end();
await database.dispose();
