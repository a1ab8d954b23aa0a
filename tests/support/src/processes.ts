// Real service processes for the tests that need more than one instance (several processes on
// one database or store, a leader SIGKILLed mid-work): a fixture script run from source
// (`node` with ./node-args.ts's `typescriptArgs`, then `<fixture>`) that prints one JSON line with its
// `port` once it listens. One helper for every such test, so they all start, bound and end their
// children the same way.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { typescriptArgs } from './node-args.ts';
import { until } from './until.ts';

const root = path.resolve(import.meta.dirname, '..', '..', '..');
const STDERR_TAIL = 8000;
/** A loaded CI machine may transform the fixture first, and PGlite may run initdb. */
const START_MS = 90_000;

/** How a child process ended, and when (`performance.now()`). */
export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly at: number;
}

/** A child process running a fixture, and what it wrote. */
export interface Spawned {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  /** What it wrote to stderr so far (the last 8,000 characters unless `stderrTail` says otherwise). */
  stderr(): string;
  /** Everything it wrote to stdout so far. */
  stdout(): string;
  /** Its stdout lines so far, without one still being written (until stdout is closed). */
  lines(): string[];
  /** Settles once it exited. */
  readonly exited: Promise<Exit>;
  /**
   * Settles once it exited and its stdout and stderr are closed: every byte it wrote has been
   * read, so `stdout()` and `lines()` are whole (`exited` may come before the last chunk).
   */
  readonly closed: Promise<Exit>;
  /** When it was spawned (`performance.now()`). */
  readonly spawnedAt: number;
}

/** A running service process, listening on `base`. */
export interface ProcessHost<Ready extends { port: number } = { port: number }> extends Spawned {
  readonly base: string;
  readonly pid: number;
  /** Its ready line, parsed. */
  readonly ready: Ready;
  /** When it printed its ready line (`performance.now()`). */
  readonly listeningAt: number;
}

/** How to run a fixture. */
export interface SpawnOptions {
  /** Arguments after the fixture's path. */
  readonly args?: readonly string[];
  /** The working directory. Default: the repository's root. */
  readonly cwd?: string;
  /**
   * How much of stderr `stderr()` keeps, in characters: the last 8,000 by default (enough for a
   * failure message); `Infinity` for a test that reads every line the process wrote there.
   */
  readonly stderrTail?: number;
  /** Node's arguments before the fixture's path. Default: `typescriptArgs` (./node-args.ts). */
  readonly nodeArgs?: readonly string[];
}

/** How to run a fixture and tell that it is ready. */
export interface StartOptions<Ready extends { port: number }> extends SpawnOptions {
  /**
   * Reads one stdout line; returns the ready state once the line says the host listens. Default:
   * the first line, parsed as JSON (`{ "port": ... }`, more fields allowed).
   */
  readonly ready?: (line: string) => Ready | undefined;
  /** How long the start may take before the child is killed. Default 90 s. */
  readonly startMs?: number;
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
export function spawnFixture(
  fixture: string,
  env: Record<string, string> = {},
  options: SpawnOptions = {},
): Spawned {
  const spawnedAt = performance.now();
  const nodeArgs = options.nodeArgs ?? typescriptArgs;
  const child = spawn(process.execPath, [...nodeArgs, fixture, ...(options.args ?? [])], {
    cwd: options.cwd ?? root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  const tail = options.stderrTail ?? STDERR_TAIL;
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.length > tail) stderr = stderr.slice(-tail);
  });
  // Lines are split as they arrive, so that a test waiting for one (printed) does not split a
  // host's whole output again on every try.
  const complete: string[] = [];
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    stdout += text;
    const parts = (partial + text).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) complete.push(line);
  });
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: performance.now() })),
  );
  let ended = false;
  const closed = new Promise<Exit>((resolve) =>
    child.once('close', (code, signal) => {
      ended = true;
      resolve({ code, signal, at: performance.now() });
    }),
  );
  // What follows the last newline is a line still being written, until stdout is closed.
  const lines = (): string[] => (ended && partial !== '' ? [...complete, partial] : complete);
  return { child, stderr: () => stderr, stdout: () => stdout, lines, exited, closed, spawnedAt };
}

const firstLine = <Ready>(line: string): Ready => JSON.parse(line) as Ready;

/**
 * Starts `fixture` and resolves once it printed its ready line (by default its first line,
 * `{ "port": ... }`, more fields allowed; `options.ready` reads another form); rejects with its
 * stderr when it exits first or does not start within `options.startMs` (then it is killed). The
 * one way the tests start a host process, whatever its fixture prints.
 *
 * @example
 * ```ts
 * const host = await startProcess<{ port: number; owner: string }>(fixture, { REDIS_URL: url });
 * await fetch(`${host.base}/health`);
 * await stopProcess(host, 'SIGKILL');
 *
 * const audited = await startProcess(script, {}, {
 *   args: [auditFile],
 *   ready: (line) => (/^READY (\d+)/.exec(line) ? { port: Number(RegExp.$1) } : undefined),
 * });
 * ```
 */
export async function startProcess<Ready extends { port: number } = { port: number }>(
  fixture: string,
  env: Record<string, string> = {},
  options: StartOptions<Ready> = {},
): Promise<ProcessHost<Ready>> {
  const spawned = spawnFixture(fixture, env, options);
  const { child, stderr } = spawned;
  const startMs = options.startMs ?? START_MS;
  const isReady = options.ready ?? firstLine<Ready>;
  const lines = createInterface({ input: child.stdout! });
  const bound = new AbortController();
  let onLine: ((line: string) => void) | undefined;
  try {
    const ready = await Promise.race([
      new Promise<Ready>((resolve, reject) => {
        onLine = (line) => {
          try {
            const found = isReady(line);
            if (found !== undefined) resolve(found);
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
          }
        };
        lines.on('line', onLine);
      }),
      spawned.exited.then(({ code, signal }) =>
        Promise.reject(
          new Error(`host exited with ${code ?? signal} before it was ready:\n${stderr()}`),
        ),
      ),
      sleep(startMs, undefined, { ref: false, signal: bound.signal }).then(() =>
        Promise.reject(new Error(`host did not start within ${startMs / 1000} s:\n${stderr()}`)),
      ),
    ]);
    return {
      ...spawned,
      base: `http://127.0.0.1:${ready.port}`,
      pid: child.pid as number,
      ready,
      listeningAt: performance.now(),
    };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  } finally {
    if (onLine) lines.off('line', onLine);
    bound.abort();
  }
}

/**
 * Resolves with the first stdout line of `spawned` that contains `match` (a string) or matches it
 * (a pattern), whether printed before the call or after; rejects with its stderr when it ends
 * without printing one, or when `timeoutMs` passes first (the process is left running: the test's
 * own clean-up ends it).
 *
 * @example
 * ```ts
 * host.child.kill('SIGTERM');
 * await printed(host, 'HOST SIGTERM', 10_000);
 * const { port } = JSON.parse(await printed(host, /"kitHost":"listening"/)) as { port: number };
 * ```
 */
export async function printed(
  spawned: Pick<Spawned, 'lines' | 'closed' | 'stderr'>,
  match: string | RegExp,
  timeoutMs: number = START_MS,
): Promise<string> {
  const matches =
    typeof match === 'string' ? (l: string) => l.includes(match) : (l: string) => match.test(l);
  let ended: Exit | undefined;
  void spawned.closed.then((exit) => (ended = exit));
  const { value } = await until(
    `a stdout line with ${String(match)}`,
    () => {
      const line = spawned.lines().find(matches);
      if (line === undefined && ended !== undefined)
        throw new Error(
          `the process ended (${ended.code ?? ended.signal}) without printing ${String(match)}:\n${spawned.stderr()}`,
        );
      return line;
    },
    { timeoutMs, intervalMs: 10, diagnostic: () => `stderr:\n${spawned.stderr()}` },
  );
  return value;
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
export async function stopProcess(
  host: Spawned | undefined,
  signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL',
): Promise<void> {
  if (!host || host.child.exitCode !== null || host.child.signalCode !== null) return;
  const exited = new Promise((resolve) => host.child.once('exit', resolve));
  host.child.kill(signal);
  await exited;
}
