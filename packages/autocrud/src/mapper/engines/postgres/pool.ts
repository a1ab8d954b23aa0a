// pg's Pool, with what a service under database faults needs and pg.Pool does not give:
// - every client has an 'error' listener for its whole life. pg.Pool listens only while a client
//   is idle in it; a client that is checked out (Kysely holds one from connect to release) and
//   whose server goes away emits 'error' with no listener, which ends the process.
// - a call waits for a free connection at most acquireTimeoutMs (DatabaseBusyError: the server is
//   up, the pool is saturated), apart from connectTimeoutMs, which bounds a new connection to the
//   server (DatabaseUnavailableError when it fails: the server cannot be reached).
// - a call's AbortSignal (`connect(signal)`) gives up its wait, or cancels its running statement
//   with a PostgreSQL cancel request and retires the connection. Running statements are checked
//   for an aborted signal by the sweep below (every 250 ms) rather than by an 'abort' listener per
//   call: EventTarget listeners cost microseconds on every request, and a cancel a quarter of a
//   second later frees the connection all the same.
// - a statement the server does not end within statementTimeoutMs (its own statement_timeout,
//   sent at connect) plus a grace is taken for a hung server: its connection is destroyed and the
//   call fails as "unavailable".
import net from 'node:net';
import path from 'node:path';
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import pg from 'pg';
import { DatabaseBusyError, DatabaseUnavailableError } from '../../errors.js';

/** Settings of a {@link GuardedPool}. */
interface GuardedPoolSettings {
  readonly url: string;
  readonly poolSize: number;
  readonly connectTimeoutMs: number;
  readonly acquireTimeoutMs: number;
  readonly statementTimeoutMs: number;
  readonly applicationName: string;
  /** An address-free reason for a connection failure. */
  readonly reason: (err: unknown) => string;
  /** A connection failed outside a statement (idle in the pool, or between two statements); it is dropped. */
  readonly onConnectionError: (reason: string) => void;
}

/** How long past statementTimeoutMs a statement may go unanswered before its server is taken for hung. */
const HUNG_GRACE_MS = 2000;
const SWEEP_INTERVAL_MS = 250;

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
  readonly timer: NodeJS.Timeout;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: (() => void) | undefined;
}

/** What pg's client has and its type declarations do not list. */
interface ClientInternals {
  readonly processID?: number;
  readonly secretKey?: number;
  readonly host?: string;
  readonly port?: number;
  readonly connection?: { stream?: { destroy(err?: Error): void } };
}

/**
 * Sends a PostgreSQL CancelRequest (protocol 3.0: length 16, code 80877102, backend pid, secret key)
 * on a connection of its own, as libpq's PQcancel does; resolves once the server closed it (or it
 * failed: then statement_timeout still ends the statement).
 */
function sendCancel(client: ClientInternals, timeoutMs: number): Promise<void> {
  const { processID, secretKey, host, port } = client;
  if (processID === undefined || secretKey === undefined || port === undefined)
    return Promise.resolve();
  return new Promise((resolve) => {
    const socket = host?.startsWith('/')
      ? net.connect(path.join(host, `.s.PGSQL.${port}`))
      : net.connect(port, host ?? 'localhost');
    const done = () => {
      socket.destroy();
      resolve();
    };
    socket.setTimeout(timeoutMs, done);
    socket.once('error', done);
    socket.once('close', done);
    socket.once('connect', () => {
      const message = Buffer.alloc(16);
      message.writeInt32BE(16, 0);
      message.writeInt32BE(80877102, 4);
      message.writeInt32BE(processID, 8);
      message.writeInt32BE(secretKey, 12);
      socket.end(message);
    });
  });
}

/** One pg client as Kysely and the engine hold it; the same object for every checkout of that client. */
class Lease implements PostgresPoolClient {
  /** When the current checkout's statement began (Date.now()), 0 while idle. */
  since = 0;
  /** Cancelled or hung: the client is destroyed instead of returning to the pool. */
  retired = false;
  /** The signal of the call holding it. */
  signal: AbortSignal | undefined;

  constructor(
    readonly client: pg.PoolClient,
    private readonly owner: GuardedPool,
  ) {}

  /** Kysely's statements (and cursors, which Kit does not use). */
  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query(
    sqlOrCursor: string | PostgresCursor<unknown>,
    parameters?: ReadonlyArray<unknown>,
  ): unknown {
    if (this.signal?.aborted) return Promise.reject(this.signal.reason);
    this.since = Date.now();
    return (this.client.query as (...args: unknown[]) => unknown)(sqlOrCursor, parameters);
  }

  /** The engine's own statements (named: prepared once per connection). */
  run(config: pg.QueryConfig): Promise<pg.QueryResult> {
    if (this.signal?.aborted) return Promise.reject(this.signal.reason);
    this.since = Date.now();
    return this.client.query(config);
  }

  release(): void {
    this.owner.release(this);
  }
}

/** See the top of this file. Kysely's `PostgresDialect` takes it as its pool. */
export class GuardedPool implements PostgresPool {
  readonly #pool: pg.Pool;
  readonly #settings: GuardedPoolSettings;
  readonly #leases = new WeakMap<pg.PoolClient, Lease>();
  readonly #out = new Set<Lease>();
  readonly #waiting = new Set<Waiter>();
  readonly #sweeper: NodeJS.Timeout;
  #free: number;

  constructor(settings: GuardedPoolSettings) {
    this.#settings = settings;
    this.#free = settings.poolSize;
    this.#pool = new pg.Pool({
      connectionString: settings.url,
      max: settings.poolSize,
      // Only new connections wait on pg.Pool (the permits below keep its queue empty).
      connectionTimeoutMillis: settings.connectTimeoutMs,
      idleTimeoutMillis: 10_000,
      application_name: settings.applicationName,
      statement_timeout: settings.statementTimeoutMs,
    });
    // A client's error once it is connected: idle in the pool (pg.Pool has removed it), or checked
    // out. A statement running on it fails by itself; a client with no statement is dropped at
    // release, as pg.Pool drops clients that are not queryable.
    this.#pool.on('connect', (client) =>
      client.on('error', (err) => settings.onConnectionError(settings.reason(err))),
    );
    // pg.Pool re-emits an idle client's error on itself: without a listener it would end the process.
    this.#pool.on('error', () => undefined);
    this.#sweeper = setInterval(() => this.#sweep(), SWEEP_INTERVAL_MS);
    this.#sweeper.unref();
  }

  /**
   * A connection for one statement (or a few, in order), released with `lease.release()`. Waits
   * at most acquireTimeoutMs for a free one; `signal` (Kysely passes none) gives up the wait, or
   * cancels the running statement.
   */
  async connect(signal?: AbortSignal): Promise<Lease> {
    if (signal?.aborted) throw signal.reason;
    if (this.#free > 0 && this.#waiting.size === 0) this.#free--;
    else await this.#wait(signal);
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      this.#give();
      throw new DatabaseUnavailableError(this.#settings.reason(err), { cause: err });
    }
    let lease = this.#leases.get(client);
    if (!lease) {
      lease = new Lease(client, this);
      this.#leases.set(client, lease);
    }
    this.#out.add(lease);
    if (signal?.aborted) {
      lease.release();
      throw signal.reason;
    }
    lease.signal = signal;
    return lease;
  }

  /** Waits for a permit, at most acquireTimeoutMs, in arrival order. */
  #wait(signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        timer: setTimeout(() => {
          this.#forget(waiter);
          reject(new DatabaseBusyError(this.#settings.acquireTimeoutMs));
        }, this.#settings.acquireTimeoutMs),
        onAbort: signal
          ? () => {
              this.#forget(waiter);
              reject(signal.reason);
            }
          : undefined,
      };
      this.#waiting.add(waiter);
      if (signal && waiter.onAbort)
        signal.addEventListener('abort', waiter.onAbort, { once: true });
    });
  }

  #forget(waiter: Waiter): void {
    this.#waiting.delete(waiter);
    clearTimeout(waiter.timer);
    if (waiter.onAbort) waiter.signal?.removeEventListener('abort', waiter.onAbort);
  }

  /** A permit comes back: to the first waiter, else to the free count. */
  #give(): void {
    for (const waiter of this.#waiting) {
      this.#forget(waiter);
      waiter.resolve();
      return;
    }
    this.#free++;
  }

  release(lease: Lease): void {
    if (!this.#out.delete(lease)) return;
    lease.signal = undefined;
    lease.since = 0;
    // A cancelled or hung connection is closed: a cancel request that arrives late must not hit
    // the next statement run on it.
    lease.client.release(lease.retired ? new Error('retired') : undefined);
    lease.retired = false;
    this.#give();
  }

  /**
   * Statements of calls that went away: cancelled on the server, their connections retired.
   * Statements the server has not ended well past its statement_timeout: the server is hung.
   */
  #sweep(): void {
    if (this.#out.size === 0) return;
    const limit = Date.now() - this.#settings.statementTimeoutMs - HUNG_GRACE_MS;
    for (const lease of this.#out) {
      if (lease.retired) continue;
      if (lease.signal?.aborted) {
        lease.retired = true;
        if (lease.since !== 0)
          void sendCancel(
            lease.client as unknown as ClientInternals,
            this.#settings.connectTimeoutMs,
          );
        continue;
      }
      if (lease.since === 0 || lease.since > limit) continue;
      lease.retired = true;
      lease.since = 0;
      const stream = (lease.client as unknown as ClientInternals).connection?.stream;
      // The statement rejects with this error (pg fails its queries with the socket's error).
      const hung = new DatabaseUnavailableError(
        `no answer within statementTimeoutMs + ${HUNG_GRACE_MS} ms`,
      );
      if (stream) stream.destroy(hung);
      else void lease.client.end();
    }
  }

  async end(): Promise<void> {
    clearInterval(this.#sweeper);
    for (const waiter of [...this.#waiting]) {
      this.#forget(waiter);
      waiter.reject(new DatabaseUnavailableError('closed'));
    }
    await this.#pool.end();
  }
}
