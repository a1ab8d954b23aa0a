// What the embedded engines cost the service's thread, and why each runs where it does:
//
//   node --conditions=kit-source --import tsx bench/embedded-engines.ts [--reads=3000] [--rounds=5]
//
// - PGlite, a primary-key read through Kit's engine (Kysely, the single-session pool): PGlite on
//   the service's thread (a host-made instance) against Kit's worker thread. `wall` is the time per
//   read, `thread` the service thread's busy time per read (event-loop utilisation): what the
//   read takes from request handling.
// - SQLite (Node >= 22.13), the same read: Kit's driver (busy_timeout 0, retries on timers),
//   Kysely's own SqliteDriver over node:sqlite (what the engine used before), and node:sqlite in a
//   worker thread behind postMessage (the alternative that was measured and not taken).
// - PGlite's start, each in a fresh process: in memory (initdb on the thread, as before; from the
//   saved fresh cluster in the worker, as now) and an existing directory (on the thread, in the
//   worker); with the longest stall of the event loop during it.
// Rounds alternate the variants; medians are printed as a markdown table.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import {
  CompiledQuery,
  Kysely,
  SqliteDialect,
  type SqliteDatabase,
  type SqliteStatement,
} from 'kysely';
import type { Engine } from '../packages/autocrud/src/mapper/sql/engine.js';
import { pgliteEngine } from '../packages/autocrud/src/mapper/engines/pglite/engine.js';
import {
  sqliteEngine,
  sqliteAvailable,
} from '../packages/autocrud/src/mapper/engines/sqlite/engine.js';

const arg = (name: string, fallback: number): number =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const READS = arg('reads', 3000);
const ROUNDS = arg('rounds', 5);
const ROWS = 1000;
const limits = { acquireTimeoutMs: 2000 };

const run = promisify(execFile);
const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[values.length >> 1] as number;
type Read = (id: number) => Promise<unknown>;

/** Microseconds per read: wall time, and the service thread's busy time (event-loop utilisation). */
async function measure(read: Read): Promise<{ wall: number; thread: number }> {
  const before = performance.eventLoopUtilization();
  const started = performance.now();
  for (let i = 0; i < READS; i++) await read((i % ROWS) + 1);
  const wall = ((performance.now() - started) * 1000) / READS;
  const used = performance.eventLoopUtilization(before);
  return { wall, thread: (used.active * 1000) / READS };
}

async function compare(variants: Record<string, Read>): Promise<Array<[string, number, number]>> {
  for (const read of Object.values(variants)) await measure(read); // warm-up round
  const results: Record<string, { wall: number[]; thread: number[] }> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, read] of Object.entries(variants)) {
      const { wall, thread } = await measure(read);
      (results[name] ??= { wall: [], thread: [] }).wall.push(wall);
      results[name].thread.push(thread);
    }
  }
  return Object.entries(results).map(([name, r]) => [name, median(r.wall), median(r.thread)]);
}

// PGlite's start, each in a fresh process (as a service starts: PGlite's module loaded and its WASM
// compiled there too), and the longest stall of that process's event loop meanwhile.
async function stall(work: () => Promise<unknown>): Promise<{ ms: number; stallMs: number }> {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 5);
  const started = performance.now();
  await work();
  const ms = performance.now() - started;
  clearInterval(timer);
  return { ms, stallMs: Math.max(worst, performance.now() - last) };
}

const startVariants: Record<string, (existing: string) => Promise<unknown>> = {
  'in memory, initdb, on the service thread (before)': async () =>
    (await (await import('@electric-sql/pglite')).PGlite.create()).close(),
  'in memory, from the saved cluster, in the worker (Kit)': async () => {
    const engine = pgliteEngine(
      { kind: 'pglite', directory: undefined, redacted: 'pglite:' },
      undefined,
      limits,
    );
    await engine.open();
    await engine.close();
  },
  'an existing directory, on the service thread (before)': async (existing) =>
    (await (await import('@electric-sql/pglite')).PGlite.create(existing)).close(),
  'an existing directory, in the worker (Kit)': async (existing) => {
    const engine = pgliteEngine(
      { kind: 'pglite', directory: existing, redacted: `pglite:${existing}` },
      undefined,
      limits,
    );
    await engine.open();
    await engine.close();
  },
};
// A child measuring one start: `--start=<variant> --dir=<existing directory>`.
const child = process.argv.find((a) => a.startsWith('--start='))?.slice(8);
if (child !== undefined) {
  const variant = startVariants[child] as (existing: string) => Promise<unknown>;
  const existingDir = process.argv.find((a) => a.startsWith('--dir='))?.slice(6) as string;
  process.stdout.write(`${JSON.stringify(await stall(() => variant(existingDir)))}\n`);
  process.exit(0);
}

const byKey = (table: string) => (engine: Engine) => (id: number) =>
  engine.db.executeQuery(
    CompiledQuery.raw(`select id, name, price from ${table} where id = $1`, [id]),
  );
const lines: string[] = [
  '| engine | variant | wall µs/read | service thread µs/read |',
  '|---|---|---|---|',
];

// PGlite: the same engine, PGlite on the thread or in the worker.
{
  const fill = `create table items (id bigint primary key, name text not null, price double precision not null);
    insert into items select i, md5(i::text), i from generate_series(1, ${ROWS}) i`;
  const host = new PGlite();
  await host.exec(fill);
  const onThread = pgliteEngine(
    { kind: 'pglite', directory: undefined, redacted: 'pglite:' },
    host,
    limits,
  );
  const inWorker = pgliteEngine(
    { kind: 'pglite', directory: undefined, redacted: 'pglite:' },
    undefined,
    limits,
  );
  await onThread.open();
  await inWorker.open();
  await inWorker.db.executeQuery(CompiledQuery.raw(fill.split(';')[0] as string));
  await inWorker.db.executeQuery(CompiledQuery.raw(fill.split(';')[1] as string));
  const read = byKey('items');
  for (const [name, wall, thread] of await compare({
    'on the service thread (a host-made instance)': read(onThread),
    "in its worker thread (Kit's own)": read(inWorker),
  })) {
    lines.push(`| PGlite | ${name} | ${wall.toFixed(0)} | ${thread.toFixed(0)} |`);
  }
  await onThread.close();
  await inWorker.close();
  await host.close();
}

// SQLite: Kit's driver, Kysely's SqliteDriver, node:sqlite in a worker.
if (sqliteAvailable()) {
  type Sync = {
    prepare(sql: string): {
      all(...p: unknown[]): unknown[];
      run(...p: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
    };
    exec(sql: string): void;
    close(): void;
  };
  const { DatabaseSync } = process.getBuiltinModule('node:sqlite') as {
    DatabaseSync: new (file: string) => Sync;
  };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kit-bench-sqlite-'));
  const file = path.join(dir, 'bench.db');
  const setup = new DatabaseSync(file);
  setup.exec(`pragma journal_mode = wal; create table items (id integer primary key, name text not null, price real not null);
    with recursive n(i) as (select 1 union all select i + 1 from n where i < ${ROWS}) insert into items select i, hex(randomblob(16)), i from n;`);
  setup.close();
  const kit = sqliteEngine(
    { kind: 'sqlite', file, redacted: `sqlite:${file}` },
    { ...limits, connectTimeoutMs: 5000 },
  );
  await kit.open();
  // Kysely's own driver over node:sqlite, as the engine had it: statements cached by SQL text.
  const plain = new DatabaseSync(file);
  const cache = new Map<string, SqliteStatement>();
  const adapted: SqliteDatabase = {
    prepare(sql) {
      let statement = cache.get(sql);
      if (!statement) {
        const s = plain.prepare(sql);
        statement = {
          reader: /^\s*select/i.test(sql),
          all: (p) => s.all(...p),
          run: (p) => s.run(...p),
          iterate: () => [][Symbol.iterator](),
        };
        cache.set(sql, statement);
      }
      return statement;
    },
    close: () => plain.close(),
  };
  const kysely = new Kysely<Record<string, never>>({
    dialect: new SqliteDialect({ database: adapted }),
  });
  // node:sqlite in a worker thread: one round trip per statement.
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const db = new (require('node:sqlite').DatabaseSync)(workerData);
     const read = db.prepare('select id, name, price from items where id = ?');
     parentPort.on('message', ({ id, key }) => parentPort.postMessage({ id, rows: read.all(key) }));`,
    { eval: true, workerData: file },
  );
  let next = 0;
  const pending = new Map<number, (rows: unknown) => void>();
  worker.on('message', ({ id, rows }: { id: number; rows: unknown }) => {
    pending.get(id)?.(rows);
    pending.delete(id);
  });
  const viaWorker: Read = (key) =>
    new Promise((resolve) => {
      const id = next++;
      pending.set(id, resolve);
      worker.postMessage({ id, key });
    });
  const sql = 'select id, name, price from items where id = ?';
  for (const [name, wall, thread] of await compare({
    "Kit's driver (busy_timeout 0, retries on timers)": (id) =>
      kit.db.executeQuery(CompiledQuery.raw(sql, [id])),
    "Kysely's SqliteDriver (the engine before)": (id) =>
      kysely.executeQuery(CompiledQuery.raw(sql, [id])),
    'node:sqlite in a worker thread (not taken)': viaWorker,
  })) {
    lines.push(`| SQLite | ${name} | ${wall.toFixed(1)} | ${thread.toFixed(1)} |`);
  }
  await worker.terminate();
  await kysely.destroy();
  await kit.close();
  await rm(dir, { recursive: true, force: true });
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'kit-bench-pglite-'));
const existing = path.join(dir, 'data');
await new PGlite(existing).close();
const startLines = [
  '| PGlite start, in a fresh process | ms | longest event-loop stall, ms |',
  '|---|---|---|',
];
const startResults: Record<string, { ms: number[]; stall: number[] }> = {};
for (let round = 0; round < Math.min(ROUNDS, 3); round++) {
  for (const name of Object.keys(startVariants)) {
    const { stdout } = await run(process.execPath, [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      `--start=${name}`,
      `--dir=${existing}`,
    ]);
    const { ms, stallMs } = JSON.parse(stdout.trim().split('\n').at(-1) as string) as {
      ms: number;
      stallMs: number;
    };
    (startResults[name] ??= { ms: [], stall: [] }).ms.push(ms);
    startResults[name].stall.push(stallMs);
  }
}
for (const [name, r] of Object.entries(startResults))
  startLines.push(`| ${name} | ${median(r.ms).toFixed(0)} | ${median(r.stall).toFixed(0)} |`);
await rm(dir, { recursive: true, force: true });

process.stdout.write(
  `Node ${process.version}, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}; ${READS} reads per variant and round, ${ROUNDS} rounds, medians\n\n${lines.join('\n')}\n\n${startLines.join('\n')}\n`,
);
