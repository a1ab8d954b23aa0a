import type { Cluster, Redis } from 'ioredis';
import { KitError, StoreUnavailableError } from '@kit/core';
import { redisStoreErrors } from './errors.js';
import { failureOf, tlsTimeoutReason } from './failures.js';
import type { LuaScript } from './scripts.js';
import type { Topology } from './topology.js';
import { scrub } from './url.js';
import { settled, untilAborted } from './wait.js';

/**
 * The logger a store connection writes to: pino's (Fastify's `app.log`) fits. Every message and
 * field Kit passes is already redacted.
 *
 * @example
 * ```ts
 * const logger: StoreLogger = pino({ level: 'info' }).child({ component: 'worker-stores' });
 * const stores = createRedisStores(process.env.REDIS_URL!, { logger });
 * ```
 */
export interface StoreLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

// Replies with which the server says "not now" rather than "wrong command": the store is unavailable.
const UNAVAILABLE_REPLIES =
  /^(LOADING|BUSY|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|NOAUTH|WRONGPASS|NOREPLICAS)\b/;

type ReplyErrorLike = Error & { code?: string; command?: { name?: string } };

/**
 * The ioredis client (a `Redis`, or a `Cluster`) behind the stores, and what Kit tracks about it:
 * whether calls may be sent, and why not. Calls while it is not ready are refused at once with
 * `KIT_ERR_STORE_UNAVAILABLE` (nothing is queued); the client reconnects in the background.
 */
export class RedisConnection {
  #closed = false;
  #down = false;
  /** The last connection failure, address-free, for errors raised while down. */
  #failure: string | undefined;
  /** Set when the server refused the database index: connected, but to no usable database. */
  #dbRefused: string | undefined;
  /** A Sentinel answered that it knows no master group of that name. */
  #unknownMaster = false;
  /** A running check of why a TLS connection timed out (see tlsTimeoutReason). */
  #diagnosis: Promise<void> | undefined;
  /** Cluster nodes whose failure was logged at warn, until they come back. */
  readonly #nodesDown = new Set<string>();

  constructor(
    readonly topology: Topology,
    readonly client: Redis | Cluster,
    private readonly timeouts: {
      readonly commandTimeoutMs: number;
      readonly connectTimeoutMs: number;
      readonly reconnectMaxDelayMs: number;
    },
    private readonly log: StoreLogger | undefined,
  ) {
    const fields = { redis: topology.redacted };
    // Without an 'error' listener ioredis prints every reconnect failure to the console.
    client.on('error', (err: ReplyErrorLike) => {
      if (this.#closed) return;
      if (err.command?.name === 'select') {
        // ioredis reports a refused SELECT and then declares the connection ready, on database 0.
        this.#dbRefused = `the server refused database ${String(topology.db)} (${scrub(err.message, topology.secrets)})`;
        this.#failure = this.#dbRefused;
        this.#down = true;
        this.log?.warn(
          { ...fields, reason: this.#dbRefused },
          'Redis store refused the database index in the URL; store calls fail with KIT_ERR_STORE_UNAVAILABLE (never another database) until it is fixed',
        );
        return;
      }
      const reason = scrub(err.message, topology.secrets);
      // Sentinels that answer but know no such group: Redis 7 says so in an error, older ones with an empty reply.
      const unknownMaster =
        /No such master/.test(err.message) ||
        (this.#unknownMaster &&
          /All sentinels are unreachable/.test(err.message) &&
          !/Last error/.test(err.message));
      const failure = unknownMaster
        ? `no Sentinel knows a master group named "${String(topology.masterName)}"`
        : failureOf(err);
      this.#failed(failure, reason);
      if (failure === 'connect timed out' && topology.server && this.#tls && !this.#diagnosis) {
        const { host, port } = topology.server;
        this.#diagnosis = tlsTimeoutReason(host, port, timeouts.connectTimeoutMs).then((named) => {
          this.#diagnosis = undefined;
          if (this.#closed || named === failure || this.#failure !== failure) return;
          this.#failure = named;
          this.log?.warn(
            { ...fields, failure: named },
            'Redis store TLS handshake failed; store calls fail with KIT_ERR_STORE_UNAVAILABLE until it succeeds',
          );
        });
      }
    });
    client.on('sentinelError', (err: Error) => {
      if (/invalid reply/.test(err.message)) this.#unknownMaster = true;
      this.log?.debug(
        { ...fields, reason: scrub(err.message, topology.secrets) },
        'Redis Sentinel lookup failed',
      );
    });
    client.on('node error', (err: Error, node: string) => {
      if (this.#closed) return;
      const entry = { ...fields, node, reason: scrub(err.message, topology.secrets) };
      if (this.#nodesDown.has(node)) {
        this.log?.debug(entry, 'Redis Cluster node still unreachable');
      } else {
        this.#nodesDown.add(node);
        this.log?.warn(
          entry,
          'Redis Cluster node unreachable; calls for keys it serves fail with KIT_ERR_STORE_UNAVAILABLE until it or its replica answers',
        );
      }
    });
    client.on('+node', (node: Redis) => {
      const key = `${node.options.host ?? ''}:${String(node.options.port)}`;
      // While a node is down, every call routed to it makes the client create a connection to
      // it again: only a connection that got ready ends the node's outage in the logs.
      node.once('ready', () => {
        if (this.#nodesDown.delete(key))
          this.log?.info({ ...fields, node: key }, 'Redis Cluster node reachable again');
      });
      // ioredis connects a Cluster node on its first command and, without an offline queue,
      // refuses the commands that arrive while that connection is being made: a burst right
      // after start-up would fail. Connecting every node as soon as the client learns of it
      // means commands only ever go to connected nodes (and none wait in a node's queue).
      // Not before the client is ready, though: its ready check (CLUSTER INFO, sent to a random
      // node the moment the slot map arrives) is refused by a node that is connecting, but is
      // queued by one still waiting, and each refusal drops the whole client and starts over.
      // The nodes learnt before that are connected on 'ready' below.
      if (client.status === 'ready' && node.status === 'wait')
        node.connect().catch(() => undefined);
    });
    if (topology.mode === 'cluster') {
      client.on('ready', () => {
        for (const node of (client as Cluster).nodes('all'))
          if (node.status === 'wait') node.connect().catch(() => undefined);
      });
    }
    client.on('connect', () => {
      this.#dbRefused = undefined;
    });
    client.on('close', () => {
      if (this.#closed) return;
      this.#failure ??= 'connection lost';
      if (this.#down) return;
      this.#down = true;
      this.log?.warn(fields, 'Redis store connection lost; reconnecting');
    });
    client.on('end', () => {
      if (this.#closed) return;
      // ioredis ends a client for good in a few corner cases (a connect attempt aborted midway,
      // someone calling disconnect() on it): the store would stay unavailable until a restart.
      this.#failure ??= 'connection lost';
      if (this.#down) this.log?.debug(fields, 'Redis store client ended; reconnecting');
      else this.log?.warn(fields, 'Redis store client ended; reconnecting');
      this.#down = true;
      setTimeout(() => {
        if (!this.#closed && client.status === 'end') client.connect().catch(() => undefined);
      }, timeouts.reconnectMaxDelayMs).unref();
    });
    client.on('ready', () => {
      this.#unknownMaster = false;
      if (this.#dbRefused !== undefined) return;
      this.log?.info(
        fields,
        this.#down ? 'Redis store connection restored' : 'Redis store connected',
      );
      this.#down = false;
      this.#failure = undefined;
    });
  }

  get #tls(): boolean {
    return 'options' in this.client && Boolean((this.client as Redis).options.tls);
  }

  #failed(failure: string, reason: string): void {
    if (this.#closed) return;
    this.#failure = failure;
    const fields = { redis: this.topology.redacted, reason, failure };
    if (this.#down) {
      this.log?.debug(fields, 'Redis store still unreachable');
    } else {
      this.#down = true;
      this.log?.warn(
        fields,
        'Redis store connection failed; store calls fail with KIT_ERR_STORE_UNAVAILABLE until it is back',
      );
    }
  }

  /** True while commands can be sent. */
  get ready(): boolean {
    return this.client.status === 'ready' && this.#dbRefused === undefined;
  }

  /** Why calls are refused right now (address-free), or undefined while ready. */
  get failure(): string | undefined {
    if (this.ready) return undefined;
    return this.#closed ? 'the store was closed' : (this.#failure ?? this.client.status);
  }

  /**
   * Resolves when the connection is ready, its first attempt failed, or `timeoutMs` passed,
   * whichever comes first; never rejects. Start-up uses it so the first requests do not race the
   * connection, without making a Redis outage a start-up failure.
   */
  async settle(timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    const ready = await this.#settle(timeoutMs);
    if (!ready || this.topology.mode !== 'cluster') return ready;
    // A Cluster is ready once one node gave the slot map; wait for the masters' own connections too.
    await Promise.all(
      (this.client as Cluster)
        .nodes('master')
        .map((node) => settled(node, deadline - performance.now())),
    );
    return this.ready;
  }

  #settle(timeoutMs: number): Promise<boolean> {
    if (this.ready) return Promise.resolve(true);
    // Closed, or connected to a server that refused the database: no event will change that soon.
    if (this.#closed || this.#dbRefused !== undefined) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.client.off('ready', done);
        this.client.off('error', done);
        this.client.off('end', done);
        // The 'error' listener above (registered first) may have started naming a TLS failure.
        if (this.#diagnosis) void this.#diagnosis.then(() => resolve(this.ready));
        else resolve(this.ready);
      };
      const timer = setTimeout(done, timeoutMs);
      this.client.once('ready', done);
      this.client.once('error', done);
      this.client.once('end', done);
    });
  }

  /** Runs one client call with the store's error mapping; refuses at once when not connected. */
  async call<T>(fn: (client: Redis | Cluster) => Promise<T>): Promise<T> {
    if (!this.ready)
      throw new StoreUnavailableError(
        'redis',
        this.#closed
          ? 'the store was closed'
          : `not connected: ${this.failure ?? 'connection lost'}`,
      );
    try {
      return await fn(this.client);
    } catch (err) {
      throw this.#storeError(err);
    }
  }

  /** Runs a script by SHA, loading it with EVAL when the server does not know it (e.g. after a restart). */
  async run(
    script: LuaScript,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    return this.call(async (client) => {
      try {
        return await client.evalsha(script.sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        return await client.eval(script.lua, keys.length, ...keys, ...args);
      }
    });
  }

  /**
   * PING (in a Cluster: every master the client knows), abandoned when `signal` aborts; resolves
   * with the slowest round trip in milliseconds.
   */
  async ping(signal?: AbortSignal): Promise<number> {
    const started = performance.now();
    await untilAborted(
      this.call<unknown>((client) =>
        this.topology.mode === 'cluster'
          ? Promise.all((client as Cluster).nodes('master').map((node) => node.ping()))
          : client.ping(),
      ),
      signal,
      'no PING reply before the check timed out',
    );
    return Math.round((performance.now() - started) * 100) / 100;
  }

  /** Closes the connection and stops reconnecting. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const client = this.client;
    if (client.status === 'ready') {
      // QUIT lets in-flight replies arrive; a hung server must not hold up shutdown.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        client.quit().catch(() => undefined),
        new Promise((resolve) => {
          timer = setTimeout(resolve, Math.min(this.timeouts.commandTimeoutMs, 1000));
        }),
      ]);
      clearTimeout(timer);
    }
    if (client.status === 'end') return;
    // disconnect() only starts closing the socket; resolve once it is gone so that nothing of
    // the store outlives close() (a bounded wait: a dead socket must not hold up shutdown).
    const ended = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1000);
      client.once('end', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    client.disconnect(false);
    await ended;
  }

  #storeError(err: unknown): Error {
    if (err instanceof KitError) return err;
    const error = err instanceof Error ? err : new Error(String(err));
    const message = scrub(error.message, this.topology.secrets);
    if (error.name === 'ReplyError' && !UNAVAILABLE_REPLIES.test(message)) {
      return redisStoreErrors.error('KIT_ERR_STORE_FAILED', { reply: message }, { cause: error });
    }
    const cluster = this.topology.mode === 'cluster';
    let reason: string;
    if (error.name === 'ReplyError')
      reason = `server replied ${message.split(' ')[0] ?? 'an error'}`;
    else if (/timed out/i.test(message))
      reason = `no reply within ${this.timeouts.commandTimeoutMs} ms`;
    else if (error.name === 'MaxRetriesPerRequestError')
      reason = 'connection lost before the reply';
    else if (/Too many Cluster redirections/.test(message))
      reason = 'Redis Cluster redirections exhausted (a failover or resharding is under way)';
    // The socket went away between the `ready` check and the write (its close event not yet seen):
    // the same answer as a call refused up front. In a Cluster: the node serving the key is gone.
    else if (/writeable|closed|isn't ready/i.test(message)) {
      reason = cluster
        ? 'not connected: the Redis Cluster node serving this key is unreachable'
        : `not connected: ${this.#failure ?? 'connection lost'}`;
    } else reason = 'connection error';
    return new StoreUnavailableError('redis', reason, { cause: error });
  }
}
