// `npm run bench` (quick, a few minutes) or `npm run bench -- --full` (more and longer runs, and
// the 1,000,000-request memory run). Each server runs in its own process; autocannon drives it
// from this one over loopback. Scenarios are interleaved round by round, so the machine's noise
// falls on all of them alike, and ratios are taken within a round, then the median is reported.
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { median, spawnServer, stopServer, type ServerProcess } from './harness.js';
import type { ProcStats } from './proc-stats.js';
import { requestOptions } from './requests.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const full = process.argv.includes('--full');
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const seconds = full ? 10 : 5;
// Start-up: each of the two ways is timed this many times.
const startupRuns = full ? 7 : 5;
// Throughput: every scenario gets `cycles` slices of `sliceSeconds`.
const cycles = Number(
  process.argv.find((a) => a.startsWith('--cycles='))?.slice(9) ?? (full ? 8 : 4),
);
const sliceSeconds = full ? 4 : 2;
const connections = 100;
const memoryRequests = full ? 1_000_000 : 100_000;
const tsx = import.meta.resolve('tsx');
// `--semi-space=MB`: every server's young generation pinned to MB per semi-space (V8's
// --min/--max-semi-space-size). V8 otherwise sizes it per process from its own history (grown under
// load, shrunk while the process idles through its baseline's slice), and two identical servers'
// collectors then cost very different amounts (docs/benchmarks.md, "Figures behind choices in the
// code"). Pinned, a server's collector cost follows what it allocates and keeps, not its luck. The
// same for every server, bare included.
const semiSpace = process.argv.find((a) => a.startsWith('--semi-space='))?.slice(13);
const nodeArgs = [
  ...(semiSpace
    ? [`--min-semi-space-size=${semiSpace}`, `--max-semi-space-size=${semiSpace}`]
    : []),
  '--conditions=kit-source',
  '--import',
  tsx,
];
const exec = promisify(execFile);
// `--fresh`: new server processes for every cycle. One process can keep a state of its own for its
// whole life (heap sizing, collections on the helper threads, JIT decisions), so two identical
// servers side by side can differ for a whole run by more than the scenarios do (docs/benchmarks.md,
// "Figures behind choices in the code"). Fresh processes sample that state cycle by cycle, as the
// pairs sample the machine's drift.
const fresh = process.argv.includes('--fresh');
// Seconds of load before a server is measured (JIT, connections). A Kit server run from source is
// still compiling on V8's helper threads after a short warm-up (docs/benchmarks.md, "Figures behind
// choices in the code"), so fresh processes get 15 s.
const warmupSeconds = Number(
  process.argv.find((a) => a.startsWith('--warmup='))?.slice(9) ?? (fresh ? 15 : 2),
);
// `--node=/path/to/node`: run the servers (not autocannon) on another Node binary, e.g. Node 24.
const nodeBin = process.argv.find((a) => a.startsWith('--node='))?.slice(7) ?? process.execPath;

interface Throughput {
  id: string;
  label: string;
  server: string;
  path: string;
  /** The realistic route: POST /api/orders, a 1 KB JSON body, a 2 KB answer, ten request headers. */
  real?: boolean;
}

const throughput: Throughput[] = [
  { id: 'bare', label: 'bare Fastify, hello route', server: 'bare', path: '/api/hello' },
  { id: 'kit', label: 'Kit, audit off', server: 'kit', path: '/api/hello' },
  {
    id: 'audit-sync',
    label: 'Kit, audit sync (Default format)',
    server: 'kit-audit-sync',
    path: '/api/hello',
  },
  { id: 'audit-async', label: 'Kit, audit async', server: 'kit-audit-async', path: '/api/hello' },
  // The same servers again, in processes of their own: what two identical servers differ by in one run.
  {
    id: 'audit-sync-twin',
    label: 'Kit, audit sync, a second identical server',
    server: 'kit-audit-sync',
    path: '/api/hello',
  },
  {
    id: 'audit-async-twin',
    label: 'Kit, audit async, a second identical server',
    server: 'kit-audit-async',
    path: '/api/hello',
  },
  {
    id: 'audit-sync-pinopath',
    label: "Kit, audit sync, lines through pino's own call",
    server: 'kit-audit-sync-pinopath',
    path: '/api/hello',
  },
  {
    id: 'audit-async-pinopath',
    label: "Kit, audit async, lines through pino's own call",
    server: 'kit-audit-async-pinopath',
    path: '/api/hello',
  },
  {
    id: 'audit-capture',
    label: 'Kit, audit sync, entries below the log level',
    server: 'kit-audit-capture',
    path: '/api/hello',
  },
  {
    id: 'audit-sync-noctx',
    label: 'Kit, audit sync, correlationIdContext off',
    server: 'kit-audit-sync-noctx',
    path: '/api/hello',
  },
  {
    id: 'audit-async-noctx',
    label: 'Kit, audit async, correlationIdContext off',
    server: 'kit-audit-async-noctx',
    path: '/api/hello',
  },
  {
    id: 'fastify-logging',
    label: "Fastify's own request logging",
    server: 'fastify-logging',
    path: '/api/hello',
  },
  { id: 'pino-http', label: 'pino-http on Fastify', server: 'pino-http', path: '/api/hello' },
  {
    id: 'bare-livez',
    label: 'bare Fastify, the same /livez answer',
    server: 'bare-livez',
    path: '/livez',
  },
  { id: 'livez', label: 'Kit /livez', server: 'kit-health', path: '/livez' },
  // The ladder from bare Fastify to an audit: what each piece costs on its own.
  {
    id: 'hooks-empty',
    label: 'empty onRequest + onResponse hooks',
    server: 'hooks-empty',
    path: '/api/hello',
  },
  {
    id: 'uuid-header',
    label: 'onRequest setting a UUID response header',
    server: 'uuid-header',
    path: '/api/hello',
  },
  {
    id: 'floor',
    label: 'hand-written minimal audit (the floor)',
    server: 'floor',
    path: '/api/hello',
  },
  {
    id: 'floor-context',
    label: 'the floor with the id readable anywhere in the request (an AsyncLocalStorage)',
    server: 'floor-context',
    path: '/api/hello',
  },
  {
    id: 'floor-fields',
    label: "hand-written audit writing the Default line's fields too",
    server: 'floor-fields',
    path: '/api/hello',
  },
  // The realistic route: the same scenarios on a request that reads and answers JSON.
  {
    id: 'bare-real',
    label: 'bare Fastify, realistic route',
    server: 'bare',
    path: '/api/orders',
    real: true,
  },
  {
    id: 'floor-real',
    label: 'hand-written minimal audit, realistic route',
    server: 'floor',
    path: '/api/orders',
    real: true,
  },
  {
    id: 'floor-fields-real',
    label: "hand-written audit writing the Default line's fields, realistic route",
    server: 'floor-fields',
    path: '/api/orders',
    real: true,
  },
  {
    id: 'audit-sync-real',
    label: 'Kit, audit sync, realistic route',
    server: 'kit-audit-sync',
    path: '/api/orders',
    real: true,
  },
  {
    id: 'audit-async-real',
    label: 'Kit, audit async, realistic route',
    server: 'kit-audit-async',
    path: '/api/orders',
    real: true,
  },
  {
    id: 'pino-http-real',
    label: 'pino-http on Fastify, realistic route',
    server: 'pino-http',
    path: '/api/orders',
    real: true,
  },
];

type Server = ServerProcess;

async function startServer(scenario: string, real = false): Promise<Server> {
  return spawnServer(
    nodeBin,
    [...nodeArgs, path.join(here, 'server.ts'), scenario, ...(real ? ['real'] : [])],
    scenario,
  );
}

// `--rate=N`: throughput slices send N requests per second instead of as many as the server takes.
const rate = Number(process.argv.find((a) => a.startsWith('--rate='))?.slice(7) ?? 0);

async function load(
  url: string,
  opts: { duration?: number; amount?: number; connections?: number; rate?: number; real?: boolean },
) {
  // autocannon refuses an explicit `duration: undefined`: pass only what is set.
  const limit =
    opts.amount !== undefined ? { amount: opts.amount } : { duration: opts.duration ?? seconds };
  const paced = opts.rate ? { overallRate: opts.rate } : {};
  return autocannon({
    url,
    connections: opts.connections ?? connections,
    pipelining: 1,
    ...limit,
    ...paced,
    ...requestOptions(opts.real),
  });
}

async function stats(base: string): Promise<{
  checkRuns: number;
  audit?: Record<string, number>;
  memory: NodeJS.MemoryUsage;
  cpu: NodeJS.CpuUsage;
  proc?: ProcStats;
}> {
  return (await fetch(`${base}/bench/stats`)).json() as never;
}

function perRequest(
  before: ProcStats | undefined,
  after: ProcStats | undefined,
  requests: number,
): ProcStats | undefined {
  if (!before || !after) return undefined;
  const out = {} as ProcStats;
  for (const k of Object.keys(after) as Array<keyof ProcStats>)
    out[k] = (after[k] - before[k]) / Math.max(1, requests);
  return out;
}

const results: Record<string, unknown> = {};
const log = (...a: unknown[]) => console.error('[bench]', ...a);

// 1. Throughput, in pairs. Every server stays up for the whole phase. Each scenario's slice is run
// next to a slice of its baseline (bare Fastify; the bare /livez for Kit's /livez), the order of
// the two alternating from cycle to cycle, and the ratio is taken within that pair: the machine's
// speed drifts (other tenants, CPU frequency) by more than the differences measured here, but
// hardly within two neighbouring slices. The medians over the cycles are reported.
interface Slice {
  rps: number;
  p99: number;
  cpuUs: number;
  errors: number;
  dropped: number;
  /** Per request, from /proc: where the CPU went and the system calls (absent off Linux). */
  proc?: ProcStats;
}
const slices: Record<string, Slice[]> = {};
const pairs: Record<string, Array<{ rps: number; cpu: number }>> = {};
const baselineOf = (id: string) =>
  id === 'livez' ? 'bare-livez' : id.endsWith('-real') ? 'bare-real' : 'bare';
const wanted = throughput.filter(
  (s) => !only || only.includes(s.id) || only.includes('throughput'),
);
const measured = wanted.filter(
  (s) => s.id !== 'bare' && s.id !== 'bare-livez' && s.id !== 'bare-real',
);
const selected = throughput.filter(
  (s) => wanted.includes(s) || measured.some((m) => baselineOf(m.id) === s.id),
);
if (selected.length > 0) {
  const servers = new Map<string, Server>();
  const startAll = async (): Promise<void> => {
    for (const server of servers.values()) await stopServer(server);
    for (const s of selected) {
      const server = await startServer(s.server, s.real);
      servers.set(s.id, server);
      await load(server.base + s.path, { duration: warmupSeconds, real: s.real }); // warm-up: JIT, connections
    }
  };
  await startAll();
  const slice = async (s: Throughput, cycle: number): Promise<Slice> => {
    const server = servers.get(s.id) as Server;
    const before = await stats(server.base);
    const r = await load(server.base + s.path, { duration: sliceSeconds, rate, real: s.real });
    const after = await stats(server.base);
    const out: Slice = {
      rps: r.requests.average,
      p99: r.latency.p99,
      // CPU time of the server process (user + system, all its threads) per request.
      cpuUs:
        (after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) /
        Math.max(1, r.requests.total + 1),
      errors: r.errors + r.non2xx,
      // Audit entries dropped during the slice: a writer that falls behind does less work per
      // request, so its throughput would not be comparable.
      dropped:
        after.audit && before.audit ? (after.audit.dropped ?? 0) - (before.audit.dropped ?? 0) : 0,
      proc: perRequest(before.proc, after.proc, r.requests.total + 1),
    };
    (slices[s.id] ??= []).push(out);
    log(
      `cycle ${cycle + 1}/${cycles} ${s.id}: ${Math.round(out.rps)} req/s, p99 ${out.p99} ms, ${out.cpuUs.toFixed(1)} µs CPU/request`,
    );
    return out;
  };
  for (let cycle = 0; cycle < cycles; cycle++) {
    if (fresh && cycle > 0) await startAll();
    for (let k = 0; k < measured.length; k++) {
      const s = measured[(cycle + k) % measured.length] as Throughput;
      const base = throughput.find((t) => t.id === baselineOf(s.id)) as Throughput;
      const [first, second] = cycle % 2 === 0 ? [base, s] : [s, base];
      const a = await slice(first, cycle);
      const b = await slice(second, cycle);
      const [own, ref] = first === s ? [a, b] : [b, a];
      (pairs[s.id] ??= []).push({ rps: own.rps / ref.rps, cpu: ref.cpuUs / own.cpuUs });
    }
  }
  for (const server of servers.values()) await stopServer(server);
  results.throughput = selected.map((s) => {
    const own = slices[s.id] ?? [];
    const pair = pairs[s.id];
    const audited = s.server.startsWith('kit-audit');
    return {
      id: s.id,
      label: s.label,
      path: s.path,
      rps: own.map((x) => x.rps),
      medianRps: median(own.map((x) => x.rps)),
      medianP99Ms: median(own.map((x) => x.p99)),
      ratioToBare: pair ? median(pair.map((p) => p.rps)) : 1,
      // Cycle by cycle, so that two scenarios can be compared through the baseline slices each
      // was paired with in the same cycle (the report's async-against-sync line).
      pairRatios: pair?.map((p) => p.rps),
      pairCpuRatios: pair?.map((p) => p.cpu),
      cpuUs: own.map((x) => x.cpuUs),
      medianCpuUs: median(own.map((x) => x.cpuUs)),
      // Requests per CPU-second relative to the baseline: the throughput ratio a CPU-bound server would show.
      cpuRatioToBare: pair ? median(pair.map((p) => p.cpu)) : 1,
      errors: own.reduce((n, x) => n + x.errors, 0),
      auditDropped: audited ? own.reduce((n, x) => n + x.dropped, 0) : undefined,
      // Medians per request of where the CPU went (main thread, libuv's pool, other threads) and the system calls.
      proc: own.every((x) => x.proc)
        ? Object.fromEntries(
            Object.keys(own[0]?.proc ?? {}).map((k) => [
              k,
              median(own.map((x) => (x.proc as unknown as Record<string, number>)[k] as number)),
            ]),
          )
        : undefined,
    };
  });
}

// 2. /healthz with three checks, one taking 50 ms, under 200 concurrent connections.
if (!only || only.includes('healthz')) {
  const server = await startServer('kit-health');
  const before = (await stats(server.base)).checkRuns;
  const started = performance.now();
  const r = await load(`${server.base}/healthz`, { duration: seconds, connections: 200 });
  const elapsedMs = performance.now() - started;
  const after = (await stats(server.base)).checkRuns;
  await stopServer(server);
  const runsOfSlowCheck = after - before;
  // Back to back, a 50 ms check fits at most elapsed / 50 times in the measured window.
  const waves = Math.floor(elapsedMs / 50);
  results.healthz = {
    connections: 200,
    seconds,
    requests: r.requests.total,
    rps: r.requests.average,
    p99Ms: r.latency.p99,
    slowCheckRuns: runsOfSlowCheck,
    maxWaves: waves,
    requestsPerCheckRun: r.requests.total / Math.max(1, runsOfSlowCheck),
    non2xx: r.non2xx,
  };
  log('healthz', results.healthz);
}

// 3. Start-up of 1,000 endpoint classes against the same routes registered by hand.
if (!only || only.includes('startup')) {
  const times: Record<string, number[]> = { kit: [], manual: [] };
  for (let i = 0; i < startupRuns; i++) {
    for (const mode of ['kit', 'manual']) {
      const { stdout } = await exec(nodeBin, [
        ...nodeArgs,
        path.join(here, 'startup.ts'),
        mode,
        '1000',
      ]);
      times[mode]?.push((JSON.parse(stdout) as { ms: number }).ms);
    }
  }
  const kit = median(times.kit ?? []);
  const manual = median(times.manual ?? []);
  results.startup = {
    classes: 1000,
    kitMs: times.kit,
    manualMs: times.manual,
    medianKitMs: kit,
    medianManualMs: manual,
    ratio: kit / manual,
  };
  log('startup', results.startup);
}

// 4. Memory of the async queue with a sink that never answers.
if (!only || only.includes('memory')) {
  const server = await startServer('kit-audit-hung-sink');
  await load(`${server.base}/api/hello`, { amount: 20_000 });
  global.gc?.();
  const before = await stats(server.base);
  const samples: number[] = [];
  const sampler = setInterval(() => {
    void stats(server.base)
      .then((s) => samples.push(s.memory.heapUsed))
      .catch(() => {});
  }, 1000);
  const r = await load(`${server.base}/api/hello`, { amount: memoryRequests });
  clearInterval(sampler);
  const after = await stats(server.base);
  await stopServer(server);
  results.memory = {
    requests: memoryRequests,
    completed: r.requests.total,
    non2xx: r.non2xx,
    heapBeforeMb: before.memory.heapUsed / 2 ** 20,
    heapAfterMb: after.memory.heapUsed / 2 ** 20,
    heapMaxMb: Math.max(...samples, after.memory.heapUsed) / 2 ** 20,
    rssBeforeMb: before.memory.rss / 2 ** 20,
    rssAfterMb: after.memory.rss / 2 ** 20,
    audit: after.audit,
  };
  log('memory', results.memory);
}

const serverNode =
  nodeBin === process.execPath ? process.version : (await exec(nodeBin, ['-v'])).stdout.trim();
const machine = {
  node: serverNode,
  cores: os.cpus().length,
  cpu: os.cpus()[0]?.model ?? 'unknown',
  memoryGb: Math.round(os.totalmem() / 2 ** 30),
  date: new Date().toISOString(),
  mode: full ? 'full' : 'quick',
  fresh,
  warmupSeconds,
  semiSpaceMb: semiSpace ? Number(semiSpace) : undefined,
  seconds,
  cycles,
  sliceSeconds,
  connections,
};
// One current result per topic and Node line: `--out=<topic>` (default `throughput`; `audit` for the
// audit scenarios' own run) writes bench/results/<topic>-node<major>.md and .json, replacing the
// last run of that topic on that line. The major is the servers' Node, not the harness's. A run of
// some scenarios (--only) without --out writes `partial`, which git ignores, so that it cannot
// replace the whole run's file.
const topic =
  process.argv.find((a) => a.startsWith('--out='))?.slice(6) ?? (only ? 'partial' : 'throughput');
const out = `${topic}-node${serverNode.replace(/^v/, '').split('.')[0]}`;
await mkdir(path.join(here, 'results'), { recursive: true });
await writeFile(
  path.join(here, 'results', `${out}.json`),
  `${JSON.stringify({ machine, ...results }, null, 2)}\n`,
);
await writeFile(
  path.join(here, 'results', `${out}.md`),
  (await import('./report.js')).renderReport({ machine, ...results } as never),
);
log(`wrote bench/results/${out}.md and bench/results/${out}.json`);
