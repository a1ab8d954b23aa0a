// Kysely's driver for node:sqlite, written for a synchronous driver on the service's thread.
// `node:sqlite` runs each statement on the calling thread, and SQLite's busy handler (busy_timeout)
// sleeps on it while another connection holds the write lock: 5 s of busy_timeout froze /livez for
// 5 s. Here busy_timeout is 0: a statement that meets the lock fails at once with SQLITE_BUSY and
// is tried again after a timer, so the event loop serves other requests meanwhile, until
// acquireTimeoutMs has passed (then `DatabaseBusyError`). See docs/decisions.md ("SQLite and the
// event loop") for why this and not a worker thread.
import type {
  CompiledQuery,
  DatabaseConnection,
  Driver,
  QueryResult,
  TransactionSettings,
} from 'kysely';
import { DatabaseBusyError } from '../../errors.js';
import { SessionQueue } from '../shared/session-queue.js';

/** The parts of node:sqlite's StatementSync used here (Node 20's type definitions have none). */
interface StatementSync {
  all(...parameters: unknown[]): unknown[];
  run(...parameters: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  columns?(): unknown[];
}

/** The parts of node:sqlite's DatabaseSync used here. */
export interface DatabaseSync {
  prepare(sql: string): StatementSync;
  exec(sql: string): void;
  /** Registers a scalar SQL function (Node >= 22.13). */
  function(
    name: string,
    options: { deterministic?: boolean },
    fn: (...args: unknown[]) => unknown,
  ): void;
  close(): void;
}

// Statements a query returns rows from, for SQLite builds whose StatementSync has no columns().
const READER = /^\s*(select|with|pragma|values|explain)\b|\breturning\b/i;
const STATEMENT_CACHE = 200;
/** Waits between two tries of a statement that met the lock: SQLite's own busy handler's steps, in ms. */
const BACKOFF_MS = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

/** True for SQLITE_BUSY (another connection holds the lock) and SQLITE_LOCKED, in any extended form. */
export function isBusy(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown } | null;
  if (e?.code !== 'ERR_SQLITE_ERROR' || typeof e.errcode !== 'number') return false;
  const primary = e.errcode & 0xff;
  return primary === 5 || primary === 6;
}

/**
 * Runs `attempt` until it does not meet the lock, waiting on timers in between, until `deadline`
 * (a `performance.now()` time); then throws `DatabaseBusyError`. A statement that met SQLITE_BUSY
 * outside a transaction (or a COMMIT) did nothing, so trying it again is safe.
 */
export async function untilFree<T>(
  attempt: () => T,
  deadline: number,
  waitedMs: number,
): Promise<T> {
  for (let step = 0; ; step++) {
    try {
      return attempt();
    } catch (err) {
      if (!isBusy(err)) throw err;
      const left = deadline - performance.now();
      if (left <= 0) throw new DatabaseBusyError(waitedMs, { cause: err });
      await new Promise((resolve) =>
        setTimeout(
          resolve,
          Math.min(left, BACKOFF_MS[Math.min(step, BACKOFF_MS.length - 1)] as number),
        ),
      );
    }
  }
}

interface Prepared {
  readonly reader: boolean;
  readonly statement: StatementSync;
}

/** One caller's turn on the connection, from acquireConnection to releaseConnection. */
class Lease implements DatabaseConnection {
  /** Whether this caller holds the queue now (it lets go while it waits for the file's lock). */
  held = true;

  constructor(
    private readonly connection: SqliteConnection,
    /** Until when this caller may wait, in the queue and for the lock together (`performance.now()` time). */
    readonly deadline: number,
  ) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.connection.execute(this, query) as Promise<QueryResult<R>>;
  }

  // eslint-disable-next-line require-yield -- Kit reads whole pages; streaming is not offered.
  async *streamQuery(): AsyncIterableIterator<QueryResult<never>> {
    throw new Error('The node:sqlite driver does not stream results.');
  }
}

/** The one connection: statements prepared once per SQL text (the builder repeats texts), run with busy retries. */
class SqliteConnection {
  readonly #cache = new Map<string, Prepared>();
  /** Inside BEGIN … COMMIT: a busy statement there is not retried (the transaction is rolled back). */
  inTransaction = false;

  constructor(
    readonly database: DatabaseSync,
    readonly queue: SessionQueue,
    private readonly acquireTimeoutMs: number,
  ) {}

  #prepare(sql: string): Prepared {
    const cached = this.#cache.get(sql);
    if (cached) return cached;
    const statement = this.database.prepare(sql);
    const prepared = {
      statement,
      reader:
        typeof statement.columns === 'function' ? statement.columns().length > 0 : READER.test(sql),
    };
    if (this.#cache.size >= STATEMENT_CACHE)
      this.#cache.delete(this.#cache.keys().next().value as string);
    this.#cache.set(sql, prepared);
    return prepared;
  }

  #run(sql: string, parameters: readonly unknown[]): QueryResult<unknown> {
    const { statement, reader } = this.#prepare(sql);
    if (reader) return { rows: statement.all(...parameters) };
    const { changes, lastInsertRowid } = statement.run(...parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  async execute(lease: Lease, query: CompiledQuery): Promise<QueryResult<unknown>> {
    try {
      // The common case: the lock is free and the statement runs now, without a timer or an await.
      return this.#run(query.sql, query.parameters);
    } catch (err) {
      if (!isBusy(err)) throw err;
      // In a transaction only COMMIT may be tried again (SQLite's rule); anything else rolls it back.
      if (this.inTransaction) throw new DatabaseBusyError(this.acquireTimeoutMs, { cause: err });
      return this.retry(lease, () => this.#run(query.sql, query.parameters));
    }
  }

  /**
   * Tries `attempt` again until it does not meet the lock, or the lease's deadline passes
   * (`DatabaseBusyError`). Between tries the caller lets go of the connection: the statement that
   * met SQLITE_BUSY did nothing, and other callers' statements (reads, which WAL lets run beside
   * another process's writer) go on meanwhile.
   */
  async retry<T>(lease: Lease, attempt: () => T): Promise<T> {
    for (let step = 0; ; step++) {
      lease.held = false;
      this.queue.release();
      const left = lease.deadline - performance.now();
      if (left <= 0) throw new DatabaseBusyError(this.acquireTimeoutMs);
      await new Promise((resolve) =>
        setTimeout(
          resolve,
          Math.min(left, BACKOFF_MS[Math.min(step, BACKOFF_MS.length - 1)] as number),
        ),
      );
      await this.queue.acquire(lease.deadline - performance.now());
      lease.held = true;
      try {
        return attempt();
      } catch (err) {
        if (!isBusy(err)) throw err;
      }
    }
  }

  forget(): void {
    this.#cache.clear();
  }
}

/**
 * Kysely's driver over one node:sqlite connection: callers take turns (`acquireTimeoutMs` in the
 * queue and at the lock together), transactions start with BEGIN IMMEDIATE so that the write lock
 * is taken, and waited for, at their start rather than mid-way. `database` is asked for at the
 * first query (Kysely builds its driver before the engine opens the file); the engine closes it.
 */
export class NodeSqliteDriver implements Driver {
  readonly #queue: SessionQueue;
  #connection!: SqliteConnection;

  constructor(
    private readonly database: () => DatabaseSync,
    private readonly acquireTimeoutMs: number,
  ) {
    this.#queue = new SessionQueue(acquireTimeoutMs);
  }

  async init(): Promise<void> {
    this.#connection = new SqliteConnection(this.database(), this.#queue, this.acquireTimeoutMs);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const deadline = performance.now() + this.acquireTimeoutMs;
    await this.#queue.acquire();
    return new Lease(this.#connection, deadline);
  }

  async beginTransaction(lease: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const connection = this.#connection;
    // A read-only transaction takes no write lock; a writing one takes it now, where waiting is safe.
    const begin = settings.accessMode === 'read only' ? 'begin deferred' : 'begin immediate';
    try {
      connection.database.exec(begin);
    } catch (err) {
      if (!isBusy(err)) throw err;
      await connection.retry(lease as Lease, () => connection.database.exec(begin));
    }
    connection.inTransaction = true;
  }

  async commitTransaction(): Promise<void> {
    // A COMMIT that meets SQLITE_BUSY (readers of a rollback-journal database) leaves the
    // transaction open and may be tried again; the connection stays this caller's meanwhile.
    await untilFree(
      () => this.#connection.database.exec('commit'),
      performance.now() + this.acquireTimeoutMs,
      this.acquireTimeoutMs,
    );
    this.#connection.inTransaction = false;
  }

  async rollbackTransaction(): Promise<void> {
    const connection = this.#connection;
    // Kysely rolls back after a failed BEGIN too: there is nothing to roll back then.
    if (!connection.inTransaction) return;
    connection.inTransaction = false;
    try {
      connection.database.exec('rollback');
    } catch (err) {
      // SQLite may have rolled back by itself (a full disk, an I/O error): the caller's error is the one that matters.
      if (!/no transaction is active/i.test((err as Error).message)) throw err;
    }
  }

  async releaseConnection(lease: DatabaseConnection): Promise<void> {
    const mine = lease as Lease;
    if (!mine.held) return;
    mine.held = false;
    this.#queue.release();
  }

  async destroy(): Promise<void> {
    this.#connection.forget();
  }
}
