// One Kit route before and after a change, in paired slices: the Kit server of this checkout and
// the Kit server of another (`--baseline=<dir>`: a checkout of the commit before, with its
// node_modules), both on one PostgreSQL holding the bench's 1,000,000-row table, each in its own
// process. Each cycle runs the two as neighbouring slices, the order alternating; the ratio
// (after / before) is taken within a pair and its median reported, so the machine's load moves
// both sides of a ratio alike.
//
//   node --conditions=kit-source --import tsx bench/crud/before-after.ts --baseline=/path/to/checkout \
//     [--route=create|get] [--node=/path/to/node] [--cycles=6] [--slice=4] [--connections=32]
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { PostgresServer } from '@kit/test-support/postgres';
import { median, spawnServer, stopServer, type ServerProcess } from '../harness.js';
import { CREATE_BODY, FILL, INDEXES, POOL_SIZE, ROUTES, ROWS, SCHEMA } from './shape.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const baseline = arg('baseline');
if (!baseline)
  throw new Error(
    '--baseline=<dir>: a checkout of the commit to compare against, with its node_modules',
  );
const route = arg('route') ?? 'create';
const nodeBin = arg('node') ?? process.execPath;
const cycles = Number(arg('cycles') ?? 6);
const sliceSeconds = Number(arg('slice') ?? 4);
const connections = Number(arg('connections') ?? 32);
const log = (...a: unknown[]) => console.error('[bench:crud before-after]', ...a);

const database = await PostgresServer.start();
for (const statement of SCHEMA) await database.sql(statement);
await database.sql(FILL);
for (const statement of INDEXES) await database.sql(statement);
const tsx = import.meta.resolve('tsx');
const start = (dir: string, label: string) =>
  spawnServer(
    nodeBin,
    [
      '--conditions=kit-source',
      '--import',
      tsx,
      path.join(dir, 'server.ts'),
      'kit',
      database.url,
      String(POOL_SIZE),
    ],
    label,
  );
const after = await start(here, 'kit (after)');
const before = await start(path.join(path.resolve(baseline), 'bench', 'crud'), 'kit (before)');

const load = (server: ServerProcess, seconds: number) =>
  route === 'create'
    ? autocannon({
        url: `${server.base}${ROUTES.kit.create}`,
        connections,
        pipelining: 1,
        duration: seconds,
        method: 'POST',
        body: CREATE_BODY,
        headers: { 'content-type': 'application/json' },
      })
    : autocannon({
        url: `${server.base}${ROUTES.kit.get}1`,
        connections,
        pipelining: 1,
        duration: seconds,
        requests: [
          {
            setupRequest: (req: autocannon.Request) => ({
              ...req,
              path: `${ROUTES.kit.get}${1 + Math.floor(Math.random() * ROWS)}`,
            }),
          },
        ],
      });
const cpuOf = async (server: ServerProcess) => {
  const { cpu } = (await (await fetch(`${server.base}/bench/stats`)).json()) as {
    cpu: NodeJS.CpuUsage;
  };
  return cpu.user + cpu.system;
};
const slice = async (server: ServerProcess) => {
  const cpu = await cpuOf(server);
  const r = await load(server, sliceSeconds);
  const used = (await cpuOf(server)) - cpu;
  return {
    rps: r.requests.average,
    cpuUs: used / Math.max(1, r.requests.total),
    errors: r.non2xx + r.errors,
  };
};

for (const server of [after, before]) await load(server, 3);
const ratios: number[] = [];
const cpuRatios: number[] = [];
const rows: Array<{ after: number; before: number; afterCpu: number; beforeCpu: number }> = [];
for (let cycle = 0; cycle < cycles; cycle++) {
  const order = cycle % 2 === 0 ? [after, before] : [before, after];
  const [one, two] = [
    await slice(order[0] as ServerProcess),
    await slice(order[1] as ServerProcess),
  ];
  const [a, b] = order[0] === after ? [one, two] : [two, one];
  if (a.errors + b.errors > 0) throw new Error(`errors: after ${a.errors}, before ${b.errors}`);
  ratios.push(a.rps / b.rps);
  cpuRatios.push(b.cpuUs / a.cpuUs);
  rows.push({ after: a.rps, before: b.rps, afterCpu: a.cpuUs, beforeCpu: b.cpuUs });
  log(
    `cycle ${cycle + 1}/${cycles} ${route}: after ${Math.round(a.rps)} req/s (${a.cpuUs.toFixed(0)} µs CPU) vs before ${Math.round(b.rps)} req/s (${b.cpuUs.toFixed(0)} µs CPU): ${(a.rps / b.rps).toFixed(3)}`,
  );
}
await stopServer(after);
await stopServer(before);
await database.dispose();
const load1 = os.loadavg()[0]?.toFixed(2);
console.log(
  [
    `Kit \`${route}\`, this checkout against ${baseline}, ${cycles} cycles of paired ${sliceSeconds} s slices, ${connections} connections, servers on ${nodeBin} (load average ${load1} at the end):`,
    '',
    '| | after req/s | before req/s | after CPU µs/req | before CPU µs/req | req/s ratio | per-CPU ratio |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r, i) =>
        `| cycle ${i + 1} | ${Math.round(r.after)} | ${Math.round(r.before)} | ${r.afterCpu.toFixed(0)} | ${r.beforeCpu.toFixed(0)} | ${(r.after / r.before).toFixed(3)} | ${(r.beforeCpu / r.afterCpu).toFixed(3)} |`,
    ),
    `| **median** | ${Math.round(median(rows.map((r) => r.after)))} | ${Math.round(median(rows.map((r) => r.before)))} | ${median(rows.map((r) => r.afterCpu)).toFixed(0)} | ${median(rows.map((r) => r.beforeCpu)).toFixed(0)} | ${median(ratios).toFixed(3)} | ${median(cpuRatios).toFixed(3)} |`,
  ].join('\n'),
);
