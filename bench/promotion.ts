// Bytes each server promotes to the old generation per request, over fresh processes:
//
//   npm run bench:promotion -- [--only=bare,floor,kit-audit-sync,kit-audit-async] [--runs=6]
//     [--seconds=6] [--node=/path/to/node] [--flags="--no-allocation-site-pretenuring"]
//
// A server whose requests' garbage outlives the scavenges promotes kilobytes per request instead
// of bytes, and spends a quarter more CPU on each. Whether it does is settled early in a process's
// life (docs/decisions.md, "Connection tracking and V8's pretenuring"), so a paired throughput run,
// which keeps one process per server, sees it in some runs and not in others. Each run here is a
// new process (`bench/server.ts <scenario>` with KIT_BENCH_GC=1): `seconds` of load from 100
// connections to warm it up, then `seconds` counted.
import { execFileSync } from 'node:child_process';
import autocannon from 'autocannon';
import { spawnServer, stopServer } from './harness.js';
import type { GcStats } from './gc-stats.js';

const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const scenarios = (arg('only') ?? 'bare,floor,kit-audit-sync,kit-audit-async').split(',');
const runs = Number(arg('runs') ?? 6);
const seconds = Number(arg('seconds') ?? 6);
const nodeBin = arg('node') ?? process.execPath;
const flags = (arg('flags') ?? '').split(' ').filter((f) => f !== '');
const here = new URL('.', import.meta.url).pathname;

interface Stats {
  gc: GcStats;
  cpu: NodeJS.CpuUsage;
}

async function stats(base: string): Promise<Stats> {
  return (await fetch(`${base}/bench/stats`)).json() as Promise<Stats>;
}

process.env.KIT_BENCH_GC = '1';
console.log(
  `Node ${execFileSync(nodeBin, ['-v']).toString().trim()}, ${runs} processes per server, ${seconds} s warm-up then ${seconds} s counted, 100 connections${flags.length ? `, ${flags.join(' ')}` : ''}\n`,
);
console.log(
  '| server | bytes promoted per request, run by run | runs over 1 KB per request | CPU µs per request, run by run |',
);
console.log('|---|---|---:|---|');
for (const scenario of scenarios) {
  const promoted: number[] = [];
  const cpu: number[] = [];
  for (let run = 0; run < runs; run++) {
    const server = await spawnServer(
      nodeBin,
      [
        ...flags,
        '--conditions=kit-source',
        '--import',
        import.meta.resolve('tsx'),
        `${here}server.ts`,
        scenario,
      ],
      scenario,
    );
    try {
      const url = `${server.base}/api/hello`;
      await autocannon({ url, connections: 100, duration: seconds });
      const before = await stats(server.base);
      const result = await autocannon({ url, connections: 100, duration: seconds });
      const after = await stats(server.base);
      // The two /bench/stats requests are left out of the count; their share is negligible.
      const requests = result.requests.total;
      promoted.push((after.gc.promotedBytes - before.gc.promotedBytes) / requests);
      cpu.push(
        (after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) / requests,
      );
    } finally {
      await stopServer(server);
    }
  }
  const over = promoted.filter((p) => p > 1024).length;
  console.log(
    `| ${scenario} | ${promoted.map((p) => p.toFixed(0)).join(', ')} | ${over} of ${runs} | ${cpu.map((c) => c.toFixed(1)).join(', ')} |`,
  );
}
