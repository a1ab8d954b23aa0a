// What a benchmark server's process did, from /proc (Linux): CPU time of the main thread and of
// the other threads (V8's GC and compiler helpers, libuv's pool, which runs the log destination's
// writes), the read and write system calls, and context switches. CPU per request alone does not
// say where an audit's cost lands; these do: a line written per request costs little on the main
// thread and a write system call plus a thread-pool round trip elsewhere.
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcStats {
  /** CPU time in µs: the main thread, libuv's pool (named on Node 22+), and every other thread. */
  mainUs: number;
  poolUs: number;
  otherUs: number;
  /** read- and write-type system calls of the whole process (/proc/self/io). */
  syscr: number;
  syscw: number;
  /** Context switches over all threads, voluntary (a thread waited) and not. */
  voluntarySwitches: number;
  involuntarySwitches: number;
}

const TICK_US = 10_000; // USER_HZ = 100 on Linux

function field(text: string, name: string): number {
  const m = new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

export function procStats(): ProcStats | undefined {
  try {
    const out: ProcStats = {
      mainUs: 0,
      poolUs: 0,
      otherUs: 0,
      syscr: 0,
      syscw: 0,
      voluntarySwitches: 0,
      involuntarySwitches: 0,
    };
    for (const tid of readdirSync('/proc/self/task')) {
      const dir = `/proc/self/task/${tid}`;
      // Fields after the command name: state is field 3, utime 14 and stime 15 (1-based).
      const stat = readFileSync(`${dir}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const us = (Number(rest[11]) + Number(rest[12])) * TICK_US;
      const name = readFileSync(`${dir}/comm`, 'utf8').trim();
      if (Number(tid) === process.pid) out.mainUs += us;
      else if (name === 'libuv-worker') out.poolUs += us;
      else out.otherUs += us;
      const status = readFileSync(`${dir}/status`, 'utf8');
      out.voluntarySwitches += field(status, 'voluntary_ctxt_switches');
      out.involuntarySwitches += field(status, 'nonvoluntary_ctxt_switches');
    }
    const io = readFileSync('/proc/self/io', 'utf8');
    out.syscr = field(io, 'syscr');
    out.syscw = field(io, 'syscw');
    return out;
  } catch {
    return undefined; // not Linux
  }
}
