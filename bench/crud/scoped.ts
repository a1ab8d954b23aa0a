// The scoped scenario of `npm run bench:crud` (`--only=scoped`): on the Kit server, the include
// scenario's 10,000 orders (1,000 customers, `customer_id` indexed) served twice under
// authorization rules that differ only in the row check: `/api/scopedOrders` (a customer's rule
// with `checks: { customerId: 'sub' }`: every statement carries `customer_id = <the token's sub>`)
// and `/api/plainOrders` (the same rule without the check). Both verify the same bearer tokens
// (one per customer, signed by a local authority), so the pairs measure what the scope costs:
// - a scoped list (a customer's orders, by the token) against the unscoped list of the same rows
//   (`filter[customerId]=<the customer>`, the same page and count);
// - a scoped get (one of the caller's orders, by key) against the unscoped get of the same row.
// Random customers and orders; paired slices, the order alternating by cycle.
import autocannon from 'autocannon';
import { median } from '../harness.js';
import { ORDERS } from './include.js';

/** One slice's numbers, as report.ts's SliceResult has them. */
interface SliceResult {
  rps: number;
  p99Ms: number;
  cpuUs: number;
  dbCpuUs: number;
  errors: number;
}

const CUSTOMERS = 1_000;

/** The rules of the two classes over the orders (server.ts): the same role, one with the row check. */
export const SCOPED_ROLE = 'customer';

export type ScopedCase = 'scopedList' | 'plainList' | 'scopedGet' | 'plainGet';

/** A random order and its customer (include.ts fills orders so that order g belongs to customer 1 + g % 1000). */
function randomOrder(): { order: number; customer: number } {
  const order = 1 + Math.floor(Math.random() * ORDERS);
  return { order, customer: 1 + (order % CUSTOMERS) };
}

function load(
  base: string,
  which: ScopedCase,
  tokens: readonly string[],
  seconds: number,
  connections: number,
) {
  return autocannon({
    url: base,
    connections,
    pipelining: 1,
    duration: seconds,
    requests: [
      {
        setupRequest: (req: autocannon.Request) => {
          const { order, customer } = randomOrder();
          const path =
            which === 'scopedList'
              ? '/api/scopedOrders'
              : which === 'plainList'
                ? `/api/plainOrders?filter[customerId]=${customer}`
                : which === 'scopedGet'
                  ? `/api/scopedOrders/${order}`
                  : `/api/plainOrders/${order}`;
          return {
            ...req,
            path,
            headers: { ...req.headers, authorization: `Bearer ${tokens[customer - 1] as string}` },
          };
        },
      },
    ],
  });
}

/** The numbers of the scenario: per case, and each pair's ratios (scoped / unscoped). */
export interface ScopedResult {
  cases: Record<ScopedCase, SliceResult>;
  /** rps: scoped req/s over unscoped (1 = no cost); cpu: scoped server CPU per request over unscoped (the bar: at most 1.1). */
  pairs: Array<{
    a: ScopedCase;
    b: ScopedCase;
    rpsRatio: number;
    cpuRatio: number;
    dbCpuRatio: number;
    all: number[];
    allCpu: number[];
  }>;
}

/** Runs the scenario; `tokens[c - 1]` is customer c's bearer token. */
export async function scopedScenario(options: {
  base: string;
  tokens: readonly string[];
  cycles: number;
  sliceSeconds: number;
  connections: number;
  measure: (run: () => Promise<autocannon.Result>) => Promise<SliceResult>;
  log: (...a: unknown[]) => void;
}): Promise<ScopedResult> {
  const { base, tokens, cycles, sliceSeconds, connections, measure, log } = options;
  // The two routes answer the same rows: checked once, for one customer.
  const auth = { authorization: `Bearer ${tokens[6] as string}` };
  const scoped = (await (await fetch(`${base}/api/scopedOrders`, { headers: auth })).json()) as {
    items: unknown[];
    total: number;
  };
  const plain = (await (
    await fetch(`${base}/api/plainOrders?filter[customerId]=7`, { headers: auth })
  ).json()) as { items: unknown[]; total: number };
  if (scoped.total !== 10 || JSON.stringify(scoped) !== JSON.stringify(plain))
    throw new Error(
      `scoped probe: ${JSON.stringify(scoped).slice(0, 200)} against ${JSON.stringify(plain).slice(0, 200)}`,
    );
  for (const which of ['scopedList', 'plainList', 'scopedGet', 'plainGet'] as const)
    await load(base, which, tokens, 3, connections);
  const pairs: Array<[ScopedCase, ScopedCase]> = [
    ['scopedList', 'plainList'],
    ['scopedGet', 'plainGet'],
  ];
  const slices: Record<string, SliceResult[]> = {};
  const ratios: Record<string, Array<{ rps: number; cpu: number; db: number }>> = {};
  for (let cycle = 0; cycle < cycles; cycle++) {
    for (const [a, b] of pairs) {
      const [first, second] = cycle % 2 === 0 ? [a, b] : [b, a];
      const one = await measure(() => load(base, first, tokens, sliceSeconds, connections));
      const two = await measure(() => load(base, second, tokens, sliceSeconds, connections));
      const [own, ref] = first === a ? [one, two] : [two, one];
      (slices[a] ??= []).push(own);
      (slices[b] ??= []).push(ref);
      (ratios[`${a}/${b}`] ??= []).push({
        rps: own.rps / ref.rps,
        cpu: own.cpuUs / ref.cpuUs,
        db: own.dbCpuUs / ref.dbCpuUs,
      });
      log(
        `cycle ${cycle + 1}/${cycles} ${a} ${Math.round(own.rps)} req/s (${own.cpuUs.toFixed(0)} µs CPU) vs ${b} ${Math.round(ref.rps)} req/s (${ref.cpuUs.toFixed(0)} µs CPU): ${(own.rps / ref.rps).toFixed(3)}, CPU ${(own.cpuUs / ref.cpuUs).toFixed(3)}`,
      );
    }
  }
  const cases = Object.fromEntries(
    (['scopedList', 'plainList', 'scopedGet', 'plainGet'] as const).map((which) => {
      const list = slices[which] ?? [];
      return [
        which,
        {
          rps: median(list.map((s) => s.rps)),
          p99Ms: median(list.map((s) => s.p99Ms)),
          cpuUs: median(list.map((s) => s.cpuUs)),
          dbCpuUs: median(list.map((s) => s.dbCpuUs)),
          errors: list.reduce((n, s) => n + s.errors, 0),
        },
      ];
    }),
  ) as ScopedResult['cases'];
  return {
    cases,
    pairs: pairs.map(([a, b]) => {
      const list = ratios[`${a}/${b}`] ?? [];
      return {
        a,
        b,
        rpsRatio: median(list.map((p) => p.rps)),
        cpuRatio: median(list.map((p) => p.cpu)),
        dbCpuRatio: median(list.map((p) => p.db)),
        all: list.map((p) => p.rps),
        allCpu: list.map((p) => p.cpu),
      };
    }),
  };
}

const CASE_TEXT: Record<ScopedCase, string> = {
  scopedList:
    "`GET /api/scopedOrders` (a customer's orders, scoped by the token: `customer_id = sub`)",
  plainList: '`GET /api/plainOrders?filter[customerId]={sub}` (the same rows, unscoped rule)',
  scopedGet: "`GET /api/scopedOrders/{id}` (one of the caller's orders, scoped)",
  plainGet: '`GET /api/plainOrders/{id}` (the same row, unscoped rule)',
};

/** The report's section for the scenario. */
export function renderScoped(r: ScopedResult): string[] {
  const n = (x: number, d = 0) => x.toFixed(d);
  const lines = ['## Authorization: scoped against unscoped reads', ''];
  lines.push(
    `On the Kit server alone, ${ORDERS.toLocaleString('en')} orders of ${CUSTOMERS.toLocaleString('en')} customers (\`customer_id\` indexed), random customers (a bearer token each, verified on both routes), paired slices.`,
    '',
  );
  lines.push(
    '| case | req/s | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req | errors |',
    '|---|---:|---:|---:|---:|---:|',
  );
  for (const which of ['scopedList', 'plainList', 'scopedGet', 'plainGet'] as const) {
    const c = r.cases[which];
    lines.push(
      `| ${CASE_TEXT[which]} | ${n(c.rps)} | ${n(c.p99Ms)} | ${n(c.cpuUs)} | ${n(c.dbCpuUs)} | ${c.errors} |`,
    );
  }
  lines.push(
    '',
    '| pair | req/s ratio (median) | server CPU/req ratio (median) | PostgreSQL CPU/req ratio | every cycle (req/s; CPU) | bar: within 1.1x |',
    '|---|---:|---:|---:|---|---|',
  );
  for (const p of r.pairs) {
    const met = p.rpsRatio >= 1 / 1.1 && p.cpuRatio <= 1.1;
    lines.push(
      `| ${p.a} / ${p.b} | ${n(p.rpsRatio, 3)} | ${n(p.cpuRatio, 3)} | ${n(p.dbCpuRatio, 3)} | ${p.all.map((x) => n(x, 2)).join(', ')}; ${p.allCpu.map((x) => n(x, 2)).join(', ')} | ${met ? 'met' : 'NOT met'} |`,
    );
  }
  lines.push('');
  return lines;
}
