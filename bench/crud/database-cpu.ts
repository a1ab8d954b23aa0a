// The CPU a PostgreSQL server has spent, for the CRUD benchmarks' per-request figures.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * CPU time (µs, user + system) of every process of the PostgreSQL server whose data directory is
 * `dataDir`: the postmaster, its live children, and the children it has reaped (a pool closes idle
 * connections, and their backends' time must not vanish from the sum). From /proc, 100 ticks a second.
 */
export function databaseCpuUs(dataDir: string): number {
  const postmaster = Number(
    readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0],
  );
  const tick = 1e6 / 100;
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(entry) !== postmaster && Number(fields[1]) !== postmaster) continue;
      total += (Number(fields[11]) + Number(fields[12])) * tick;
      if (Number(entry) === postmaster) total += (Number(fields[13]) + Number(fields[14])) * tick;
    } catch {
      // The process ended while being read.
    }
  }
  return total;
}
