// Starts real redis-server processes on free loopback ports for the tests. Never relies on a
// system service. Outside CI a missing redis-server skips the Redis tests (reported as skipped);
// with CI=true it fails them.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SuiteContext } from 'node:test';
import { Cluster, type Redis } from 'ioredis';
import { describeWithServer, executable, onPath, skipWithout, throwMissing } from './binaries.ts';
import { freePort } from './ports.ts';
import type { StoreSet } from './store-conformance.ts';
import { until } from './until.ts';

/** `KIT_REDIS_SERVER` when set (a path; a missing one counts as not installed), else `redis-server` on PATH. */
export function findRedisServer(): string | undefined {
  const explicit = process.env.KIT_REDIS_SERVER;
  if (explicit !== undefined) return executable(explicit) ? explicit : undefined;
  return onPath('redis-server', ['/usr/bin', '/usr/local/bin', '/usr/sbin']);
}

export const redisServerBin = findRedisServer();

/**
 * The `skip` option for Redis suites: a reason outside CI when redis-server is missing, `false`
 * otherwise. In CI a missing server is not skipped: `RedisServer.start` throws and the suite fails.
 */
export const skipRedis: string | false = skipWithout(redisServerBin, 'redis-server not installed');

/** Sends PING over a raw socket; true on any Redis reply (+PONG, or -NOAUTH when a password is set). */
async function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(/^(\+PONG|-NOAUTH)/.test(data.toString())));
  });
}

export interface RedisServerOptions {
  /** Sets `requirepass`. */
  password?: string;
  /** Further command-line arguments (`--databases 100`, `--replicaof`, ...). */
  extraArgs?: readonly string[];
  /** This port instead of a free one (for setups whose members must know each other's ports up front). */
  port?: number;
  /** A Redis Cluster node: `cluster-enabled`, with its own bus port (`cluster-port`) and this node timeout. */
  cluster?: { nodeTimeoutMs: number };
  /** A Sentinel: this configuration (`sentinel monitor ...`) is written to a file and run with `--sentinel`. */
  sentinelConfig?: string;
}

/** One redis-server process on a loopback port; restartable on the same port. */
export class RedisServer {
  #child: ChildProcess | undefined;
  #output = '';
  #configured = false;
  readonly #dir = mkdtempSync(path.join(tmpdir(), 'kit-redis-'));

  private constructor(
    readonly port: number,
    readonly options: RedisServerOptions,
    /** The cluster bus port of a Cluster node. */
    readonly busPort: number | undefined,
  ) {}

  /** Starts a server on a free port and waits until it answers PING. */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    if (!redisServerBin)
      throwMissing('redis-server not installed', 'Redis', 'apt-get install redis-server');
    for (let attempt = 1; ; attempt++) {
      const server = new RedisServer(
        options.port ?? (await freePort()),
        options,
        options.cluster ? await freePort() : undefined,
      );
      try {
        await server.resume();
        return server;
      } catch (err) {
        // Another process may have taken the port between freePort() and the bind.
        if (attempt >= 3 || options.port !== undefined) throw err;
      }
    }
  }

  /** `redis://127.0.0.1:port` (with the password when one is set). */
  get url(): string {
    const auth = this.options.password ? `:${encodeURIComponent(this.options.password)}@` : '';
    return `redis://${auth}127.0.0.1:${this.port}`;
  }

  /** The last lines the process printed (its log), for failure messages. */
  get output(): string {
    return this.#output;
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  /** Starts (again) on the same port and waits until it answers PING. */
  async resume(): Promise<void> {
    if (this.#child) return;
    // No persistence, no fsync: start-up and failover stay quick.
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      this.#dir,
    ];
    // A replica's first sync starts at once instead of after the default 5 s wait for more replicas.
    if (this.options.sentinelConfig === undefined) args.push('--repl-diskless-sync-delay', '0');
    if (this.options.sentinelConfig !== undefined) {
      const file = path.join(this.#dir, 'sentinel.conf');
      // Sentinel rewrites its file as it learns; write it only on the first start.
      if (!this.#configured) writeFileSync(file, this.options.sentinelConfig);
      this.#configured = true;
      args.unshift(file, '--sentinel');
    }
    if (this.options.cluster) {
      args.push(
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        path.join(this.#dir, 'nodes.conf'),
      );
      args.push(
        '--cluster-node-timeout',
        String(this.options.cluster.nodeTimeoutMs),
        '--cluster-port',
        String(this.busPort),
      );
    }
    if (this.options.password) args.push('--requirepass', this.options.password);
    args.push(...(this.options.extraArgs ?? []));
    const child = spawn(redisServerBin as string, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    this.#output = '';
    const collect = (chunk: Buffer) => {
      this.#output = (this.#output + chunk.toString()).slice(-4000);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    let exited = false;
    child.once('exit', () => {
      exited = true;
      if (this.#child === child) this.#child = undefined;
    });
    try {
      await until(
        `redis-server on port ${this.port} answering PING`,
        async () => {
          if (exited)
            throw new Error(`redis-server exited at start on port ${this.port}:\n${this.#output}`);
          return answersPing(this.port);
        },
        { timeoutMs: 10_000, diagnostic: () => `\n${this.#output}` },
      );
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  /** Stops the process (SIGTERM by default; SIGKILL for a crash) and waits for it to exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGCONT'); // a paused server cannot handle SIGTERM
    child.kill(signal);
    await exited;
  }

  /** Freezes the process (SIGSTOP): connections stay open but nothing is answered. */
  pause(): void {
    this.#child?.kill('SIGSTOP');
  }

  /** Thaws a paused process. */
  unpause(): void {
    this.#child?.kill('SIGCONT');
  }

  /** Stops the process and removes its directory. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

/**
 * `describe` for suites that need redis-server: without one (outside CI) it registers a single
 * test that reports itself skipped with the reason, so the summary counts it under "skipped".
 */
export function describeRedis(name: string, fn: (s: SuiteContext) => void | Promise<void>): void {
  describeWithServer(skipRedis, name, fn);
}

/**
 * The conformance suite's `connect`: the stores once connected, as a host's start-up would have
 * them. `waitUntilConnected()` answers at the first failed attempt; a client that then connects on
 * its own (seen once for a second Cluster client on a loaded CI machine) is given up to `limitMs`.
 * A client that never connects is closed before the error is thrown: left open, its reconnect
 * timers would hold the test process open for good.
 */
export async function connectedStores<
  T extends {
    client: Redis | Cluster;
    connected: boolean;
    failure: string | undefined;
    waitUntilConnected(): Promise<boolean>;
    close(): Promise<void>;
  },
>(stores: T, limitMs = 15_000): Promise<T> {
  if (await stores.waitUntilConnected()) return stores;
  const first = stores.failure;
  try {
    await until('the stores connected', () => stores.connected, limitMs);
    return stores;
  } catch {
    // Not within limitMs: closed and reported below.
  }
  // Read before close(), which turns every answer into "the store was closed".
  const last = `${String(stores.failure)}; client ${clientState(stores.client)}`;
  await stores.close();
  throw new Error(
    `the stores did not connect within ${limitMs} ms (first attempt: ${first}; at the end: ${last})`,
  );
}

/** The client's status and, for a Cluster, each node's: what a connect that never came was waiting on. */
function clientState(client: Redis | Cluster): string {
  if (!(client instanceof Cluster)) return client.status;
  const nodes = client.nodes('all').map((n) => `${String(n.options.port)} ${n.status}`);
  return `${client.status}, nodes [${nodes.join(', ')}]`;
}

/**
 * The conformance suite's `connect` for Kit's Redis stores: the four stores once connected
 * (`connectedStores`), and closing them lets the connection go.
 *
 * @example
 * ```ts
 * storeConformance('redis', {
 *   connect: () => conformanceSet(createRedisStores(server.url, { keyPrefix: 'conformance:' })),
 * });
 * ```
 */
export async function conformanceSet(
  stores: Parameters<typeof connectedStores>[0] & Omit<StoreSet, 'close'>,
): Promise<StoreSet> {
  await connectedStores(stores);
  return {
    idempotency: stores.idempotency,
    rateLimit: stores.rateLimit,
    saga: stores.saga,
    cronJob: stores.cronJob,
    close: () => stores.close(),
  };
}
