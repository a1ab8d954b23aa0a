// What request metrics and tracing cost, counted in instructions rather than timed: each server of
// bench/telemetry-server.ts runs under valgrind's callgrind (instrumentation off during a warm-up,
// then on for a fixed number of requests), and the instructions its whole process executed in
// user space are divided by the requests. Immune to the other tenants of a shared machine, which
// move requests/s and CPU time by more than the differences measured here (see bench/telemetry.ts
// for those, and `npm run bench:instructions` for the method).
//
//   node --conditions=kit-source --import tsx bench/telemetry-instructions.ts [--requests=5000]
//     [--warmup=20000] [--jobs=2] [--node=/path/to/node] [--only=bare,kit,kit-metrics] [--merge]
//
// Writes bench/results/telemetry-instructions.md and .json (the current result: each run replaces the last).
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { readyPort } from './harness.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const exec = promisify(execFile);
const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const requests = Number(arg('requests', '5000'));
const warmup = Number(arg('warmup', '20000'));
const jobs = Number(arg('jobs', '2'));
const nodeBin = arg('node', process.execPath);
const ALL = [
  'bare',
  'kit',
  'kit-metrics',
  'kit-fastify-metrics',
  'bare-fastify-metrics',
  'kit-otel',
  'kit-otel-lean',
  'bare-otel',
];
const only = arg('only', ALL.join(',')).split(',');

async function drive(url: string, amount: number): Promise<number> {
  const r = await autocannon({ url, connections: 10, amount, timeout: 120 });
  if (r.non2xx > 0 || r.errors > 0)
    throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return r.requests.total;
}

/** Instructions per request of one scenario. */
async function count(id: string, dir: string): Promise<number> {
  const out = path.join(dir, `${id}.cg`);
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${out}`,
      '--instr-atstart=no',
      '--smc-check=all-non-file',
      '--dump-instr=no',
      '--dump-line=no',
      nodeBin,
      '--conditions=kit-source',
      '--import',
      import.meta.resolve('tsx'),
      path.join(here, 'telemetry-server.ts'),
      id,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir },
  );
  try {
    const url = `http://127.0.0.1:${await readyPort(child, id)}/api/items/42`;
    await drive(url, warmup);
    await exec('callgrind_control', ['--instr=on', String(child.pid)]);
    await exec('callgrind_control', ['--zero', String(child.pid)]);
    const served = await drive(url, requests);
    await exec('callgrind_control', ['--dump', String(child.pid)]);
    let dump: string | undefined;
    for (let i = 0; i < 600 && !dump; i++) {
      dump = (await readdir(dir)).find((f) => f.startsWith(`${id}.cg.`));
      if (!dump) await new Promise((r) => setTimeout(r, 100));
    }
    if (!dump) throw new Error(`${id}: no callgrind dump`);
    await new Promise((r) => setTimeout(r, 1000));
    const text = await readFile(path.join(dir, dump), 'utf8');
    const total = /^(?:summary|totals):\s+(\d+)/m.exec(text);
    if (!total) throw new Error(`${id}: no total in the dump`);
    return Number(total[1]) / served;
  } finally {
    child.kill('SIGKILL');
  }
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'kit-telemetry-cg-'));
// `--merge`: keep the other scenarios' counts of the last run (bench/results/telemetry-instructions.json).
const previous = process.argv.includes('--merge')
  ? ((
      JSON.parse(
        await readFile(path.join(here, 'results', 'telemetry-instructions.json'), 'utf8').catch(
          () => '{}',
        ),
      ) as { perRequest?: Record<string, number> }
    ).perRequest ?? {})
  : {};
const perRequest: Record<string, number> = { ...previous };
const queue = [...only];
await Promise.all(
  Array.from({ length: jobs }, async () => {
    for (let id = queue.shift(); id; id = queue.shift()) {
      perRequest[id] = await count(id, dir);
      console.error(
        `[telemetry-instructions] ${id}: ${Math.round(perRequest[id]!)} instructions/request`,
      );
    }
  }),
);
await rm(dir, { recursive: true, force: true });

const node = (await exec(nodeBin, ['--version'])).stdout.trim();
const k = (n: number | undefined) => (n === undefined ? '-' : `${Math.round(n / 1000)} k`);
const ratio = (a: string, b: string) =>
  perRequest[a] && perRequest[b] ? (perRequest[a]! / perRequest[b]!).toFixed(3) : '-';
const rows: Array<[string, string, string]> = [
  ['kit-metrics', 'kit', 'Kit + configureMetrics() (per-route histogram)'],
  ['kit-fastify-metrics', 'kit', 'Kit + fastify-metrics 14 instead'],
  ['bare-fastify-metrics', 'bare', 'bare Fastify + fastify-metrics 14'],
  ['kit-otel', 'kit', 'Kit + tracing (SDK, instrumentation-http, @fastify/otel)'],
  ['kit-otel-lean', 'kit', 'Kit + the same tracing, @fastify/otel with instrumentHooks: false'],
  ['bare-otel', 'bare', 'bare Fastify + the same tracing'],
];
const command = `node --conditions=kit-source --import tsx bench/telemetry-instructions.ts --requests=${requests} --warmup=${warmup}${nodeBin === process.execPath ? '' : ` --node=<node ${node}>`}`;
const lines = [
  '# Request metrics and tracing: instructions per request',
  '',
  `\`${command}\`, servers on Node ${node}, ${new Date().toISOString().slice(0, 10)}. Callgrind counts every instruction the server process executes in user space over ${requests} requests (10 connections, GET /api/items/42) after a warm-up of ${warmup}; kernel time (socket writes) is not in it.`,
  '',
  '| Scenario | Baseline | Instructions/request | Baseline instructions/request | Ratio |',
  '|---|---|---|---|---|',
  ...rows
    .filter(([a, b]) => perRequest[a] && perRequest[b])
    .map(
      ([a, b, label]) =>
        `| ${label} | ${b === 'kit' ? 'Kit, audit async' : 'bare Fastify'} | ${k(perRequest[a])} | ${k(perRequest[b])} | **${ratio(a, b)}** |`,
    ),
  '',
];
await writeFile(path.join(here, 'results', 'telemetry-instructions.md'), lines.join('\n'));
await writeFile(
  path.join(here, 'results', 'telemetry-instructions.json'),
  JSON.stringify({ command, node, requests, warmup, perRequest }, null, 2),
);
console.log(lines.join('\n'));
