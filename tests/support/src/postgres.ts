// Starts a real PostgreSQL server for the tests from Debian's binaries: initdb into a temporary
// directory, pg_ctl on a free loopback port, stop and start again (data kept) for outage tests.
// Never relies on a system service. Outside CI missing binaries skip the PostgreSQL tests
// (reported as skipped); with CI=true they fail them.
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { SuiteContext } from 'node:test';
import pg from 'pg';
import { describeWithServer, executable, skipWithout, throwMissing } from './binaries.ts';
import { freePort } from './ports.ts';
import { until } from './until.ts';

const run = promisify(execFile);

/** `KIT_PG_BIN` when set, else the newest `/usr/lib/postgresql/<version>/bin` holding initdb and pg_ctl. */
export function findPostgresBin(): string | undefined {
  const explicit = process.env.KIT_PG_BIN;
  if (explicit !== undefined)
    return executable(path.join(explicit, 'initdb')) ? explicit : undefined;
  let versions: string[];
  try {
    versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
  } catch {
    return undefined;
  }
  return versions
    .map((v) => `/usr/lib/postgresql/${v}/bin`)
    .find((bin) => executable(path.join(bin, 'initdb')) && executable(path.join(bin, 'pg_ctl')));
}

export const postgresBin = findPostgresBin();

/**
 * The `skip` reason for PostgreSQL suites outside CI when the binaries are missing; `false`
 * otherwise. In CI nothing is skipped: `PostgresServer.start` throws and the suite fails.
 */
export const skipPostgres: string | false = skipWithout(
  postgresBin,
  'PostgreSQL binaries not installed (apt-get install postgresql)',
);

// initdb refuses to run as root: as root the server runs as the `postgres` user.
const asRoot = process.getuid?.() === 0;

function command(bin: string, args: string[]): [string, string[]] {
  return asRoot
    ? ['runuser', ['-u', 'postgres', '--', path.join(postgresBin as string, bin), ...args]]
    : [path.join(postgresBin as string, bin), args];
}

async function exec(bin: string, args: string[]): Promise<string> {
  const [file, argv] = command(bin, args);
  try {
    const { stdout, stderr } = await run(file, argv, { timeout: 60_000 });
    return stdout + stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${bin} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`,
      { cause: err },
    );
  }
}

const running = new Set<PostgresServer>();
// A test process that dies must not leave servers behind.
process.once('exit', () => {
  for (const server of running) server.stopNow();
});

/** How `pg_ctl` stops a server: `fast` ends sessions cleanly, `immediate` crashes it (recovery on the next start). */
export type ShutdownMode = 'fast' | 'immediate';

/** Settings of a test server. */
export interface PostgresServerSettings {
  /**
   * Keep `synchronous_commit` on, so that a commit is acknowledged only once its WAL is written:
   * then an immediate shutdown (a crash) loses no acknowledged write. Off by default (faster).
   */
  readonly durable?: boolean;
  /** Extra `-c name=value` settings. */
  readonly settings?: Readonly<Record<string, string | number>>;
}

/** One PostgreSQL server in a temporary directory, on a loopback port; restartable with its data. */
export class PostgresServer {
  #running = false;

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly settings: PostgresServerSettings,
  ) {}

  /** initdb (user `kit`, trust auth, C locale) and start on a free port; waits until it accepts connections. */
  static async start(settings: PostgresServerSettings = {}): Promise<PostgresServer> {
    if (!postgresBin)
      throwMissing('PostgreSQL binaries not installed', 'PostgreSQL', 'apt-get install postgresql');
    const dir = mkdtempSync(path.join(tmpdir(), 'kit-pg-'));
    if (asRoot) {
      chmodSync(dir, 0o777);
      spawnSync('chown', ['postgres', dir]);
    }
    const data = path.join(dir, 'data');
    await exec('initdb', [
      '-D',
      data,
      '-U',
      'kit',
      '--auth=trust',
      '--locale=C',
      '--encoding=UTF8',
      '--no-sync',
    ]);
    for (let attempt = 1; ; attempt++) {
      const server = new PostgresServer(dir, await freePort(), settings);
      try {
        await server.resume();
        return server;
      } catch (err) {
        // Another process may have taken the port between freePort() and the bind.
        if (attempt >= 3) {
          rmSync(dir, { recursive: true, force: true });
          throw err;
        }
      }
    }
  }

  get url(): string {
    return `postgres://kit@127.0.0.1:${this.port}/postgres`;
  }

  get running(): boolean {
    return this.#running;
  }

  /** The server's command-line settings. fsync stays off: a test needs no survival of an OS crash. */
  #options(): string {
    const settings: Record<string, string | number> = {
      fsync: 'off',
      full_page_writes: 'off',
      synchronous_commit: this.settings.durable ? 'on' : 'off',
      ...this.settings.settings,
    };
    const extra = Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`);
    return [`-c listen_addresses=127.0.0.1 -p ${this.port} -k ${this.dir}`, ...extra].join(' ');
  }

  /** Where the server writes its log (every statement, with `log_statement=all`). */
  get log(): string {
    return path.join(this.dir, 'server.log');
  }

  /**
   * The server log from byte `start` on (`statSync(server.log).size` before the requests), once
   * `done` finds in it what the test waits for: the server writes its log asynchronously, after
   * the answer. Fails after `timeoutMs`.
   *
   * @example
   * ```ts
   * const start = statSync(server.log).size;
   * await repo.delete(id);
   * const text = await server.logSince(start, (t) => /delete from "items"/.test(t));
   * ```
   */
  async logSince(
    start: number,
    done: (text: string) => boolean,
    timeoutMs = 5000,
  ): Promise<string> {
    let text = '';
    await until(
      'the awaited statements in the server log',
      () => done((text = readFileSync(this.log).subarray(start).toString('utf8'))),
      { timeoutMs, intervalMs: 100, diagnostic: () => text.slice(-4000) },
    );
    return text;
  }

  /** pg_ctl `command` (start or restart) with this server's data, log and settings, waiting up to 30 s. */
  async #start(command: 'start' | 'restart', extra: readonly string[] = []): Promise<void> {
    await exec('pg_ctl', [
      '-D',
      path.join(this.dir, 'data'),
      '-l',
      this.log,
      '-o',
      this.#options(),
      ...extra,
      '-w',
      '-t',
      '30',
      command,
    ]);
  }

  /** Starts (again) on the same port with the same data; resolves once it accepts connections. */
  async resume(): Promise<void> {
    if (this.#running) return;
    await this.#start('start');
    this.#running = true;
    running.add(this);
  }

  /** Stops the server (`fast`: sessions are terminated; `immediate`: a crash) and waits until it is down. */
  async stop(mode: ShutdownMode = 'fast'): Promise<void> {
    if (!this.#running) return;
    await exec('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', mode, '-w', '-t', '30', 'stop']);
    this.#running = false;
    running.delete(this);
  }

  /** `pg_ctl restart -m mode`: stops and starts again with the same data; resolves once it accepts connections. */
  async restart(mode: ShutdownMode): Promise<void> {
    if (!this.#running) return this.resume();
    await this.#start('restart', ['-m', mode]);
  }

  /** Immediate shutdown, synchronously (for the exit handler). */
  stopNow(): void {
    if (!this.#running) return;
    const [file, argv] = command('pg_ctl', [
      '-D',
      path.join(this.dir, 'data'),
      '-m',
      'immediate',
      '-w',
      'stop',
    ]);
    spawnSync(file, argv);
    this.#running = false;
    running.delete(this);
  }

  /** Runs SQL on the server through its own short-lived connection. */
  async sql(text: string): Promise<pg.QueryResult> {
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      return await client.query(text);
    } finally {
      await client.end();
    }
  }

  /** Stops the server and removes its directory. */
  async dispose(): Promise<void> {
    await this.stop().catch(() => this.stopNow());
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * `describe` for suites that need PostgreSQL: without the binaries (outside CI) it registers a
 * single test that reports itself skipped with the reason, so the summary counts it.
 */
export function describePostgres(
  name: string,
  fn: (s: SuiteContext) => void | Promise<void>,
): void {
  describeWithServer(skipPostgres, name, fn);
}
