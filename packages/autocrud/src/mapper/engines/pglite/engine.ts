import type { PGlite } from '@electric-sql/pglite';
import { KitError } from '@kit/core';
import {
  Kysely,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryResult,
} from 'kysely';
import type { DirectoryLock } from './directory-lock.js';
import { classifySqlState, type DynamicDatabase, type Engine } from '../../sql/engine.js';
import { DatabaseBusyError, DatabaseUnavailableError } from '../../errors.js';
import type { ConnectionTarget } from '../shared/connection-string.js';
import { claimDirectory } from './directory.js';
import { describeError } from './protocol.js';
import { PGliteThread, type ThreadResult } from './thread.js';
import { SessionQueue } from '../shared/session-queue.js';
import { pgliteDialect } from './dialect.js';

/** Settings of the PGlite engine. */
export interface PGliteSettings {
  /** How long a query waits for the single session before `DatabaseBusyError`. */
  readonly acquireTimeoutMs: number;
  /** Where start-up facts are reported (how PGlite started, and how long it took). */
  readonly onStarted?: (facts: { snapshot: string; ms: number }) => void;
}

/** How long closing waits for a statement still running before ending PGlite's thread. */
const CLOSE_GRACE_MS = 10_000;
/**
 * How long the check's ping waits for the one session before it calls the database busy: a
 * primary-key read holds it well under a millisecond, so a quarter second means a long statement.
 * Below the check's timeout (800 ms by default), which would otherwise call it unhealthy first.
 */
const PING_WAIT_MS = 250;

type Run = (sql: string, parameters: readonly unknown[]) => Promise<ThreadResult>;

/**
 * PGlite has one session. Handing it to Kysely as a pool of one connection, lent to one caller
 * at a time, keeps a transaction's statements together; PGlite itself would interleave them. A
 * caller that waits for it longer than acquireTimeoutMs gets `DatabaseBusyError`.
 */
class SingleSessionPool implements PostgresPool {
  readonly queue: SessionQueue;
  readonly #client: PostgresPoolClient;

  constructor(run: Run, acquireTimeoutMs: number) {
    this.queue = new SessionQueue(acquireTimeoutMs);
    const client = {
      query: async <R>(
        sql: string,
        parameters: ReadonlyArray<unknown>,
      ): Promise<PostgresQueryResult<R>> => {
        const result = await run(sql, parameters);
        return {
          command: (result.command ?? 'SELECT') as PostgresQueryResult<R>['command'],
          rowCount: result.rowCount ?? result.rows.length,
          rows: result.rows as R[],
        };
      },
      release: () => this.queue.release(),
    };
    this.#client = client as unknown as PostgresPoolClient;
  }

  async connect(): Promise<PostgresPoolClient> {
    await this.queue.acquire();
    return this.#client;
  }

  async end(): Promise<void> {
    // The engine closes what it started (close()); a host's instance is the host's to close.
  }
}

/**
 * PGlite (PostgreSQL compiled to WASM), in memory or in a directory; no server needed. Kit's own
 * PGlite runs in a worker thread (thread.ts), so neither its start nor its statements stop
 * the service's event loop; a directory is locked to this process (directory-lock.ts). Given an
 * instance the host made, the engine uses it on the host's thread, does not lock its directory,
 * and leaves closing it to the host.
 */
export function pgliteEngine(
  target: Extract<ConnectionTarget, { kind: 'pglite' }>,
  instance: PGlite | undefined,
  settings: PGliteSettings,
): Engine {
  let thread: PGliteThread | undefined;
  let starting: Promise<void> | undefined;
  let lock: DirectoryLock | undefined;
  let closed = false;

  const run: Run = instance
    ? async (sql, parameters) => {
        const result = await instance.query(sql, [...parameters]);
        return {
          command: result.command,
          rowCount: result.affectedRows,
          rows: result.rows as unknown[],
        };
      }
    : (sql, parameters) => {
        if (!thread) return Promise.reject(new DatabaseUnavailableError('not started'));
        return thread.query(sql, parameters);
      };
  const pool = new SingleSessionPool(run, settings.acquireTimeoutMs);
  const db = new Kysely<DynamicDatabase>({ dialect: new PostgresDialect({ pool }) });

  async function start(): Promise<void> {
    const { directory } = target;
    if (thread?.stopped !== undefined && directory === undefined) {
      // A new in-memory database would be an empty one: refusing keeps that visible.
      throw new DatabaseUnavailableError(
        `the in-memory PGlite stopped (${thread.stopped}) and its data is gone; restart the service`,
      );
    }
    if (directory !== undefined) lock ??= claimDirectory(directory, target.redacted);
    try {
      const started = await PGliteThread.start(directory, target.redacted);
      thread = started.thread;
      settings.onStarted?.({ snapshot: started.snapshot, ms: Math.round(started.ms) });
    } catch (err) {
      // Nothing of this process is in the directory: another may have it.
      lock?.release();
      lock = undefined;
      throw err;
    }
  }

  return {
    kind: 'pglite',
    dialect: pgliteDialect,
    // One process per directory (its lock file).
    servesInstances: false,
    db,
    async open() {
      if (closed) throw new DatabaseUnavailableError('closed');
      if (instance) {
        try {
          return await instance.waitReady;
        } catch (err) {
          throw new KitError(
            'KIT_ERR_AUTOCRUD_ENGINE',
            `PGlite could not start (${target.redacted}): ${describeError(err)}`,
            { cause: err },
          );
        }
      }
      if (thread && thread.stopped === undefined) return;
      starting ??= start().finally(() => (starting = undefined));
      await starting;
    },
    async probe(signal) {
      // The one session may be held by a long statement (PGlite cannot cancel one): busy after a
      // short wait keeps a busy database from reading as a dead one.
      await pool.queue.acquire(Math.min(PING_WAIT_MS, settings.acquireTimeoutMs), signal);
      try {
        await run('select 1', []);
      } catch (err) {
        throw err instanceof KitError
          ? err
          : new DatabaseUnavailableError(closed ? 'closed' : (thread?.stopped ?? 'no answer'), {
              cause: err,
            });
      } finally {
        pool.queue.release();
      }
    },
    classify(err) {
      if (err instanceof DatabaseBusyError) return 'busy';
      const code = (err as { code?: unknown } | null)?.code;
      if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))
        return classifySqlState(code) ?? 'other';
      return err instanceof DatabaseUnavailableError ||
        instance?.closed ||
        thread?.stopped !== undefined ||
        closed
        ? 'unavailable'
        : 'other';
    },
    reason: () =>
      closed ? 'closed' : (thread?.stopped ?? (instance?.closed ? 'closed' : 'not started')),
    async close() {
      if (closed) return;
      closed = true;
      await starting?.catch(() => undefined);
      await thread?.close(CLOSE_GRACE_MS);
      lock?.release();
      lock = undefined;
    },
  };
}
