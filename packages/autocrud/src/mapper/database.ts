import { CompiledQuery } from 'kysely';
import { KitError } from '@kit/core';
import type { Entity } from '../entity.js';
import type { Db, Engine } from './sql/engine.js';
import type { SqlDialect } from './sql/dialect.js';
import {
  ConnectionLostError,
  ConstraintViolationError,
  DatabaseBusyError,
  DatabaseUnavailableError,
  InvalidValueError,
  SchemaMismatchError,
  StatementTimeoutError,
  takenColumns,
} from './errors.js';
import { EntityRepository, hooksOf, type Row } from './repository.js';
import { prepareTables } from './schema/tables.js';
import { referrersOf } from './writes/references.js';
import { historyLayer } from './history/history.js';
import type { SeamLayer } from './seam/hooks.js';
import { StatementSpans, statementTracer, traceStatement } from './sql/tracing.js';

/** Where the database reports state changes (pino's `app.log` fits). */
export interface DatabaseLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** The bounds every query runs under (see `acquireTimeoutMs` and `statementTimeoutMs` of the options). */
interface DatabaseLimits {
  /** How long a query may wait for a connection (a pooled one, or an embedded engine's session or lock). */
  readonly acquireTimeoutMs: number;
  /** How long one statement may run before the database cancels it. */
  readonly statementTimeoutMs: number;
}

/** After a failed attempt to reach the database, calls fail at once for this long instead of each trying again. */
const RETRY_AFTER_FAILURE_MS = 250;

/**
 * One database for every entity: the engine, the schema check, and the availability rule the
 * routes rely on. While the database is unreachable, calls fail at once with
 * `DatabaseUnavailableError` (one attempt at a time reconnects; nothing waits in a queue), and
 * the first call after it is back goes through. Knows nothing of HTTP.
 */
export class Database {
  readonly #entities = new Set<Entity>();
  readonly #unverified = new Set<Entity>();
  readonly #repositories = new Map<Entity, EntityRepository>();
  #up = false;
  #reason = 'not started';
  #attempt: Promise<void> | undefined;
  #retryAt = 0;
  #schemaError: SchemaMismatchError | undefined;
  /** Why the engine could not open (a PGlite directory in use or unusable): start-up fails with it. */
  #openError: KitError | undefined;
  #closed = false;
  /** Tables of Kit's own (the outbox's), checked or created with the entities' (see `addTables`). */
  readonly #ownTables: ((db: Db, dialect: SqlDialect, createTables: boolean) => Promise<void>)[] =
    [];
  /**
   * The layers on the read/write seam, attached to every entity as its repository is made, in
   * this order: the history first (every later layer sees a write the history recorded).
   */
  readonly #layers: SeamLayer[] = [historyLayer];
  /** Entities a layer required (the history table's): Kit's own, recorded by no layer. */
  readonly #own = new Set<Entity>();

  constructor(
    readonly engine: Engine,
    private readonly createTables: boolean,
    private readonly log: DatabaseLog,
    readonly limits: DatabaseLimits,
    /** Runs before the first schema check (the migrations, with `migrate: 'apply'`); once it succeeded, not again. */
    private migrate?: () => Promise<void>,
  ) {}

  /** True while the database answered the last call and every entity's table checked out. */
  get available(): boolean {
    return this.#up && this.#unverified.size === 0;
  }

  /** Adds an entity; its table is checked (or created) before its first query. */
  register(entity: Entity): EntityRepository {
    let repository = this.#repositories.get(entity);
    if (!repository) {
      this.#entities.add(entity);
      this.#unverified.add(entity);
      repository = new EntityRepository(
        entity,
        this.engine.dialect,
        (query, signal) => this.run(query, signal),
        (query, name, signal) => this.#execute(query, name, signal),
        () => referrersOf(entity, this.#entities),
      );
      this.#repositories.set(entity, repository);
      for (const layer of this.#layers) this.#attach(layer, repository);
    }
    return repository;
  }

  /** Attaches `layer` to one repository's entity (see `use`). */
  #attach(layer: SeamLayer, repository: EntityRepository): void {
    const require = (own: Entity): void => {
      this.#own.add(own);
      this.register(own);
    };
    layer.attach({
      entity: repository.entity,
      hooks: hooksOf(repository),
      dialect: this.engine.dialect,
      own: this.#own.has(repository.entity),
      require,
    });
  }

  /**
   * Adds a layer on the read/write seam (the outbox): attached at once to every entity made so
   * far, and to each made later, after the layers added before it. A start-up step: hooks added
   * once requests run would change what a request does midway.
   */
  use(layer: SeamLayer): void {
    this.#layers.push(layer);
    for (const repository of [...this.#repositories.values()]) this.#attach(layer, repository);
  }

  /** Checks (and with `createTables` makes) tables of Kit's own at each connect, after the entities'. */
  addTables(prepare: (db: Db, dialect: SqlDialect, createTables: boolean) => Promise<void>): void {
    this.#ownTables.push(prepare);
  }

  /** The repository of an entity (registered on first use). */
  repository<R extends object = Row, I extends object = Readonly<Record<string, unknown>>>(
    entity: Entity,
  ): EntityRepository<R, I> {
    return this.register(entity) as unknown as EntityRepository<R, I>;
  }

  /**
   * Opens the engine and checks the tables, for start-up. Resolves true when ready, false when a
   * server is unreachable (start-up goes on; calls answer "unavailable" until it is back). Rejects
   * on what cannot heal by waiting: a schema that does not fit, an engine that cannot open.
   */
  async start(): Promise<boolean> {
    try {
      await this.#ensureReady();
      return true;
    } catch (err) {
      // Whoever made the first attempt (a warm-up's query, say), start-up fails with its reason.
      if (this.#openError) throw this.#openError;
      if (err instanceof DatabaseUnavailableError) return false;
      throw err;
    }
  }

  async #ensureReady(): Promise<void> {
    if (this.#up && this.#unverified.size === 0) return;
    if (this.#closed) throw new DatabaseUnavailableError('closed');
    // The first start (PGlite's WASM, the first connection): callers during it wait for it, so that
    // start-up work (warm-ups, early requests) is not refused. It is bounded: a server gets
    // connectTimeoutMs, an embedded engine opens or fails.
    if (this.#attempt && this.#reason === 'not started') {
      await this.#attempt.catch(() => undefined);
      return this.#ensureReady();
    }
    // Later, one attempt at a time; everyone else fails fast rather than piling up behind it.
    if (this.#attempt || Date.now() < this.#retryAt)
      throw (
        this.#schemaError ??
        new DatabaseUnavailableError(this.#reason, this.#openError && { cause: this.#openError })
      );
    this.#attempt = this.#connect();
    try {
      await this.#attempt;
    } finally {
      this.#attempt = undefined;
    }
  }

  async #connect(): Promise<void> {
    try {
      await this.engine.open();
      if (this.migrate) {
        await this.migrate();
        this.migrate = undefined;
      }
      const pending = [...this.#unverified];
      await prepareTables(this.engine.db, this.engine.dialect, pending, this.createTables);
      if (!this.#up)
        for (const prepare of this.#ownTables)
          await prepare(this.engine.db, this.engine.dialect, this.createTables);
      for (const entity of pending) this.#unverified.delete(entity);
      if (!this.#up)
        this.log.info(
          { engine: this.engine.kind },
          this.#reason === 'not started'
            ? 'AutoCrud database ready'
            : 'AutoCrud database reachable again',
        );
      this.#up = true;
      this.#schemaError = undefined;
      this.#openError = undefined;
    } catch (err) {
      this.#retryAt = Date.now() + RETRY_AFTER_FAILURE_MS;
      if (err instanceof SchemaMismatchError) {
        this.#schemaError = err;
        throw err;
      }
      if (err instanceof KitError && err.code !== 'KIT_ERR_DATABASE_UNAVAILABLE') {
        this.#openError = err;
        if (this.#reason === 'not started') this.#reason = 'could not open';
        throw err;
      }
      throw this.#unavailable(err);
    }
  }

  /** Marks the database down (logged once per outage) and returns the error for the caller. */
  #unavailable(err: unknown): DatabaseUnavailableError {
    const reason = err instanceof DatabaseUnavailableError ? err.reason : this.engine.reason(err);
    if (this.#up || this.#reason === 'not started') {
      this.log.warn(
        { engine: this.engine.kind, reason },
        'AutoCrud database unavailable; its routes answer 503 until it is back',
      );
    }
    this.#up = false;
    this.#reason = reason;
    return err instanceof DatabaseUnavailableError
      ? err
      : new DatabaseUnavailableError(reason, { cause: err });
  }

  /**
   * Runs `query` once the database is ready; a driver error becomes `DatabaseUnavailableError`
   * (`ConnectionLostError` when a connection broke while in use), `DatabaseBusyError`,
   * `StatementTimeoutError`, `ConstraintViolationError` or `InvalidValueError`, anything else is
   * rethrown as is. When `signal` aborts (the statements `query` runs through the repository's
   * executor carry it: one still waiting gives up, a running one is cancelled, where the engine
   * can), the call rejects with `signal.reason`.
   */
  async run<T>(query: (db: Db) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw signal.reason;
    // Ready is the common case: no await (and its microtask turns) on the way to the query.
    if (!this.available) await this.#ensureReady();
    // With an OpenTelemetry SDK registered, the statements the builder runs get spans.
    const tracer = statementTracer();
    const spans = tracer && new StatementSpans(tracer, this.engine.dialect.traceSystem);
    try {
      const result = await query(spans ? this.engine.db.withPlugin(spans) : this.engine.db);
      spans?.finish();
      return result;
    } catch (err) {
      spans?.finish(err);
      const mapped = this.#map(err);
      // The caller went away: whatever became of the statement is no longer anyone's answer.
      throw signal?.aborted ? signal.reason : mapped;
    }
  }

  /** A driver error as the mapper's error; marks the database down only when it cannot be reached. */
  #map(err: unknown): unknown {
    switch (this.engine.classify(err)) {
      case 'unavailable':
        return this.#unavailable(err);
      case 'lost': {
        // One connection broke (its backend was terminated, or the server is going away): this call
        // fails, the other connections keep working. Only a failure to connect marks the database down.
        const reason = this.engine.reason(err);
        this.log.warn(
          { engine: this.engine.kind, reason },
          'AutoCrud: a database connection broke while a statement ran; that call failed, the database is not marked down',
        );
        return err instanceof ConnectionLostError
          ? err
          : new ConnectionLostError(reason, { cause: err });
      }
      case 'busy':
        // Saturated, not down: the database stays marked up and nothing is logged as an outage.
        return err instanceof DatabaseBusyError
          ? err
          : new DatabaseBusyError(this.limits.acquireTimeoutMs, { cause: err });
      case 'timeout':
        return err instanceof StatementTimeoutError
          ? err
          : new StatementTimeoutError(this.limits.statementTimeoutMs, { cause: err });
      case 'unique':
        return new ConstraintViolationError('unique', { cause: err, columns: takenColumns(err) });
      case 'foreignKey':
        return new ConstraintViolationError('foreignKey', { cause: err });
      case 'invalid':
        return new InvalidValueError({ cause: err });
      default:
        return err;
    }
  }

  /** A compiled statement on the engine's own path when it has one (prepared statements), else through Kysely. */
  async #execute(
    query: CompiledQuery,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<Row[]> {
    const engine = this.engine;
    const tracer = statementTracer();
    if (tracer)
      return traceStatement(tracer, engine.dialect.traceSystem, query, () =>
        this.#executeOnEngine(query, name, signal),
      );
    return this.#executeOnEngine(query, name, signal);
  }

  async #executeOnEngine(
    query: CompiledQuery,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<Row[]> {
    const engine = this.engine;
    return engine.execute
      ? engine.execute(query, name, signal)
      : (await engine.db.executeQuery<Row>(query)).rows;
  }

  /**
   * `SELECT 1`, abandoned when `signal` aborts; resolves with the round trip in milliseconds. It
   * goes over the engine's own probe connection where it has one, so that a pool busy with slow
   * statements does not fail it. When the database answers but was marked down, it also
   * reconnects the entities (the health check thereby heals the routes). Rejects with
   * `DatabaseUnavailableError` or `SchemaMismatchError`.
   */
  async ping(signal?: AbortSignal): Promise<number> {
    const started = performance.now();
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(new DatabaseUnavailableError('no answer before the check timed out'));
      // An engine with a probe of its own honours the signal itself (a session it waits for is busy, not down).
      if (this.engine.probe) return;
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
    const probe = async () => {
      if (!this.available) {
        if (this.#attempt) throw this.#schemaError ?? new DatabaseUnavailableError(this.#reason);
        this.#retryAt = 0;
        await this.#ensureReady();
      }
      if (this.engine.probe) await this.engine.probe(signal);
      else await this.run((db) => db.executeQuery(CompiledQuery.raw('select 1')));
    };
    try {
      await Promise.race([probe(), aborted]);
    } finally {
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
    return Math.round((performance.now() - started) * 100) / 100;
  }

  /** Closes the engine; later calls fail with `DatabaseUnavailableError('closed')`. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#up = false;
    this.#reason = 'closed';
    await this.#attempt?.catch(() => undefined);
    await this.engine.close();
  }
}
