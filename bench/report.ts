// Renders the numbers of one `npm run bench` run as its report (bench/results/<topic>-node<major>.md):
// the tables and each quality bar, met or not. `node --import tsx bench/report.ts throughput-node24 ...`
// renders kept results again (bench/results/NAME.json to bench/results/NAME.md), e.g. after a change
// to how a bar is computed.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface ThroughputRow {
  id: string;
  label: string;
  path: string;
  rps: number[];
  medianRps: number;
  medianP99Ms: number;
  ratioToBare: number;
  cpuUs: number[];
  medianCpuUs: number;
  cpuRatioToBare: number;
  /** The ratio of each cycle's pair, in cycle order (absent in results written before they were kept). */
  pairRatios?: number[];
  pairCpuRatios?: number[];
  errors: number;
  auditDropped?: number;
  /** Medians per request from /proc: CPU µs by thread group, system calls, context switches. */
  proc?: {
    mainUs: number;
    poolUs: number;
    otherUs: number;
    syscr: number;
    syscw: number;
    voluntarySwitches: number;
    involuntarySwitches: number;
  };
}

export interface Results {
  machine: {
    node: string;
    cores: number;
    cpu: string;
    memoryGb: number;
    date: string;
    mode: string;
    fresh?: boolean;
    warmupSeconds?: number;
    semiSpaceMb?: number;
    seconds: number;
    cycles: number;
    sliceSeconds: number;
    connections: number;
  };
  throughput?: ThroughputRow[];
  healthz?: {
    connections: number;
    seconds: number;
    requests: number;
    rps: number;
    p99Ms: number;
    slowCheckRuns: number;
    maxWaves: number;
    requestsPerCheckRun: number;
    non2xx: number;
  };
  startup?: {
    classes: number;
    kitMs: number[];
    manualMs: number[];
    medianKitMs: number;
    medianManualMs: number;
    ratio: number;
  };
  memory?: {
    requests: number;
    completed: number;
    non2xx: number;
    heapBeforeMb: number;
    heapAfterMb: number;
    heapMaxMb: number;
    rssBeforeMb: number;
    rssAfterMb: number;
    audit?: Record<string, number>;
  };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const n = (v: number, d = 0) =>
  v.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const mark = (ok: boolean) => (ok ? 'met' : '**missed**');

export function renderReport(r: Results): string {
  const m = r.machine;
  const lines: string[] = [
    '# Benchmark results',
    '',
    `Measured ${m.date.slice(0, 10)} on Node ${m.node}, ${m.cores} cores (${m.cpu}), ${m.memoryGb} GiB; mode \`${m.mode}\`, autocannon over loopback with ${m.connections} connections, every server logging at info level to \`/dev/null\` through the same pino destination (\`pino.destination({ sync: false })\`).`,
    '',
    `Throughput: ${m.fresh ? `the servers are started anew for every cycle (\`--fresh\`), so that one process's own state does not weigh on every cycle, and warmed up with ${m.warmupSeconds ?? 15} s of load` : `all servers are started once and warmed up with ${m.warmupSeconds ?? 2} s of load`}. In each of ${m.cycles} cycles every scenario gets a ${m.sliceSeconds} s slice of load right next to a ${m.sliceSeconds} s slice of its baseline (bare Fastify; for Kit's /livez the bare route sending the same answer), the order of the two alternating from cycle to cycle; the ratio is taken within each pair and the median over the cycles is shown, because the machine's speed drifts by more than the differences measured here, but hardly between two neighbouring slices. "CPU µs/request" is the server process's user + system CPU time (all its threads) during a slice divided by the requests it served; "CPU ratio" is the baseline's CPU per request over the scenario's, i.e. the throughput ratio a CPU-bound server would show. The machine is shared and noisy: compare ratios, not absolute numbers.${m.semiSpaceMb ? ` Every server's young generation is pinned to ${m.semiSpaceMb} MB per semi-space (\`--semi-space=${m.semiSpaceMb}\`: V8's \`--min-semi-space-size\` and \`--max-semi-space-size\`), so that the collector's cost follows what a server allocates, not V8's per-process sizing.` : ''}`,
    '',
    "Regenerate: `npm run bench` (quick) or `npm run bench -- --full`; `--node=/path/to/node` runs the servers on another Node binary, the report goes to `bench/results/<topic>-node<major>.md` and `.json` (`--out=<topic>`, default `throughput`), `--semi-space=MB` pins every server's young generation.",
    '',
  ];
  const bars: Array<[string, boolean, string]> = [];
  // Comparisons that are not DESIGN bars but say where a missed bar's cost lies.
  const notes: string[] = [];
  if (r.throughput) {
    lines.push(
      '## Throughput',
      '',
      'Ratios are to bare Fastify on the same route: the hello route, or the realistic one (`POST /api/orders`, a 1 KB JSON body in, a 2 KB JSON answer out, ten request headers); Kit /livez is compared with the bare route sending the same answer.',
      '',
      '| scenario | path | req/s (median) | p99 (ms) | ratio (req/s) | CPU µs/request | CPU ratio | audit entries dropped | slices (req/s) |',
      '|---|---|---:|---:|---:|---:|---:|---:|---|',
    );
    for (const t of r.throughput) {
      const drops = t.auditDropped === undefined ? '' : n(t.auditDropped);
      lines.push(
        `| ${t.label} | \`${t.path}\` | ${n(t.medianRps)} | ${n(t.medianP99Ms)} | ${n(t.ratioToBare, 3)} | ${n(t.medianCpuUs, 1)} | ${n(t.cpuRatioToBare, 3)} | ${drops} | ${t.rps.map((v) => n(v)).join(', ')} |`,
      );
    }
    lines.push('');
    if (r.throughput.some((t) => t.proc)) {
      lines.push(
        "### Where the server's CPU goes",
        '',
        "Medians per request over the same slices, from `/proc`: CPU time of the main thread, of libuv's thread pool (which runs the log destination's file writes; Node 22 and later name its threads, on Node 20 it counts under the other threads), and of the other threads (V8's garbage-collector and compiler helpers); the write- and read-type system calls of the process (a socket write per response, the destination's file writes, the pool waking the main thread), and the context switches of all threads. Clock ticks are 10 ms, so the thread split is coarse on short slices.",
        '',
        '| scenario | main thread µs | pool µs | other threads µs | write syscalls | read syscalls | voluntary switches |',
        '|---|---:|---:|---:|---:|---:|---:|',
      );
      for (const t of r.throughput) {
        const p = t.proc;
        if (p)
          lines.push(
            `| ${t.label} | ${n(p.mainUs, 1)} | ${n(p.poolUs, 1)} | ${n(p.otherUs, 1)} | ${n(p.syscw, 2)} | ${n(p.syscr, 2)} | ${n(p.voluntarySwitches, 2)} |`,
          );
      }
      lines.push('');
    }
    const by = Object.fromEntries(r.throughput.map((t) => [t.id, t]));
    // Two scenarios measured at different times are compared through their ratios to the bare
    // slice each was paired with: the machine's speed drifts between their slices, not within a pair.
    const rivals = Math.max(
      by['fastify-logging']?.ratioToBare ?? 0,
      by['pino-http']?.ratioToBare ?? 0,
    );
    // An audit scenario that dropped entries did less work than it claims: it cannot meet a bar.
    const whole = (t: ThroughputRow) => (t.auditDropped ?? 0) === 0;
    const audit = (t: ThroughputRow) =>
      `${n(t.ratioToBare, 3)} (CPU ratio ${n(t.cpuRatioToBare, 3)}; ${n(t.auditDropped ?? 0)} entries dropped)`;
    const floor = by.floor;
    const pinoHttp = by['pino-http'];
    for (const [id, mode, bar] of [
      ['audit-async', 'async', 0.8],
      ['audit-sync', 'sync', 0.75],
    ] as const) {
      const t = by[id];
      if (!t) continue;
      bars.push([
        `Audit ${mode} >= ${bar.toFixed(2)} of bare Fastify (hello route)`,
        t.ratioToBare >= bar && whole(t),
        audit(t),
      ]);
      if (floor)
        bars.push([
          `Audit ${mode} above the hand-written minimal audit`,
          t.ratioToBare > floor.ratioToBare && whole(t),
          `${n(t.ratioToBare, 3)} vs ${n(floor.ratioToBare, 3)}`,
        ]);
      // Not a DESIGN bar: the floor offering what Kit's default offers, the id behind getCorrelationId().
      const withContext = by['floor-context'];
      if (withContext)
        bars.push([
          `Audit ${mode} above the hand-written audit with a correlation context (not a DESIGN bar)`,
          t.ratioToBare > withContext.ratioToBare && whole(t),
          `${n(t.ratioToBare, 3)} vs ${n(withContext.ratioToBare, 3)}`,
        ]);
      if (pinoHttp)
        bars.push([
          `Audit ${mode} >= 1.3x pino-http's req/s`,
          t.ratioToBare >= 1.3 * pinoHttp.ratioToBare,
          `${n(t.ratioToBare / pinoHttp.ratioToBare, 2)}x (${n(t.ratioToBare, 3)} vs ${n(pinoHttp.ratioToBare, 3)} of bare Fastify)`,
        ]);
    }
    if (by['audit-async-real'])
      bars.push([
        'Audit async >= 0.90 of bare Fastify on the realistic route',
        by['audit-async-real'].ratioToBare >= 0.9 && whole(by['audit-async-real']),
        audit(by['audit-async-real']),
      ]);
    if (by['audit-async'] && rivals)
      bars.push([
        "Audit async beats Fastify's request logging and pino-http",
        by['audit-async'].ratioToBare > rivals,
        `${n(by['audit-async'].ratioToBare, 3)} vs ${n(rivals, 3)} of bare Fastify`,
      ]);
    const fields = by['floor-fields'];
    const fieldsReal = by['floor-fields-real'];
    for (const [id, mode] of [
      ['audit-async', 'async'],
      ['audit-sync', 'sync'],
    ] as const) {
      const t = by[id];
      if (t && fields)
        notes.push(
          `| Audit ${mode}, hello route | ${n(t.ratioToBare, 3)} | ${n(fields.ratioToBare, 3)} | ${n(t.ratioToBare / fields.ratioToBare, 2)}x |`,
        );
      const real = by[`${id}-real`];
      if (real && fieldsReal)
        notes.push(
          `| Audit ${mode}, realistic route | ${n(real.ratioToBare, 3)} | ${n(fieldsReal.ratioToBare, 3)} | ${n(real.ratioToBare / fieldsReal.ratioToBare, 2)}x |`,
        );
    }
    // Asynchronous writing exists to take work off the request: it must cost a request no more
    // than synchronous writing. Each cycle pairs both with a bare slice; the quotient of the two
    // ratios of one cycle compares them without the drift between cycles.
    const sync = by['audit-sync'];
    const asyncRow = by['audit-async'];
    if (sync?.pairRatios && asyncRow?.pairRatios && sync.pairCpuRatios && asyncRow.pairCpuRatios) {
      const quotients = (a: number[], b: number[]) =>
        a.slice(0, Math.min(a.length, b.length)).map((v, i) => v / (b[i] as number));
      const rps = median(quotients(asyncRow.pairRatios, sync.pairRatios));
      const cpu = median(quotients(asyncRow.pairCpuRatios, sync.pairCpuRatios));
      bars.push([
        'Audit async at least as fast as audit sync (hello route)',
        rps >= 1 && whole(asyncRow),
        `${n(rps, 3)}x sync's req/s ratio, ${n(cpu, 3)}x its CPU ratio (medians over the cycles of async's ratio over sync's)`,
      ]);
    }
    if (by.livez)
      bars.push([
        '/livez >= 0.95 of a bare Fastify route sending the same answer',
        by.livez.ratioToBare >= 0.95,
        n(by.livez.ratioToBare, 3),
      ]);
  }
  if (r.healthz) {
    const h = r.healthz;
    lines.push(
      '## /healthz under load',
      '',
      `Three checks (two immediate, one taking 50 ms), ${h.connections} concurrent connections for ${h.seconds} s.`,
      '',
      '| requests | req/s | p99 (ms) | runs of the 50 ms check | waves possible (elapsed / 50 ms) | requests per check run |',
      '|---:|---:|---:|---:|---:|---:|',
      `| ${n(h.requests)} | ${n(h.rps)} | ${n(h.p99Ms)} | ${n(h.slowCheckRuns)} | ${n(h.maxWaves)} | ${n(h.requestsPerCheckRun, 1)} |`,
      '',
    );
    bars.push([
      '/healthz runs the 50 ms check once per wave under 200 probes',
      h.slowCheckRuns > 0 && h.slowCheckRuns <= h.maxWaves,
      `${h.slowCheckRuns} runs for ${n(h.requests)} requests (at most ${h.maxWaves} waves)`,
    ]);
  }
  if (r.startup) {
    const s = r.startup;
    lines.push(
      '## Start-up of 1,000 endpoint classes',
      '',
      '| | median (ms) | runs (ms) |',
      '|---|---:|---|',
      `| Kit: discover, name, map 1,000 classes | ${n(s.medianKitMs)} | ${s.kitMs.map((v) => n(v)).join(', ')} |`,
      `| Fastify: the same 1,000 routes registered by hand | ${n(s.medianManualMs)} | ${s.manualMs.map((v) => n(v)).join(', ')} |`,
      '',
    );
    bars.push([
      '1,000 classes mapped in <= 2x the time of registering the routes by hand',
      s.ratio <= 2,
      `${n(s.ratio, 2)}x`,
    ]);
  }
  if (r.memory) {
    const x = r.memory;
    const a = x.audit ?? {};
    lines.push(
      '## Memory with a sink that never answers (async audit)',
      '',
      `${n(x.requests)} requests after a 20,000-request warm-up; the queue holds at most 4,096 entries, the rest are dropped.`,
      '',
      '| heap before (MB) | heap max (MB) | heap after (MB) | RSS before (MB) | RSS after (MB) | enqueued | dropped | written | queue depth | non-2xx |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      `| ${n(x.heapBeforeMb, 1)} | ${n(x.heapMaxMb, 1)} | ${n(x.heapAfterMb, 1)} | ${n(x.rssBeforeMb, 1)} | ${n(x.rssAfterMb, 1)} | ${n(a.enqueued ?? 0)} | ${n(a.dropped ?? 0)} | ${n(a.written ?? 0)} | ${n(a.queueDepth ?? 0)} | ${n(x.non2xx)} |`,
      '',
    );
    bars.push([
      'Memory stays flat with a sink that never answers',
      x.heapMaxMb - x.heapBeforeMb < 64 && x.non2xx === 0,
      `heap ${n(x.heapBeforeMb, 1)} -> max ${n(x.heapMaxMb, 1)} MB over ${n(x.requests)} requests`,
    ]);
  }
  lines.push(
    '## Quality bars (DESIGN.md)',
    '',
    '| bar | result | measured |',
    '|---|---|---|',
    ...bars.map(([b, ok, v]) => `| ${b} | ${mark(ok)} | ${v} |`),
    '',
  );
  if (notes.length > 0) {
    lines.push(
      '### Against a hand-written audit writing the same line',
      '',
      "Not a bar: the floor above writes the rendered message only (about half the bytes of a Default line); this hand-written hook writes the Default line's structured fields, start time and route too, with the default headers redacted, through one `JSON.stringify` (`floor-fields` in `bench/server.ts`). Ratios to bare Fastify on the same route; the last column is the quotient of the two ratios.",
      '',
      '| scenario | Kit | hand-written, same fields | Kit / hand-written |',
      '|---|---:|---:|---:|',
      ...notes,
      '',
    );
  }
  return `${lines.join('\n')}\n`;
}

if (
  process.argv[1] !== undefined &&
  path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const name of process.argv.slice(2)) {
    const results = JSON.parse(
      await readFile(path.join(here, 'results', `${name}.json`), 'utf8'),
    ) as Parameters<typeof renderReport>[0];
    await writeFile(path.join(here, 'results', `${name}.md`), renderReport(results));
  }
}
