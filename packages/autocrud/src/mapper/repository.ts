import { randomUUID } from 'node:crypto';
import { KitError } from '@kit/core';
import { sql, type CompiledQuery, type Expression, type SqlBool } from 'kysely';
import type { Entity, EntityField } from '../entity.js';
import type { Db, SqlFlavour } from './engine.js';
import { encodeValue } from './flavour.js';
import { condition, keyset, notDeleted, orderOf, slotList, type Eb, type ListOptions } from './query.js';
import { VersionConflictError } from './errors.js';
import { Slot, statement, StatementCache, type Statement } from './statements.js';

/** A row as the API shows it: field names, JSON values. */
export type Row = Record<string, unknown>;

/**
 * Options of every repository call.
 *
 * @example
 * ```ts
 * // Give up when the HTTP client goes away: a running statement is cancelled on PostgreSQL.
 * const row = await products.get(7, { signal: AbortSignal.timeout(2000) } satisfies CallOptions);
 * ```
 */
export interface CallOptions {
  /**
   * When it aborts, a statement still waiting for a connection gives up and a running one is
   * cancelled (PostgreSQL: a cancel request), and the call rejects with `signal.reason`.
   */
  readonly signal?: AbortSignal;
}

/**
 * Options of a write on one row.
 *
 * @example
 * ```ts
 * await products.update(7, { name: 'Kettle', price: 40 }, { ifVersion: [3] } satisfies WriteOptions);
 * ```
 */
export interface WriteOptions extends CallOptions {
  /**
   * Write only while the row is at one of these versions (the entity's `version` field), checked
   * in the same statement: otherwise nothing is written and `VersionConflictError` is thrown. An
   * empty list never matches.
   */
  readonly ifVersion?: readonly number[];
}

/** Runs a query against the database with availability and error mapping (see `Database.run`). */
export type Runner = <T>(query: (db: Db) => Promise<T>, signal?: AbortSignal) => Promise<T>;

/** Runs a compiled statement (prepared under `name` where the engine can; cancelled when `signal` aborts, where it can) and returns its rows. */
export type Executor = (query: CompiledQuery, name: string, signal?: AbortSignal) => Promise<Row[]>;

/**
 * A column value as the API shows it: pg returns int8 and numeric as strings and PGlite int8 as
 * bigint, SQLite has 0/1 for booleans, timestamps come back as Date. NULL is `null` on a nullable
 * field and absent on an optional one.
 */
function decodeValue(field: EntityField, value: unknown): unknown {
  switch (field.type) {
    case 'integer':
    case 'number':
      return typeof value === 'string' || typeof value === 'bigint' ? Number(value) : value;
    case 'boolean':
      return typeof value === 'number' || typeof value === 'bigint' ? Number(value) !== 0 : value;
    case 'string':
      return value instanceof Date ? value.toISOString() : value;
  }
}

/**
 * The SQL side of one entity: list, get, create, update and delete. Knows nothing of HTTP; every
 * value is a bound parameter and every identifier one of the entity's declared columns.
 *
 * @example
 * ```ts
 * const products = app.kit.services.resolve<KitAutoCrud>('kitAutoCrud').repository(Product);
 * const cheap = await products.list({ filters: [{ field: 'price', op: 'lt', value: 10 }], sort: [], offset: 0, limit: 20 });
 * ```
 */
export class EntityRepository<R extends object = Row> {
  readonly #table: string;
  readonly #pk: EntityField;
  readonly #selection;
  readonly #version: EntityField | undefined;
  // Queries compiled once per shape (see statements.ts): the read by key, an insert per set of
  // columns the bodies bring, the lists by their filters and order.
  #byKeyStatement: Statement | undefined;
  readonly #inserts = new StatementCache();
  // The lists, by shape (see slotList): pages and counts.
  readonly #lists = new StatementCache();

  constructor(
    readonly entity: Entity,
    private readonly flavour: SqlFlavour,
    private readonly run: Runner,
    private readonly execute: Executor,
  ) {
    this.#table = entity.table;
    this.#pk = entity.field(entity.primaryKey) as EntityField;
    this.#selection = entity.fields.map((f) => sql.ref(f.column).as(f.name));
    this.#version = entity.version === undefined ? undefined : entity.field(entity.version);
  }

  #decode(row: Row): R {
    const out: Row = {};
    for (const field of this.entity.fields) {
      const value = row[field.name];
      if (value === null || value === undefined) {
        if (field.nullable) out[field.name] = null;
        continue;
      }
      out[field.name] = decodeValue(field, value);
    }
    return out as R;
  }

  #where(eb: Eb, conditions: Array<Expression<SqlBool> | undefined>): Expression<SqlBool> {
    const present = conditions.filter((c): c is Expression<SqlBool> => c !== undefined);
    return eb.and(present);
  }

  #byKey(eb: Eb, key: unknown): Expression<SqlBool> {
    return this.#where(eb, [eb(sql.ref(this.#pk.column), '=', key), notDeleted(eb, this.flavour, this.entity)]);
  }

  /**
   * One page, and the number of rows all the filters match (unless `count: false`). With `after`,
   * the page starts after that keyset position (see `ListOptions.after`) and `offset` is ignored.
   */
  list(options: ListOptions & { count: false }): Promise<{ rows: R[]; total?: undefined }>;
  list(options: ListOptions): Promise<{ rows: R[]; total: number }>;
  async list(options: ListOptions): Promise<{ rows: R[]; total?: number }> {
    const order = orderOf(this.entity, options.sort);
    if (options.after !== undefined && options.after.length !== order.length) {
      throw new KitError('KIT_ERR_INVALID_ARGUMENT', `list({ after }): expected ${order.length} values (the sort keys, then the primary key), got ${options.after.length}.`);
    }
    const { shape, filters, after, values } = slotList(this.flavour, options.filters, order, options.after);
    const skip = after === undefined && options.offset > 0;
    values.limit = options.limit;
    if (skip) values.offset = options.offset;
    const signal = options.signal;
    return this.run(async (db) => {
      const filtered = () =>
        db.selectFrom(this.#table).where((eb) =>
          this.#where(eb, [notDeleted(eb, this.flavour, this.entity), ...filters.map((f) => condition(eb, this.flavour, this.entity.field(f.field) as EntityField, f))]),
        );
      const page = this.#lists.get(`${shape}\u0002${skip ? 'offset' : ''}`, () => {
        let query = filtered().select(this.#selection);
        if (after !== undefined) query = query.where((eb) => keyset(eb, this.flavour, this.entity, order, after));
        for (const key of order) {
          const column = sql.ref((this.entity.field(key.field) as EntityField).column);
          // NULLs sort last ascending and first descending on both flavours, as PostgreSQL does by default.
          query = query.orderBy(key.descending ? sql`${column} desc nulls first` : sql`${column} asc nulls last`);
        }
        // Slots stand for the numbers until the statement is bound.
        query = query.limit(new Slot('limit') as unknown as number);
        return skip ? query.offset(new Slot('offset') as unknown as number) : query;
      });
      const rows = this.execute(page.bind(values), page.name, signal);
      if (options.count === false) return { rows: (await rows).map((r) => this.#decode(r)) };
      const count = this.#lists.get(`${shape}\u0002count`, () => filtered().select(sql<number>`count(*)`.as('total')));
      const [found, [counted]] = await Promise.all([rows, this.execute(count.bind(values), count.name, signal)]);
      return { rows: found.map((r) => this.#decode(r)), total: Number(counted?.total) };
    }, signal);
  }

  // Every statement runs through `execute`, which carries the call's signal to the connection.

  /** Every row that is not soft-deleted, by primary key. */
  async all(options?: CallOptions): Promise<R[]> {
    const signal = options?.signal;
    return this.run(async (db) => {
      const query = db
        .selectFrom(this.#table)
        .select(this.#selection)
        .where((eb) => this.#where(eb, [notDeleted(eb, this.flavour, this.entity)]))
        .orderBy(sql.ref(this.#pk.column));
      const rows = await this.execute(query.compile(), '', signal);
      return rows.map((r) => this.#decode(r));
    }, signal);
  }

  /** The row with this primary key, unless absent or soft-deleted. */
  async get(key: unknown, options?: CallOptions): Promise<R | undefined> {
    const signal = options?.signal;
    return this.run(async (db) => {
      const read = (this.#byKeyStatement ??= statement(
        db
          .selectFrom(this.#table)
          .select(this.#selection)
          .where((eb) => this.#byKey(eb, new Slot('key'))),
      ));
      const [row] = await this.execute(read.bind({ key }), read.name, signal);
      return row ? this.#decode(row) : undefined;
    }, signal);
  }

  #values(input: Readonly<Record<string, unknown>>, replace: boolean): Record<string, unknown> {
    const values: Record<string, unknown> = {};
    for (const name of this.entity.writable) {
      const field = this.entity.field(name) as EntityField;
      const value = Object.prototype.hasOwnProperty.call(input, name) ? input[name] : undefined;
      // A creation leaves what it leaves out to the column's default; a replacement resets it to
      // the schema's default, or NULL.
      if (value === undefined && !replace) continue;
      values[field.column] = encodeValue(this.flavour, value ?? field.schema.default ?? null);
    }
    return values;
  }

  /** Inserts the writable fields of `input` (others are ignored) and returns the stored row (its version 1). */
  async create(input: Readonly<Record<string, unknown>>, options?: CallOptions): Promise<R> {
    const values = this.#values(input, false);
    if (this.#pk.type === 'string') values[this.#pk.column] = randomUUID();
    if (this.#version) values[this.#version.column] = 1;
    const columns = Object.keys(values);
    const signal = options?.signal;
    return this.run(async (db) => {
      const insert = this.#inserts.get(columns.join('\u0000'), () => {
        const slots = Object.fromEntries(columns.map((c) => [c, new Slot(c)]));
        return (columns.length === 0 ? db.insertInto(this.#table).defaultValues() : db.insertInto(this.#table).values(slots)).returning(this.#selection);
      });
      const [row] = await this.execute(insert.bind(values), insert.name, signal);
      if (!row) throw new Error(`INSERT INTO ${this.#table} ... RETURNING answered no row`);
      return this.#decode(row);
    }, signal);
  }

  /** The row's key condition, plus the version condition of a conditional write. */
  #target(eb: Eb, key: unknown, ifVersion: readonly number[] | undefined): Expression<SqlBool> {
    const byKey = this.#byKey(eb, key);
    if (ifVersion === undefined || !this.#version) return byKey;
    return eb.and([byKey, eb(sql.ref(this.#version.column), 'in', [...ifVersion])]);
  }

  /** After a conditional write changed nothing: undefined when there is no row, else the conflict. */
  async #conflict(db: Db, key: unknown, signal: AbortSignal | undefined): Promise<undefined> {
    const version = this.#version as EntityField;
    const query = db
      .selectFrom(this.#table)
      .select(sql.ref(version.column).as('version'))
      .where((eb) => this.#byKey(eb, key));
    const [row] = await this.execute(query.compile(), '', signal);
    if (row) throw new VersionConflictError(Number(row.version));
    return undefined;
  }

  #checkCondition(options: WriteOptions | undefined): readonly number[] | undefined {
    const ifVersion = options?.ifVersion;
    if (ifVersion !== undefined && !this.#version) {
      throw new KitError('KIT_ERR_INVALID_ARGUMENT', `ifVersion: entity ${this.entity.name} declares no version field (defineEntity({ version: ... })).`);
    }
    return ifVersion;
  }

  /**
   * Replaces the writable fields of the row (a field `input` leaves out becomes its schema
   * `default`, or NULL), increments its version, and returns the stored row, or `undefined` when
   * there is no such row (or it is soft-deleted). With `ifVersion`, the write happens only while
   * the row is at one of those versions (checked in the same statement); otherwise nothing is
   * written and `VersionConflictError` carries the current version.
   */
  async update(key: unknown, input: Readonly<Record<string, unknown>>, options?: WriteOptions): Promise<R | undefined> {
    const ifVersion = this.#checkCondition(options);
    const values: Record<string, unknown> = this.#values(input, true);
    if (this.#version) values[this.#version.column] = sql`${sql.ref(this.#version.column)} + 1`;
    const signal = options?.signal;
    return this.run(async (db) => {
      if (ifVersion?.length === 0) return this.#conflict(db, key, signal);
      const query = db
        .updateTable(this.#table)
        .set(values)
        .where((eb) => this.#target(eb, key, ifVersion))
        .returning(this.#selection);
      const [row] = await this.execute(query.compile(), '', signal);
      if (row) return this.#decode(row);
      return ifVersion === undefined ? undefined : this.#conflict(db, key, signal);
    }, signal);
  }

  /**
   * Soft-deletes (when the entity opts in; the version is incremented) or deletes the row; false
   * when there was none. `ifVersion` as for {@link EntityRepository.update}.
   */
  async delete(key: unknown, options?: WriteOptions): Promise<boolean> {
    const ifVersion = this.#checkCondition(options);
    const soft = this.entity.softDelete === undefined ? undefined : this.entity.field(this.entity.softDelete);
    const signal = options?.signal;
    return this.run(async (db) => {
      if (ifVersion?.length === 0) return (await this.#conflict(db, key, signal)) ?? false;
      // RETURNING the key counts the rows touched, on every engine, through the one statement path.
      const touched = sql.ref(this.#pk.column);
      let query;
      if (soft) {
        const values: Record<string, unknown> = { [soft.column]: encodeValue(this.flavour, true) };
        if (this.#version) values[this.#version.column] = sql`${sql.ref(this.#version.column)} + 1`;
        query = db
          .updateTable(this.#table)
          .set(values)
          .where((eb) => this.#target(eb, key, ifVersion))
          .returning(touched.as('key'));
      } else {
        query = db
          .deleteFrom(this.#table)
          .where((eb) => this.#target(eb, key, ifVersion))
          .returning(touched.as('key'));
      }
      if ((await this.execute(query.compile(), '', signal)).length > 0) return true;
      return ifVersion === undefined ? false : ((await this.#conflict(db, key, signal)) ?? false);
    }, signal);
  }
}
