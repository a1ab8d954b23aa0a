// The outbox dispatcher alone: what delivering and marking one record costs, in this process's
// CPU and PostgreSQL's, with nothing else running. One Kit AutoCrud app (outbox on, one in-process
// subscriber that does nothing) on a real PostgreSQL 15; each round inserts N records straight
// into kit_outbox (one statement, due a moment later so the insert is not counted), then waits
// until the dispatcher has delivered them all. Medians of the rounds are reported.
// Options: --records=N (20000), --rounds=R (5), --batch=B (the outbox's batchSize, 200),
// --profile (writes a .cpuprofile of the rounds to the temporary directory).
// Usage: node --conditions=kit-source --import tsx bench/crud/outbox-dispatch.ts [--records=20000]
import { writeFileSync } from 'node:fs';
import { databaseCpuUs as databaseCpu } from './database-cpu.js';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud, AutoCrud, CrudOperations } from '@kit/autocrud';
import { PostgresServer } from '@kit/test-support/postgres';
import { median } from '../harness.js';
import { catalogEntity, SCHEMA } from './shape.js';

const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const records = Number(arg('records') ?? 20_000);
const rounds = Number(arg('rounds') ?? 5);
const batchSize = Number(arg('batch') ?? 200);
const profile = process.argv.includes('--profile');
const log = (...a: unknown[]) => console.error('[bench:outbox-dispatch]', ...a);

const loadAtStart = os.loadavg().map((l) => Math.round(l * 100) / 100);
const database = await PostgresServer.start();
for (const statement of SCHEMA) await database.sql(statement);

/** CPU time (µs) of every process of the benchmark's PostgreSQL server (database-cpu.ts). */
function databaseCpuUs(): number {
  return databaseCpu(path.join(database.dir, 'data'));
}

const Product = catalogEntity();
@AutoCrud(Product, { operations: CrudOperations.All })
class ProductsEndpoint {}
const app = Fastify({ logger: false });
addKit(app, [ProductsEndpoint]);
const crud = addKitAutoCrud(app, database.url, {
  poolSize: 10,
  createTables: true,
  outbox: { batchSize },
});
crud.onChange(Product, () => undefined, { name: 'bench' });
await useKit(app);
await app.ready();
while (!crud.outboxStats()?.leader) await new Promise((r) => setTimeout(r, 50));

const PAYLOAD = JSON.stringify({
  after: { id: 1, name: 'widget', price: 12.5, stock: 3, category: 'tools' },
});
async function round(): Promise<{ cpuUs: number; dbCpuUs: number; ms: number }> {
  const delivered = crud.outboxStats()?.delivered ?? 0;
  await database.sql(`insert into kit_outbox (id, entity, row_key, operation, version_after, payload, next_at)
    select gen_random_uuid()::text, 'Product', (g % 5000)::text, 'create', 1, '${PAYLOAD}', (extract(epoch from clock_timestamp()) * 1000)::bigint + 300
    from generate_series(1, ${records}) g`);
  const [cpu, db, t0] = [process.cpuUsage(), databaseCpuUs(), performance.now()];
  while ((crud.outboxStats()?.delivered ?? 0) < delivered + records)
    await new Promise((r) => setTimeout(r, 20));
  const used = process.cpuUsage(cpu);
  return {
    cpuUs: (used.user + used.system) / records,
    dbCpuUs: (databaseCpuUs() - db) / records,
    ms: performance.now() - t0,
  };
}

await round(); // warm-up: JIT, plans, buffers
const session = profile ? new Session() : undefined;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}
const results = [];
for (let i = 0; i < rounds; i++) {
  const r = await round();
  results.push(r);
  log(
    `round ${i + 1}/${rounds}: ${r.cpuUs.toFixed(1)} µs server CPU, ${r.dbCpuUs.toFixed(1)} µs PostgreSQL CPU per record, ${Math.round((records / r.ms) * 1000)} records/s`,
  );
}
if (session) {
  const { profile: data } = await session.post('Profiler.stop');
  const file = path.join(os.tmpdir(), `outbox-dispatch-${process.pid}.cpuprofile`);
  writeFileSync(file, JSON.stringify(data));
  log(`profile: ${file}`);
}
const loadAtEnd = os.loadavg().map((l) => Math.round(l * 100) / 100);
console.log(
  JSON.stringify({
    node: process.versions.node,
    records,
    rounds,
    batchSize,
    serverCpuUsPerRecord: median(results.map((r) => r.cpuUs)),
    postgresCpuUsPerRecord: median(results.map((r) => r.dbCpuUs)),
    recordsPerSecond: median(results.map((r) => (records / r.ms) * 1000)),
    load: { start: loadAtStart, end: loadAtEnd },
  }),
);
await app.close();
await database.dispose();
