// What the benchmarks share: servers in their own processes (each prints `READY <port>` once it
// listens) that cannot outlive the harness, and the median.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';

/** A server process and its loopback base URL. */
export interface ServerProcess {
  child: ChildProcess;
  base: string;
}

// A crash of the harness must not leave a server behind (it would hold the terminal's pipes open).
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
// Nor an interrupted one: a signal ends the process without 'exit'.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of children) child.kill('SIGKILL');
    process.kill(process.pid, signal);
  });
}

/** Starts `node <args>` and resolves once it printed `READY <port>`; rejects if it exits first. */
export async function spawnServer(
  nodeBin: string,
  args: readonly string[],
  label: string,
): Promise<ServerProcess> {
  const child = spawn(nodeBin, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const port = await readyPort(child, `server ${label}`);
  return { child, base: `http://127.0.0.1:${port}` };
}

/** The port a bench server prints as `READY <port>` once it listens; rejects if it exits first. */
export function readyPort(child: ChildProcess, label: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${label} exited with ${code}`)));
  });
}

/** The parts of a V8 `.cpuprofile` the profile reports read. */
export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string };
    children?: number[];
  }>;
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

/**
 * The main thread's profile from a `--cpu-prof-dir` (the largest file: tsx's loader thread writes
 * a small one too); the directory is removed.
 */
export async function readMainProfile(dir: string): Promise<CpuProfile> {
  const files = await Promise.all(
    (await readdir(dir)).map(async (f) => ({ f, size: (await stat(path.join(dir, f))).size })),
  );
  const main = files.sort((a, b) => b.size - a.size)[0];
  if (!main) throw new Error('no profile written');
  const profile = JSON.parse(await readFile(path.join(dir, main.f), 'utf8')) as CpuProfile;
  await rm(dir, { recursive: true, force: true });
  return profile;
}

/** SIGTERM, then SIGKILL after 5 s. */
export async function stopServer(server: ServerProcess): Promise<void> {
  const exited = new Promise((r) => server.child.once('exit', r));
  server.child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  server.child.kill('SIGKILL');
}

/** The median (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}
