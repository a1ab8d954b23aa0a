import { PGlite } from '@electric-sql/pglite';
import { KitError } from '@kit/core';
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient, type PostgresQueryResult } from 'kysely';
import { classifySqlState, type DynamicDatabase, type Engine } from './engine.js';
import { DatabaseUnavailableError } from './errors.js';
import type { ConnectionTarget } from './connection-string.js';

/**
 * PGlite has one session. Handing it to Kysely as a pool of one connection, lent to one caller
 * at a time, keeps a transaction's statements together; PGlite itself would interleave them.
 */
class SingleSessionPool implements PostgresPool {
  #busy = false;
  readonly #waiting: Array<() => void> = [];
  readonly #client: PostgresPoolClient;

  constructor(
    private readonly pglite: PGlite,
    private readonly owned: boolean,
  ) {
    const client = {
      query: async <R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> => {
        const result = await this.pglite.query<R>(sql, [...parameters]);
        return { command: (result.command ?? 'SELECT') as PostgresQueryResult<R>['command'], rowCount: result.affectedRows ?? result.rows.length, rows: result.rows };
      },
      release: () => {
        const next = this.#waiting.shift();
        if (next) next();
        else this.#busy = false;
      },
    };
    this.#client = client as unknown as PostgresPoolClient;
  }

  async connect(): Promise<PostgresPoolClient> {
    if (this.#busy) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#busy = true;
    return this.#client;
  }

  async end(): Promise<void> {
    if (this.owned && !this.pglite.closed) await this.pglite.close();
  }
}

/**
 * PGlite (PostgreSQL compiled to WASM), in memory or in a directory; no server needed. Given an
 * instance the host made, the engine uses it and leaves closing it to the host.
 */
export function pgliteEngine(target: Extract<ConnectionTarget, { kind: 'pglite' }>, instance?: PGlite): Engine {
  // Starts now: WASM start-up takes seconds and runs while the rest of the service starts.
  const pglite = instance ?? new PGlite(target.directory);
  const ready = pglite.waitReady.then(
    () => undefined,
    (err: unknown) => err,
  );
  const db = new Kysely<DynamicDatabase>({ dialect: new PostgresDialect({ pool: new SingleSessionPool(pglite, instance === undefined) }) });
  let closed = false;

  return {
    kind: 'pglite',
    flavour: 'postgres',
    db,
    async open() {
      const failure = await ready;
      if (failure !== undefined) {
        throw new KitError('KIT_ERR_AUTOCRUD_ENGINE', `PGlite could not start (${target.redacted}): ${failure instanceof Error ? failure.message : String(failure)}`, { cause: failure });
      }
      if (closed) throw new DatabaseUnavailableError('closed');
    },
    classify(err) {
      const code = (err as { code?: unknown } | null)?.code;
      if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return classifySqlState(code) ?? 'other';
      return pglite.closed || closed ? 'unavailable' : 'other';
    },
    reason: () => (closed || pglite.closed ? 'closed' : 'not started'),
    async close() {
      if (closed) return;
      closed = true;
      await ready;
      await db.destroy();
    },
  };
}
