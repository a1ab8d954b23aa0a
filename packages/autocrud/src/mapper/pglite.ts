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
    private readonly session: () => PGlite,
    private readonly owned: boolean,
  ) {
    const client = {
      query: async <R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> => {
        const result = await this.session().query<R>(sql, [...parameters]);
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
    const pglite = this.session();
    if (this.owned && !pglite.closed) await pglite.close();
  }
}

/**
 * PGlite (PostgreSQL compiled to WASM), in memory or in a directory; no server needed. Given an
 * instance the host made, the engine uses it and leaves closing it to the host.
 */
export function pgliteEngine(target: Extract<ConnectionTarget, { kind: 'pglite' }>, instance?: PGlite): Engine {
  // Started by open(), during app.ready(): its WASM start-up runs on this thread for seconds, and
  // while plugins load it would count against their start-up timeout.
  let pglite = instance;
  let ready: Promise<unknown> | undefined;
  const session = () => {
    if (!pglite) throw new DatabaseUnavailableError('not started');
    return pglite;
  };
  const db = new Kysely<DynamicDatabase>({ dialect: new PostgresDialect({ pool: new SingleSessionPool(session, instance === undefined) }) });
  let closed = false;

  return {
    kind: 'pglite',
    flavour: 'postgres',
    db,
    async open() {
      if (closed) throw new DatabaseUnavailableError('closed');
      pglite ??= new PGlite(target.directory);
      ready ??= pglite.waitReady.then(
        () => undefined,
        (err: unknown) => err,
      );
      const failure = await ready;
      if (failure !== undefined) {
        throw new KitError('KIT_ERR_AUTOCRUD_ENGINE', `PGlite could not start (${target.redacted}): ${failure instanceof Error ? failure.message : String(failure)}`, { cause: failure });
      }
    },
    classify(err) {
      const code = (err as { code?: unknown } | null)?.code;
      if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return classifySqlState(code) ?? 'other';
      return err instanceof DatabaseUnavailableError || pglite?.closed || closed ? 'unavailable' : 'other';
    },
    reason: () => (closed || pglite?.closed ? 'closed' : 'not started'),
    async close() {
      if (closed) return;
      closed = true;
      await ready;
      if (pglite) await db.destroy();
    },
  };
}
