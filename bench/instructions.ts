// Instructions per request, counted by valgrind's callgrind:
//
//   npm run bench:instructions -- [--only=bare,floor,audit-async] [--requests=20000] [--warmup=30000]
//     [--repeat=1] [--jobs=1] [--breakdown] [--top=25] [--keep=DIR] [--from=DIR] [--baseline=SCENARIO] [--node=/path/to/node] [--semi-space=MB]
//
// On this shared 2-core machine the CPU time of one request drifts between runs by more than the
// differences an audit trail makes (docs/benchmarks.md, "How the numbers are taken"). Instructions do not drift: callgrind counts every
// instruction the server process executes in user space (all its threads: V8's compiler and GC
// helpers, libuv's pool), whatever the other tenants do. Each server runs under callgrind, gets a
// warm-up load, its counters are zeroed, then a fixed number of requests is sent and the counters
// are dumped: the total over the requests is the whole user-space cost per request, not only the
// samples a profiler attributes to one file. Kernel work (the socket writes) is not counted:
// compare with the CPU µs of `npm run bench` for that part.
//
// What varies from run to run is when V8 compiles and collects. Under valgrind the warm-up must be
// long (the default 30,000 requests): a shorter one leaves the optimising compiler inside the
// counted window (docs/benchmarks.md, "Figures behind choices in the code"). The warm-up runs with
// callgrind's instrumentation off (`--instr-atstart=no`, switched on just before the counted
// window), which is faster. So the headline number leaves the JIT compilers out ("steady"), the
// collector stays in (it is part of what a request costs) and the bytes allocated per request are
// shown beside it, which do not depend on when a collection falls. `--repeat` shows the spread.
//
// `--breakdown` runs Node with `--perf-basic-prof`, names the JIT-compiled JavaScript in the dump
// and splits each server's instructions into the items of `callgrind.ts` (Kit's audit code, Node's
// HTTP path, JSON, strings, inline caches, the collector...), then lists the functions whose cost
// differs most from the baseline (bare Fastify on the same route). `--keep=DIR` keeps the dumps,
// `--from=DIR` reads kept dumps again without running anything.
import { spawn, execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { readyPort } from './harness.js';
import { ITEMS, itemOf, itemsOf, perRequest, readCallgrind, type Item } from './callgrind.js';
import type { GcStats } from './gc-stats.js';
import { requestOptions } from './requests.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const exec = promisify(execFile);
const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const flag = (name: string) => process.argv.includes(`--${name}`);
// `--semi-space=MB`: each server's young generation pinned (see run.ts): the collector's count then follows the allocations, not V8's per-process sizing.
const semiSpaceArgs = arg('semi-space')
  ? [`--min-semi-space-size=${arg('semi-space')}`, `--max-semi-space-size=${arg('semi-space')}`]
  : [];
const requests = Number(arg('requests') ?? 20000);
const warmup = Number(arg('warmup') ?? 30000);
const repeat = Number(arg('repeat') ?? 1);
const jobs = Number(arg('jobs') ?? 1);
const top = Number(arg('top') ?? 25);
const nodeBin = arg('node') ?? process.execPath;
const from = arg('from');
const breakdown = flag('breakdown') || from !== undefined;

/** scenario id -> [server scenario, realistic route] */
export const SCENARIOS: Record<string, [string, boolean]> = {
  bare: ['bare', false],
  'hooks-empty': ['hooks-empty', false],
  'uuid-header': ['uuid-header', false],
  floor: ['floor', false],
  'floor-context': ['floor-context', false],
  'floor-fields': ['floor-fields', false],
  kit: ['kit', false],
  'audit-capture': ['kit-audit-capture', false],
  'audit-sync': ['kit-audit-sync', false],
  'audit-async': ['kit-audit-async', false],
  'audit-sync-noctx': ['kit-audit-sync-noctx', false],
  'audit-sync-pinopath': ['kit-audit-sync-pinopath', false],
  'audit-async-pinopath': ['kit-audit-async-pinopath', false],
  'audit-async-noctx': ['kit-audit-async-noctx', false],
  'pino-http': ['pino-http', false],
  'fastify-logging': ['fastify-logging', false],
  'bare-real': ['bare', true],
  'floor-real': ['floor', true],
  'floor-fields-real': ['floor-fields', true],
  'audit-sync-real': ['kit-audit-sync', true],
  'audit-async-real': ['kit-audit-async', true],
  'pino-http-real': ['pino-http', true],
};
const only = arg('only')?.split(',') ?? [
  'bare',
  'hooks-empty',
  'uuid-header',
  'floor',
  'kit',
  'audit-capture',
  'audit-sync',
  'audit-async',
  'pino-http',
];
for (const id of only)
  if (!SCENARIOS[id])
    throw new Error(`unknown scenario ${id}; known: ${Object.keys(SCENARIOS).join(', ')}`);

/** What one counted run leaves behind (beside its dump and perf map when kept). */
interface RunMeta {
  id: string;
  run: number;
  node: string;
  requests: number;
  warmup: number;
  gc:
    | { allocatedBytes: number; promotedBytes: number; collections: Record<string, number> }
    | undefined;
}

async function drive(url: string, amount: number, real: boolean): Promise<number> {
  const r = await autocannon({
    url,
    connections: 10,
    pipelining: 1,
    amount,
    timeout: 120,
    ...requestOptions(real),
  });
  if (r.non2xx > 0 || r.errors > 0)
    throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return r.requests.total;
}

async function gcOf(base: string, collect = false): Promise<GcStats | undefined> {
  return (
    (await (await fetch(`${base}/bench/stats${collect ? '?collect' : ''}`)).json()) as {
      gc?: GcStats;
    }
  ).gc;
}

/** Runs one server under callgrind and leaves `<id>.<run>.cg`, `.map` and `.json` in `dir`. */
async function count(id: string, run: number, dir: string): Promise<void> {
  const [server, real] = SCENARIOS[id] as [string, boolean];
  const prefix = path.join(dir, `${id}.${run}`);
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${prefix}.cg`,
      '--instr-atstart=no',
      '--smc-check=all-non-file',
      '--dump-instr=no',
      '--dump-line=no',
      '--compress-strings=no',
      nodeBin,
      '--expose-gc',
      ...semiSpaceArgs,
      ...(breakdown ? ['--perf-basic-prof'] : []),
      '--conditions=kit-source',
      '--import',
      import.meta.resolve('tsx'),
      path.join(here, 'server.ts'),
      server,
      ...(real ? ['real'] : []),
    ],
    // In the dump directory: with --perf-basic-prof, V8 also leaves an isolate-*.log in its working directory.
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KIT_BENCH_GC: '1' }, cwd: dir },
  );
  try {
    const port = await readyPort(child, id);
    const base = `http://127.0.0.1:${port}`;
    const url = `${base}${real ? '/api/orders' : '/api/hello'}`;
    await drive(url, warmup, real);
    // A full collection first: every counted window starts from the same heap state.
    const before = await gcOf(base, true);
    await exec('callgrind_control', ['--instr=on', String(child.pid)]);
    await exec('callgrind_control', ['--zero', String(child.pid)]);
    const served = await drive(url, requests, real);
    await exec('callgrind_control', ['--dump', String(child.pid)]);
    const after = await gcOf(base);
    // The dump is written asynchronously by the instrumented process: wait for its file.
    let dump: string | undefined;
    for (let i = 0; i < 600 && !dump; i++) {
      dump = (await readdir(dir)).find((f) => f.startsWith(`${id}.${run}.cg.`));
      if (!dump) await new Promise((r) => setTimeout(r, 100));
    }
    if (!dump) throw new Error(`${id}: no callgrind dump`);
    await new Promise((r) => setTimeout(r, 1000));
    await exec('mv', [path.join(dir, dump), `${prefix}.cg`]);
    if (breakdown) await exec('cp', [`/tmp/perf-${child.pid}.map`, `${prefix}.map`]);
    const collections: Record<string, number> = {};
    for (const [k, v] of Object.entries(after?.collections ?? {}))
      collections[k] = v - (before?.collections[k] ?? 0);
    const meta: RunMeta = {
      id,
      run,
      node: nodeBin,
      requests: served,
      warmup,
      gc:
        after && before
          ? {
              allocatedBytes: after.allocatedBytes - before.allocatedBytes,
              promotedBytes: after.promotedBytes - before.promotedBytes,
              collections,
            }
          : undefined,
    };
    await writeFile(`${prefix}.json`, JSON.stringify(meta));
  } finally {
    child.kill('SIGKILL');
    await rm(`/tmp/perf-${child.pid}.map`, { force: true });
  }
}

const dir = from ?? arg('keep') ?? (await mkdtemp(path.join(os.tmpdir(), 'kit-callgrind-')));
if (from === undefined) {
  await mkdir(dir, { recursive: true });
  const queue = only.flatMap((id) =>
    Array.from({ length: repeat }, (_, run) => [id, run] as const),
  );
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      await count(next[0], next[1], dir);
      console.error(`[instructions] ${next[0]} run ${next[1] + 1} counted`);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, jobs) }, worker));
}

interface Counted {
  meta: RunMeta;
  total: number;
  steady: number;
  items: Map<Item, number> | undefined;
  functions: Map<string, number> | undefined;
}
const counted = new Map<string, Counted[]>();
for (const f of (await readdir(dir)).filter((f) => f.endsWith('.json')).sort()) {
  const meta = JSON.parse(await readFile(path.join(dir, f), 'utf8')) as RunMeta;
  if (!only.includes(meta.id) && from === undefined) continue;
  const prefix = path.join(dir, f.slice(0, -5));
  const costs = await readCallgrind(`${prefix}.cg`, breakdown ? `${prefix}.map` : undefined);
  const items = itemsOf(costs, meta.requests);
  const transient =
    (items.get('JIT compilation') ?? 0) + (items.get('measurement (perf map, GC profiler)') ?? 0);
  (counted.get(meta.id) ?? counted.set(meta.id, []).get(meta.id))?.push({
    meta,
    total: costs.total / meta.requests,
    // Without a perf map the JIT compilers are still named (they are C++ in the node binary).
    steady: costs.total / meta.requests - transient,
    items: breakdown ? items : undefined,
    functions: breakdown ? perRequest(costs, meta.requests) : undefined,
  });
}
if (from === undefined && !arg('keep')) await rm(dir, { recursive: true, force: true });

const ids = [...counted.keys()].sort(
  (a, b) => Object.keys(SCENARIOS).indexOf(a) - Object.keys(SCENARIOS).indexOf(b),
);
const median = (xs: number[]) =>
  [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
const fmt = (v: number) => Math.round(v).toLocaleString('en-US');
const signed = (v: number) => `${v >= 0 ? '+' : ''}${fmt(v)}`;
const steadyOf = (id: string) => median((counted.get(id) ?? []).map((c) => c.steady));
// `--baseline=floor` compares every other scenario with the floor instead of bare Fastify.
const baselineArg = arg('baseline');
const baselineOf = (id: string) => baselineArg ?? (id.endsWith('-real') ? 'bare-real' : 'bare');
const first = counted.get(ids[0] as string)?.[0]?.meta;
const nodeVersion = (await exec(first?.node ?? nodeBin, ['-v'])).stdout.trim();

console.log(
  `Node ${nodeVersion}, ${fmt(first?.requests ?? requests)} requests counted after ${fmt(first?.warmup ?? warmup)} warm-up requests, 10 connections; "steady" leaves out the JIT compilers and the measurement itself (perf map, GC profiler); each counted window starts after a full collection.\n`,
);
console.log(
  '| scenario | steady instructions/request | over its baseline | runs (steady) | JIT compilation | bytes allocated/request | bytes promoted/request | scavenges | mark-compacts |',
);
console.log('|---|---:|---:|---|---:|---:|---:|---:|---:|');
for (const id of ids) {
  const runs = counted.get(id) ?? [];
  const base = counted.has(baselineOf(id)) ? steadyOf(baselineOf(id)) : undefined;
  const gc = runs.map((r) => r.meta.gc).filter((g) => g !== undefined);
  const perReq = (r: Counted) => r.meta.requests;
  const bytes = median(runs.map((r) => (r.meta.gc?.allocatedBytes ?? NaN) / perReq(r)));
  const promoted = median(runs.map((r) => (r.meta.gc?.promotedBytes ?? NaN) / perReq(r)));
  const scav = gc.map((g) => g.collections.Scavenge ?? 0).join(', ');
  const major = gc
    .map((g) => (g.collections.MarkSweepCompact ?? 0) + (g.collections.MarkCompact ?? 0))
    .join(', ');
  console.log(
    `| ${id} | ${fmt(steadyOf(id))} | ${base === undefined ? '' : signed(steadyOf(id) - base)} | ${runs.map((r) => fmt(r.steady)).join(', ')} | ${fmt(median(runs.map((r) => r.total - r.steady)))} | ${fmt(bytes)} | ${promoted.toFixed(1)} | ${scav} | ${major} |`,
  );
}

if (breakdown) {
  // Items: the mean over a scenario's runs, per request.
  const itemMean = (id: string, item: Item) => {
    const runs = counted.get(id) ?? [];
    return runs.reduce((s, r) => s + (r.items?.get(item) ?? 0), 0) / Math.max(1, runs.length);
  };
  console.log(`\nInstructions per request by item (the difference to the baseline in brackets):\n`);
  console.log(`| item | ${ids.join(' | ')} |`);
  console.log(`|---|${ids.map(() => '---:').join('|')}|`);
  for (const item of ITEMS) {
    const cells = ids.map((id) => {
      const v = itemMean(id, item);
      const base = baselineOf(id);
      return id === base || !counted.has(base)
        ? fmt(v)
        : `${fmt(v)} (${signed(v - itemMean(base, item))})`;
    });
    console.log(`| ${item} | ${cells.join(' | ')} |`);
  }
  const fnMean = (id: string) => {
    const out = new Map<string, number>();
    const runs = counted.get(id) ?? [];
    for (const r of runs)
      for (const [n, v] of r.functions ?? []) out.set(n, (out.get(n) ?? 0) + v / runs.length);
    return out;
  };
  for (const id of ids) {
    const base = baselineOf(id);
    if (id === base || !counted.has(base)) continue;
    const mine = fnMean(id);
    const theirs = fnMean(base);
    const rows = [...new Set([...mine.keys(), ...theirs.keys()])]
      .filter(
        (n) =>
          itemOf(n) !== 'JIT compilation' && itemOf(n) !== 'measurement (perf map, GC profiler)',
      )
      .map((n) => [n, (mine.get(n) ?? 0) - (theirs.get(n) ?? 0)] as const)
      .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]))
      .slice(0, top);
    console.log(
      `\n${id} against ${base}: the ${top} functions whose own instructions per request differ most (JIT compilers left out)\n`,
    );
    console.log('| difference | item | function |');
    console.log('|---:|---|---|');
    for (const [n, v] of rows)
      console.log(
        `| ${signed(v)} | ${itemOf(n)} | \`${n
          .replace(/file:\/\/\/.*?\/(packages|bench|node_modules)\//, '$1/')
          .replace(/\|/g, '\\|')
          .slice(0, 140)}\` |`,
      );
  }
}
