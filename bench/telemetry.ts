// What request metrics and tracing cost: each scenario (bench/telemetry-server.ts) against its
// baseline (Kit without them, or bare Fastify without them), in paired slices whose order
// alternates from cycle to cycle; the ratio is taken within each pair and the median reported.
//
//   node --conditions=kit-source --import tsx bench/telemetry.ts [--cycles=6] [--seconds=3] [--node=/path/to/node]
//
// Writes bench/results/telemetry.md and .json (the current result: each run replaces the last).
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { median, spawnServer, stopServer, type ServerProcess } from './harness.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const cycles = Number(arg('cycles', '6'));
const seconds = Number(arg('seconds', '3'));
const nodeBin = arg('node', process.execPath);
const connections = 50;

const scenarios: Array<{ id: string; label: string; baseline: string }> = [
  {
    id: 'kit-metrics',
    label: 'Kit + configureMetrics() (per-route histogram, prom-client registry)',
    baseline: 'kit',
  },
  {
    id: 'kit-otel',
    label: 'Kit + tracing (SDK, instrumentation-http, @fastify/otel)',
    baseline: 'kit',
  },
  {
    id: 'kit-fastify-metrics',
    label: 'Kit + fastify-metrics 14 instead of configureMetrics()',
    baseline: 'kit',
  },
  { id: 'bare-fastify-metrics', label: 'bare Fastify + fastify-metrics 14', baseline: 'bare' },
  { id: 'bare-otel', label: 'bare Fastify + tracing (the same SDK set-up)', baseline: 'bare' },
];

/** CPU time (user + system) the server process has used, in µs, from /proc (clock ticks of 10 ms). */
function cpuUs(server: ServerProcess): number {
  const fields = readFileSync(`/proc/${server.child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

interface Slice {
  rps: number;
  p99: number;
  errors: number;
  /** Server CPU per request, µs: less sensitive than requests/s to what other tenants of the machine do. */
  cpu: number;
}

async function slice(server: ServerProcess): Promise<Slice> {
  const before = cpuUs(server);
  const r = await autocannon({
    url: `${server.base}/api/items/42`,
    connections,
    duration: seconds,
  });
  return {
    rps: r.requests.average,
    p99: r.latency.p99,
    errors: r.errors + r.non2xx,
    cpu: (cpuUs(server) - before) / Math.max(1, r.requests.total),
  };
}

const log = (...a: unknown[]) => console.error('[telemetry]', ...a);
const ids = ['bare', 'kit', ...scenarios.map((s) => s.id)];
const servers = new Map<string, ServerProcess>();
for (const id of ids)
  servers.set(
    id,
    await spawnServer(
      nodeBin,
      [
        '--conditions=kit-source',
        '--import',
        import.meta.resolve('tsx'),
        path.join(here, 'telemetry-server.ts'),
        id,
      ],
      id,
    ),
  );
// Warm every server (JIT, route caches) before measuring.
for (const id of ids)
  await autocannon({ url: `${servers.get(id)!.base}/api/items/42`, connections, duration: 1 });

const ratios: Record<string, number[]> = {};
const cpuRatios: Record<string, number[]> = {};
const cpu: Record<string, number[]> = {};
const p99: Record<string, number[]> = {};
const rps: Record<string, number[]> = {};
let errors = 0;
try {
  for (let cycle = 0; cycle < cycles; cycle++) {
    for (const s of scenarios) {
      const order = cycle % 2 === 0 ? [s.baseline, s.id] : [s.id, s.baseline];
      const got: Record<string, Slice> = {};
      for (const id of order) got[id] = await slice(servers.get(id)!);
      errors += got[s.id]!.errors + got[s.baseline]!.errors;
      (ratios[s.id] ??= []).push(got[s.id]!.rps / got[s.baseline]!.rps);
      (cpuRatios[s.id] ??= []).push(got[s.id]!.cpu / got[s.baseline]!.cpu);
      for (const id of order) {
        (cpu[id] ??= []).push(got[id]!.cpu);
        (rps[id] ??= []).push(got[id]!.rps);
        (p99[id] ??= []).push(got[id]!.p99);
      }
      log(
        `cycle ${cycle + 1}/${cycles} ${s.id}: ${got[s.id]!.rps.toFixed(0)} req/s vs ${s.baseline} ${got[s.baseline]!.rps.toFixed(0)} -> ${(got[s.id]!.rps / got[s.baseline]!.rps).toFixed(3)}; CPU/request ${got[s.id]!.cpu.toFixed(0)} vs ${got[s.baseline]!.cpu.toFixed(0)} µs`,
      );
    }
  }
} finally {
  for (const server of servers.values()) await stopServer(server);
}

const node = (await import('node:child_process'))
  .execFileSync(nodeBin, ['--version'])
  .toString()
  .trim();
const command = `node --conditions=kit-source --import tsx bench/telemetry.ts --cycles=${cycles} --seconds=${seconds}${nodeBin === process.execPath ? '' : ` --node=<node ${node}>`}`;
const lines = [
  '# Request metrics and tracing: what they cost',
  '',
  `\`${command}\` on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), servers on Node ${node}, ${new Date().toISOString().slice(0, 10)}.`,
  `${connections} keep-alive connections, GET /api/items/42; ${cycles} paired slices of ${seconds} s per scenario, the baseline's slice beside each. Throughput ratio = requests/s of the scenario / its baseline's within a pair; CPU ratio = the server's CPU time per request (from /proc) / its baseline's, which the other tenants of a shared machine disturb less; medians over the pairs. Errors and non-2xx answers: ${errors}.`,
  '',
  '| Scenario | Baseline | Throughput ratio (median) | (min-max) | CPU per request ratio (median) | CPU µs/request | req/s | p99 ms |',
  '|---|---|---|---|---|---|---|---|',
  ...scenarios.map((s) => {
    const r = ratios[s.id] ?? [];
    return `| ${s.label} | ${s.baseline === 'kit' ? 'Kit, audit async' : 'bare Fastify'} | **${median(r).toFixed(3)}** | ${Math.min(...r).toFixed(3)}-${Math.max(...r).toFixed(3)} | **${median(cpuRatios[s.id] ?? []).toFixed(3)}** | ${median(cpu[s.id] ?? []).toFixed(0)} | ${median(rps[s.id] ?? []).toFixed(0)} | ${median(p99[s.id] ?? []).toFixed(1)} |`;
  }),
  `| (baseline) Kit, audit async | | | | | ${median(cpu.kit ?? []).toFixed(0)} | ${median(rps.kit ?? []).toFixed(0)} | ${median(p99.kit ?? []).toFixed(1)} |`,
  `| (baseline) bare Fastify | | | | | ${median(cpu.bare ?? []).toFixed(0)} | ${median(rps.bare ?? []).toFixed(0)} | ${median(p99.bare ?? []).toFixed(1)} |`,
  '',
];
await writeFile(path.join(here, 'results', 'telemetry.md'), lines.join('\n'));
await writeFile(
  path.join(here, 'results', 'telemetry.json'),
  JSON.stringify(
    { command, node, cycles, seconds, connections, errors, ratios, cpuRatios, cpu, rps, p99 },
    null,
    2,
  ),
);
console.log(lines.join('\n'));
