// `npm run bench:crud:outbox -- --node=/path/to/node24`: what the transactional outbox costs a
// write. Two Kit AutoCrud servers (outbox-server.ts), each in its own process on one real
// PostgreSQL: the same `products` entity with the outbox on (one in-process subscriber, so the
// dispatcher delivers and deletes every record) and off. Paired slices of the same write (a POST, a
// PATCH of a random row), the order alternating by cycle; before each slice the outbox's backlog
// is delivered, so the dispatcher of one slice never runs during the next; the on-server's CPU is
// read after that drain, so a request's share of the dispatching counts. Ratios within a pair,
// medians reported. Options: --node=<bin> (the servers' Node), --cycles=N (6), --slice=S
// seconds (4), --connections=C (32), --out=<name> (autocrud-outbox: bench/results/<name>.md and .json).
import { databaseCpuUs as databaseCpu } from './database-cpu.js';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { PostgresServer } from '@kit/test-support/postgres';
import { median, spawnServer, stopServer, type ServerProcess } from '../harness.js';
import { CREATE_BODY, PATCH_BODY, POOL_SIZE, SCHEMA } from './shape.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const nodeBin = arg('node') ?? process.execPath;
const cycles = Number(arg('cycles') ?? 6);
const sliceSeconds = Number(arg('slice') ?? 4);
const connections = Number(arg('connections') ?? 32);
const out = arg('out') ?? 'autocrud-outbox';
// --seam: a third server whose entity has a change sink that writes nothing (the seam's own cost: a
// transaction, the replaced row read); measured against off like the outbox.
const withSeam = process.argv.includes('--seam');
const ROWS = 100_000;
const log = (...a: unknown[]) => console.error('[bench:crud:outbox]', ...a);

const loadAtStart = os.loadavg().map((l) => Math.round(l * 100) / 100);
const database = await PostgresServer.start();
await database.sql("alter system set shared_buffers = '256MB'");
await database.stop();
await database.resume();
for (const statement of SCHEMA) await database.sql(statement);
await database.sql(
  `insert into products (name, price, stock, category) select 'widget ' || g, (g % 1000) + 0.5, 3, 'tools' from generate_series(1, ${ROWS}) g`,
);
await database.sql('vacuum analyze products');

/** CPU time (µs) of every process of the benchmark's PostgreSQL server (database-cpu.ts). */
function databaseCpuUs(): number {
  return databaseCpu(path.join(database.dir, 'data'));
}

type Mode = 'on' | 'off' | 'seam';
type Write = 'create' | 'patch';
const tsx = import.meta.resolve('tsx');
const servers = new Map<Mode, ServerProcess>();
// The on-server first: it makes the outbox's tables.
for (const mode of (withSeam ? ['on', 'off', 'seam'] : ['on', 'off']) as Mode[])
  servers.set(
    mode,
    await spawnServer(
      nodeBin,
      [
        '--conditions=kit-source',
        '--import',
        tsx,
        path.join(here, 'outbox-server.ts'),
        mode,
        database.url,
        String(POOL_SIZE),
      ],
      `outbox-${mode}`,
    ),
  );

async function cpuOf(server: ServerProcess): Promise<number> {
  const { cpu } = (await (await fetch(`${server.base}/bench/stats`)).json()) as {
    cpu: NodeJS.CpuUsage;
  };
  return cpu.user + cpu.system;
}

async function drained(): Promise<void> {
  if (process.env.BENCH_OUTBOX_DISPATCH === '0') return;
  for (;;) {
    const pending = Number((await database.sql(`select count(*) as n from kit_outbox`)).rows[0].n);
    if (pending === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function load(server: ServerProcess, write: Write, seconds: number) {
  if (write === 'create')
    return autocannon({
      url: `${server.base}/api/products`,
      connections,
      pipelining: 1,
      duration: seconds,
      method: 'POST',
      body: CREATE_BODY,
      headers: { 'content-type': 'application/json' },
    });
  return autocannon({
    url: `${server.base}/api/products/1`,
    connections,
    pipelining: 1,
    duration: seconds,
    requests: [
      {
        method: 'PATCH',
        body: PATCH_BODY,
        headers: { 'content-type': 'application/merge-patch+json' },
        setupRequest: (req: autocannon.Request) => ({
          ...req,
          path: `/api/products/${1 + Math.floor(Math.random() * ROWS)}`,
        }),
      },
    ],
  });
}

interface Slice {
  rps: number;
  p99Ms: number;
  cpuUs: number;
  dbCpuUs: number;
  errors: number;
}

async function slice(mode: Mode, write: Write): Promise<Slice> {
  const server = servers.get(mode) as ServerProcess;
  await drained();
  const [cpuBefore, dbBefore] = [await cpuOf(server), databaseCpuUs()];
  const r = await load(server, write, sliceSeconds);
  await drained();
  const [cpuAfter, dbAfter] = [await cpuOf(server), databaseCpuUs()];
  const requests = Math.max(1, r.requests.total);
  return {
    rps: r.requests.average,
    p99Ms: r.latency.p99,
    cpuUs: (cpuAfter - cpuBefore) / requests,
    dbCpuUs: (dbAfter - dbBefore) / requests,
    errors: r.non2xx + r.errors,
  };
}

// Warm-up: JIT, pools, buffers.
for (const write of ['create', 'patch'] as Write[])
  for (const mode of servers.keys()) await load(servers.get(mode) as ServerProcess, write, 3);

const slices: Record<string, Slice[]> = {};
const ratios: Record<Write, Array<{ rps: number; cpu: number; total: number }>> = {
  create: [],
  patch: [],
};
for (let cycle = 0; cycle < cycles; cycle++) {
  for (const write of ['create', 'patch'] as Write[]) {
    const modes: Mode[] = withSeam ? ['on', 'off', 'seam'] : ['on', 'off'];
    const order: Mode[] = cycle % 2 === 0 ? modes : [...modes].reverse();
    const got: Partial<Record<Mode, Slice>> = {};
    for (const mode of order) got[mode] = await slice(mode, write);
    const on = got.on as Slice;
    const off = got.off as Slice;
    (slices[`${write}:on`] ??= []).push(on);
    (slices[`${write}:off`] ??= []).push(off);
    if (got.seam) (slices[`${write}:seam`] ??= []).push(got.seam);
    ratios[write].push({
      rps: off.rps / on.rps,
      cpu: on.cpuUs / off.cpuUs,
      total: (on.cpuUs + on.dbCpuUs) / (off.cpuUs + off.dbCpuUs),
    });
    log(
      `cycle ${cycle + 1}/${cycles} ${write}: outbox on ${Math.round(on.rps)} req/s (${on.cpuUs.toFixed(0)} µs CPU, db ${on.dbCpuUs.toFixed(0)}) vs off ${Math.round(off.rps)} req/s (${off.cpuUs.toFixed(0)} µs, db ${off.dbCpuUs.toFixed(0)}): ${(off.rps / on.rps).toFixed(3)}x`,
    );
  }
}
const stats = await (
  await fetch(`${(servers.get('on') as ServerProcess).base}/bench/outbox`)
).json();
const records = (
  await database.sql(
    `select (select count(*) from kit_outbox) as waiting, (select count(*) from kit_outbox_dead) as dead`,
  )
).rows;
for (const server of servers.values()) await stopServer(server);
await database.dispose();

const summary = (list: Slice[]) => ({
  rps: median(list.map((s) => s.rps)),
  p99Ms: median(list.map((s) => s.p99Ms)),
  cpuUs: median(list.map((s) => s.cpuUs)),
  dbCpuUs: median(list.map((s) => s.dbCpuUs)),
  errors: list.reduce((n, s) => n + s.errors, 0),
});
const result = {
  date: new Date().toISOString(),
  node: (await import('node:child_process')).execFileSync(nodeBin, ['-v']).toString().trim(),
  load: { start: loadAtStart, end: os.loadavg().map((l) => Math.round(l * 100) / 100) },
  settings: { cycles, sliceSeconds, connections, rows: ROWS, pool: POOL_SIZE },
  writes: (['create', 'patch'] as Write[]).map((write) => ({
    write,
    on: summary(slices[`${write}:on`] ?? []),
    off: summary(slices[`${write}:off`] ?? []),
    ...(withSeam ? { seam: summary(slices[`${write}:seam`] ?? []) } : {}),
    rpsRatio: median(ratios[write].map((r) => r.rps)),
    cpuRatio: median(ratios[write].map((r) => r.cpu)),
    totalCpuRatio: median(ratios[write].map((r) => r.total)),
    all: ratios[write].map((r) => Math.round(r.rps * 1000) / 1000),
  })),
  dispatcher: stats,
  records,
};
const lines = [
  `# The outbox's cost on a write (bench/crud/outbox.ts)`,
  '',
  `${result.date}, servers on Node ${result.node}, ${cycles} cycles of paired ${sliceSeconds} s slices at ${connections} connections, load ${loadAtStart.join(' ')} at the start, ${result.load.end.join(' ')} at the end.`,
  '',
  '| write | outbox | req/s | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req | errors |',
  '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
  ...result.writes.flatMap((w) =>
    (['on', 'seam', 'off'] as const)
      .filter((m) => w[m] !== undefined)
      .map(
        (m) =>
          `| ${w.write} | ${m === 'seam' ? 'a sink writing nothing' : m} | ${Math.round(w[m]!.rps)} | ${w[m]!.p99Ms} | ${w[m]!.cpuUs.toFixed(0)} | ${w[m]!.dbCpuUs.toFixed(0)} | ${w[m]!.errors} |`,
      ),
  ),
  '',
  '| write | req/s off/on (median) | server CPU on/off | server + PostgreSQL CPU on/off | cycles (req/s off/on) |',
  '| --- | ---: | ---: | ---: | --- |',
  ...result.writes.map(
    (w) =>
      `| ${w.write} | ${w.rpsRatio.toFixed(3)} | ${w.cpuRatio.toFixed(3)} | ${w.totalCpuRatio.toFixed(3)} | ${w.all.join(', ')} |`,
  ),
  '',
  `Dispatcher at the end: ${JSON.stringify(stats)}; records: ${JSON.stringify(records)}.`,
  '',
];
await writeFile(path.join(here, '..', 'results', `${out}.md`), lines.join('\n'));
await writeFile(
  path.join(here, '..', 'results', `${out}.json`),
  `${JSON.stringify(result, null, 2)}\n`,
);
console.log(lines.join('\n'));
