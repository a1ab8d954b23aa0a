// Real service processes for the tests that need more than one instance (several processes on
// one database or store, a leader SIGKILLed mid-work): a fixture script run from source
// (`node --conditions=kit-source --import tsx <fixture>`) that prints one JSON line with its
// `port` once it listens. One helper for every such test, so they all start, bound and end their
// children the same way.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

const root = path.resolve(import.meta.dirname, '..', '..', '..');
const STDERR_TAIL = 8000;
/** A loaded CI machine compiles the fixture with tsx first, and PGlite may run initdb. */
const START_MS = 90_000;

/** A child process running a fixture, and the tail of what it wrote to stderr. */
export interface Spawned {
  readonly child: ChildProcess;
  /** What it wrote to stderr so far (the last 8 KB). */
  stderr(): string;
}

/** A running service process, listening on `base`. */
export interface ProcessHost<Ready extends { port: number } = { port: number }> extends Spawned {
  readonly base: string;
  readonly pid: number;
  /** Its first line, parsed. */
  readonly ready: Ready;
}

/**
 * Spawns `fixture` from source with `env` over this process's environment (stdout and stderr
 * piped, stderr's tail kept).
 *
 * @example
 * ```ts
 * const { child, stderr } = spawnFixture(path.join(import.meta.dirname, 'fixtures', 'host.ts'), { DATABASE_URL: url });
 * ```
 */
export function spawnFixture(fixture: string, env: Record<string, string> = {}): Spawned {
  const child = spawn(process.execPath, ['--conditions=kit-source', '--import', 'tsx', fixture], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-STDERR_TAIL);
  });
  return { child, stderr: () => stderr };
}

/**
 * Starts `fixture` and resolves once it printed its first line (`{ "port": ... }`, more fields
 * allowed); rejects with its stderr when it exits first or does not start within 90 s (then it is
 * killed).
 *
 * @example
 * ```ts
 * const host = await startProcess<{ port: number; owner: string }>(fixture, { REDIS_URL: url });
 * await fetch(`${host.base}/health`);
 * await stopProcess(host, 'SIGKILL');
 * ```
 */
export async function startProcess<Ready extends { port: number } = { port: number }>(fixture: string, env: Record<string, string> = {}): Promise<ProcessHost<Ready>> {
  const spawned = spawnFixture(fixture, env);
  const { child, stderr } = spawned;
  const lines = createInterface({ input: child.stdout! });
  const bound = new AbortController();
  try {
    const first = await Promise.race([
      new Promise<string>((resolve) => lines.once('line', resolve)),
      new Promise<never>((_, reject) => child.once('exit', (code, signal) => reject(new Error(`host exited with ${code ?? signal}:\n${stderr()}`)))),
      sleep(START_MS, undefined, { ref: false, signal: bound.signal }).then(() => Promise.reject(new Error(`host did not start within ${START_MS / 1000} s:\n${stderr()}`))),
    ]);
    const ready = JSON.parse(first) as Ready;
    return { ...spawned, base: `http://127.0.0.1:${ready.port}`, pid: child.pid as number, ready };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  } finally {
    bound.abort();
  }
}

/**
 * Ends a process: SIGKILL (nothing runs: a crash) or SIGTERM (it closes its app and exits);
 * resolves once it exited. Nothing to do for a host that is undefined or already gone.
 *
 * @example
 * ```ts
 * await Promise.all(hosts.map((h) => stopProcess(h)));
 * ```
 */
export async function stopProcess(host: Spawned | undefined, signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL'): Promise<void> {
  if (!host || host.child.exitCode !== null || host.child.signalCode !== null) return;
  const exited = new Promise((resolve) => host.child.once('exit', resolve));
  host.child.kill(signal);
  await exited;
}
