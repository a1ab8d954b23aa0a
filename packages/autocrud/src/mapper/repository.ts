import { randomUUID } from 'node:crypto';
import { KitError } from '@kit/core';
import { sql, type CompiledQuery, type Expression, type SqlBool } from 'kysely';
import type { Entity, EntityField } from '../entity.js';
import { ValueFault } from '../values/kinds.js';
import { keyValue, listArguments, patchValues, writeValues } from './arguments.js';
import { columnCodec, encodeValue, type ColumnCodec } from './columns.js';
import type { Db, SqlFlavour } from './engine.js';
import { anyOf, condition, keyset, notDeleted, orderOf, slotList, type Eb, type Filter, type ListOptions, type SortKey } from './query.js';
import { UnrepresentableValueError, VersionConflictError } from './errors.js';
import { Slot, statement, StatementCache, type Statement } from './statements.js';
import { kitTimestamps } from './stamps.js';
import { checkReadOnly, scopeConditions, scopeFilters, scopeValues, withoutReadOnly, type Scope } from './scope.js';

/**
 * A row as the API shows it: field names, JSON values.
 *
 * @example
 * ```ts
 * const row: Row = { id: 7, name: 'Kettle', price: 40 };
 * ```
 */
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
  /**
   * What the call may touch (see {@link Scope}): its conditions join every statement the call
   * runs, so a row outside it is absent (a read finds nothing, a write touches nothing).
   */
  readonly scope?: Scope;
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
 * node:sqlite refuses to read an integer beyond 2^53 - 1 (ERR_OUT_OF_RANGE) rather than round it:
 * that is the same fault as any value Kit cannot answer exactly.
 */
function unreadable(entity: Entity, err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code === 'ERR_OUT_OF_RANGE' ? new UnrepresentableValueError(entity.name, undefined, 'holds an integer outside the range a JavaScript number holds exactly', { cause: err }) : err;
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
export class EntityRepository<R extends object = Row, I extends object = Readonly<Record<string, unknown>>> {
  readonly #table: string;
  readonly #pk: EntityField;
  readonly #codecs: readonly ColumnCodec[];
  readonly #selection;
  readonly #version: EntityField | undefined;
  // Queries compiled once per shape (see statements.ts): the read by key, an insert per set of
  // columns the bodies bring, the lists by their filters and order.
  #byKeyStatement: Statement | undefined;
  // The read by key under a scope, by the scope's shape.
  readonly #scopedReads = new StatementCache();
  readonly #inserts = new StatementCache();
  // The lists, by shape (see slotList): pages and counts.
  readonly #lists = new StatementCache();
  // The orders order() made: list() takes one as it is, so a caller that needs the order first
  // (the list route, for its cursors) and the query share one.
  readonly #orders = new WeakSet<readonly SortKey[]>();

  constructor(
    readonly entity: Entity,
    private readonly flavour: SqlFlavour,
    private readonly run: Runner,
    private readonly execute: Executor,
  ) {
    this.#table = entity.table;
    this.#pk = entity.field(entity.primaryKey) as EntityField;
    this.#codecs = entity.fields.map((f) => columnCodec(flavour, f));
    this.#selection = entity.fields.map((f, i) => (this.#codecs[i] as ColumnCodec).read(f.column).as(f.name));
    if (flavour === 'sqlite') this.run = (query) => run((db) => query(db).catch((err: unknown) => Promise.reject(unreadable(entity, err))));
    this.#version = entity.version === undefined ? undefined : entity.field(entity.version);
  }

  /**
   * A row as the API shows it: each value in Kit's form (see columns.ts). NULL is `null` on a
   * nullable field and absent on an optional one. A value with no exact answer throws
   * `UnrepresentableValueError` naming the field and the row: never a rounded or shifted value.
   */
  #decode(row: Row): R {
    const out: Row = {};
    const fields = this.entity.fields;
    for (let i = 0; i < fields.length; i++) {
      const field = fields[i] as EntityField;
      const value = row[field.name];
      if (value === null || value === undefined) {
        if (field.nullable) out[field.name] = null;
        continue;
      }
      const decoded = (this.#codecs[i] as ColumnCodec).decode(value);
      if (decoded instanceof ValueFault) throw new UnrepresentableValueError(this.entity.name, field.name, `${decoded.detail} (the row with ${this.#pk.name} ${JSON.stringify(String(row[this.#pk.name]))})`);
      out[field.name] = decoded;
    }
    return out as R;
  }

  #where(eb: Eb, conditions: Array<Expression<SqlBool> | undefined>): Expression<SqlBool> {
    const present = conditions.filter((c): c is Expression<SqlBool> => c !== undefined);
    return eb.and(present);
  }

  #byKey(eb: Eb, key: unknown, scope: readonly Filter[]): Expression<SqlBool> {
    return this.#where(eb, [eb(sql.ref(this.#pk.column), '=', key), notDeleted(eb, this.flavour, this.entity), ...scopeConditions(eb, this.flavour, this.entity, scope)]);
  }

  /**
   * The order a list sorted by `sort` uses: the sort keys, then the primary key (ascending) unless
   * it is one of them, so that pages are stable. `ListOptions.after` holds one value per key of
   * it. Passed to `list()` as `sort`, it is used as it is.
   *
   * @example
   * ```ts
   * const order = products.order([{ field: 'price', descending: true }]);   // price desc, then id
   * const page = await products.list({ filters: [], sort: order, offset: 0, limit: 20, count: false });
   * const last = page.rows.at(-1)!;
   * const next = await products.list({ filters: [], sort: order, offset: 0, limit: 20, count: false, after: order.map((k) => last[k.field as keyof typeof last]) });
   * ```
   */
  order(sort: readonly SortKey<Extract<keyof R, string>>[]): readonly SortKey<Extract<keyof R, string>>[] {
    if (this.#orders.has(sort)) return sort;
    const order = Object.freeze([...orderOf(this.entity, sort)]);
    this.#orders.add(order);
    return order as readonly SortKey<Extract<keyof R, string>>[];
  }

  /**
   * One page, and the number of rows all the filters (and one alternative of `or`) match (unless `count: false`). With `after`,
   * the page starts after that keyset position (see `ListOptions.after`) and `offset` is ignored.
   * @throws {KitError} `KIT_ERR_INVALID_ARGUMENT` when `after` does not hold one value per key of the order, or `or` has more than 10 alternatives or an empty one; `DatabaseUnavailableError`, `DatabaseBusyError`, `StatementTimeoutError` when the database cannot run it.
   */
  list(options: ListOptions<Extract<keyof R, string>> & { count: false }): Promise<{ rows: R[]; total?: undefined }>;
  list(options: ListOptions<Extract<keyof R, string>>): Promise<{ rows: R[]; total: number }>;
  async list(options: ListOptions<Extract<keyof R, string>>): Promise<{ rows: R[]; total?: number }> {
    const order = this.order(options.sort);
    // The scope's conditions join the caller's: the page, the count and the keyset alike.
    const checked = listArguments(this.entity, options.scope ? { ...options, filters: [...options.filters, ...options.scope.where] } : options, order);
    const { shape, filters, or, after, values } = slotList(this.flavour, this.entity, checked.filters, order, checked.after, checked.or);
    const skip = after === undefined && options.offset > 0;
    values.limit = options.limit;
    if (skip) values.offset = options.offset;
    const signal = options.signal;
    return this.run(async (db) => {
      const filtered = () =>
        db.selectFrom(this.#table).where((eb) =>
          this.#where(eb, [
            notDeleted(eb, this.flavour, this.entity),
            ...filters.map((f) => condition(eb, this.flavour, this.entity.field(f.field) as EntityField, f)),
            anyOf(eb, this.flavour, this.entity, or),
          ]),
        );
      const page = this.#lists.get(`${shape}\u0002${skip ? 'offset' : ''}`, () => {
        let query = filtered().select(this.#selection);
        if (after !== undefined) query = query.where((eb) => keyset(eb, this.flavour, this.entity, order, after));
        for (const key of order) {
          // Qualified: ORDER BY resolves a bare name to the SELECT list's output first, and a field
          // read through an expression (a timestamp as text) would then sort as text.
          const column = sql.ref(`${this.#table}.${(this.entity.field(key.field) as EntityField).column}`);
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
    const scope = scopeFilters(this.entity, options?.scope);
    return this.run(async (db) => {
      const query = db
        .selectFrom(this.#table)
        .select(this.#selection)
        .where((eb) => this.#where(eb, [notDeleted(eb, this.flavour, this.entity), ...scopeConditions(eb, this.flavour, this.entity, scope)]))
        .orderBy(sql.ref(`${this.#table}.${this.#pk.column}`));
      const rows = await this.execute(query.compile(), '', signal);
      return rows.map((r) => this.#decode(r));
    }, signal);
  }

  /** The row with this primary key, unless absent or soft-deleted. */
  async get(key: unknown, options?: CallOptions): Promise<R | undefined> {
    key = keyValue(this.#pk, key);
    if (key === undefined) return undefined;
    const signal = options?.signal;
    const scope = scopeFilters(this.entity, options?.scope);
    // Under a scope, one statement per scope shape with the scope's values in slots, as a list's filters.
    const scoped = scope.length === 0 ? undefined : slotList(this.flavour, this.entity, scope, [], undefined);
    return this.run(async (db) => {
      const build = (where: readonly Filter[]) => db.selectFrom(this.#table).select(this.#selection).where((eb) => this.#byKey(eb, new Slot('key'), where));
      const read = scoped ? this.#scopedReads.get(scoped.shape, () => build(scoped.filters)) : (this.#byKeyStatement ??= statement(build([])));
      const [row] = await this.execute(read.bind(scoped ? { ...scoped.values, key } : { key }), read.name, signal);
      return row ? this.#decode(row) : undefined;
    }, signal);
  }

  /**
   * Inserts the writable fields of `input` (others are ignored) and returns the stored row (its
   * version 1). A field left out gets the column's default; an explicit `null` is NULL.
   */
  async create(input: I, options?: CallOptions): Promise<R> {
    checkReadOnly(this.entity, options?.scope, input as Readonly<Record<string, unknown>>);
    const values = writeValues(this.entity, this.flavour, input as Readonly<Record<string, unknown>>, false);
    // The scope's fields are set from it, whatever the input says: a row is created inside the caller's scope.
    Object.assign(values, scopeValues(this.entity, this.flavour, scopeFilters(this.entity, options?.scope), true));
    if (this.#pk.type === 'string') values[this.#pk.column] = randomUUID();
    if (this.#version) values[this.#version.column] = 1;
    const stamps = kitTimestamps(this.entity, this.flavour, 'create');
    const columns = [...Object.keys(values), ...Object.keys(stamps)];
    const signal = options?.signal;
    return this.run(async (db) => {
      const insert = this.#inserts.get(columns.join('\u0000'), () => {
        const slots = Object.fromEntries(columns.map((c) => [c, stamps[c] ?? new Slot(c)]));
        return (columns.length === 0 ? db.insertInto(this.#table).defaultValues() : db.insertInto(this.#table).values(slots)).returning(this.#selection);
      });
      const [row] = await this.execute(insert.bind(values), insert.name, signal);
      if (!row) throw new Error(`INSERT INTO ${this.#table} ... RETURNING answered no row`);
      return this.#decode(row);
    }, signal);
  }

  /** The row's key condition, plus the version condition of a conditional write. */
  #target(eb: Eb, key: unknown, ifVersion: readonly number[] | undefined, scope: readonly Filter[]): Expression<SqlBool> {
    const byKey = this.#byKey(eb, key, scope);
    if (ifVersion === undefined || !this.#version) return byKey;
    return eb.and([byKey, eb(sql.ref(this.#version.column), 'in', [...ifVersion])]);
  }

  /** After a conditional write changed nothing: undefined when there is no row, else the conflict. */
  async #conflict(db: Db, key: unknown, signal: AbortSignal | undefined, scope: readonly Filter[]): Promise<undefined> {
    const version = this.#version as EntityField;
    const query = db
      .selectFrom(this.#table)
      .select(sql.ref(version.column).as('version'))
      .where((eb) => this.#byKey(eb, key, scope));
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
   * @throws {VersionConflictError} With `ifVersion`, when the row is at another version (nothing written); `ConstraintViolationError`, `InvalidValueError` when the database refuses the write.
   */
  async update(key: unknown, input: I, options?: WriteOptions): Promise<R | undefined> {
    const ifVersion = this.#checkCondition(options);
    checkReadOnly(this.entity, options?.scope, input as Readonly<Record<string, unknown>>);
    // A replace leaves the scope's read-only fields as they are.
    const values = withoutReadOnly(this.entity, options?.scope, writeValues(this.entity, this.flavour, input as Readonly<Record<string, unknown>>, true));
    return this.#write(key, values, ifVersion, options);
  }

  /**
   * Applies a JSON Merge Patch (RFC 7396) to the row: only the fields `patch` names change, `null`
   * clears a nullable field, and a field's value replaces the stored one whole. Increments the
   * version and returns the stored row, or `undefined` when there is no such row (or it is
   * soft-deleted). An empty patch writes nothing (the version stays) and returns the row as it is,
   * `ifVersion` still checked. `ifVersion` as for {@link EntityRepository.update}.
   *
   * @throws {KitError} `KIT_ERR_INVALID_ARGUMENT` for a field that is unknown or read-only, a value of the wrong kind, or `null` for a field that is not nullable (nothing written).
   * @throws {VersionConflictError} With `ifVersion`, when the row is at another version (nothing written); `ConstraintViolationError`, `InvalidValueError` when the database refuses the write.
   * @example
   * ```ts
   * const row = await products.patch(7, { price: 35, tag: null }, { ifVersion: [3] });
   * ```
   */
  async patch(key: unknown, patch: Partial<I>, options?: WriteOptions): Promise<R | undefined> {
    const ifVersion = this.#checkCondition(options);
    checkReadOnly(this.entity, options?.scope, patch as Readonly<Record<string, unknown>>);
    const values = patchValues(this.entity, this.flavour, patch as Readonly<Record<string, unknown>>);
    if (Object.keys(values).length > 0) return this.#write(key, values, ifVersion, options);
    // Nothing to change: no write, the row as it is (and its version, for ifVersion).
    const row = await this.get(key, options);
    if (row && ifVersion !== undefined && this.#version) {
      const current = (row as Row)[this.#version.name] as number;
      if (!ifVersion.includes(current)) throw new VersionConflictError(current);
    }
    return row;
  }

  /**
   * The columns Kit maintains on every generated write of a row (`update`, `patch`), added to the
   * write's own: the version, +1, and Kit's `updatedAt` (the database clock). The one place a
   * write's extra columns are added.
   */
  #maintained(values: Record<string, unknown>): Record<string, unknown> {
    Object.assign(values, kitTimestamps(this.entity, this.flavour, 'update'));
    if (this.#version) values[this.#version.column] = sql`${sql.ref(this.#version.column)} + 1`;
    return values;
  }

  /** One row's UPDATE (`update` and `patch`): the values, Kit's maintained columns, the version check. */
  async #write(key: unknown, written: Record<string, unknown>, ifVersion: readonly number[] | undefined, options: WriteOptions | undefined): Promise<R | undefined> {
    key = keyValue(this.#pk, key);
    if (key === undefined) return undefined;
    const signal = options?.signal;
    const scope = scopeFilters(this.entity, options?.scope);
    // The scope's eq fields keep their value: a write cannot move a row out of the caller's scope.
    const values = this.#maintained(Object.assign(written, scopeValues(this.entity, this.flavour, scope, false)));
    return this.run(async (db) => {
      if (ifVersion?.length === 0) return this.#conflict(db, key, signal, scope);
      const query = db
        .updateTable(this.#table)
        .set(values)
        .where((eb) => this.#target(eb, key, ifVersion, scope))
        .returning(this.#selection);
      const [row] = await this.execute(query.compile(), '', signal);
      if (row) return this.#decode(row);
      return ifVersion === undefined ? undefined : this.#conflict(db, key, signal, scope);
    }, signal);
  }

  /**
   * Soft-deletes (when the entity opts in; the version is incremented) or deletes the row; false
   * when there was none. `ifVersion` as for {@link EntityRepository.update}.
   */
  async delete(key: unknown, options?: WriteOptions): Promise<boolean> {
    const ifVersion = this.#checkCondition(options);
    key = keyValue(this.#pk, key);
    if (key === undefined) return false;
    const soft = this.entity.softDelete === undefined ? undefined : this.entity.field(this.entity.softDelete);
    const signal = options?.signal;
    const scope = scopeFilters(this.entity, options?.scope);
    return this.run(async (db) => {
      if (ifVersion?.length === 0) return (await this.#conflict(db, key, signal, scope)) ?? false;
      // RETURNING the key counts the rows touched, on every engine, through the one statement path.
      const touched = sql.ref(this.#pk.column);
      let query;
      if (soft) {
        const values: Record<string, unknown> = { [soft.column]: encodeValue(this.flavour, soft, true), ...kitTimestamps(this.entity, this.flavour, 'update') };
        if (this.#version) values[this.#version.column] = sql`${sql.ref(this.#version.column)} + 1`;
        query = db
          .updateTable(this.#table)
          .set(values)
          .where((eb) => this.#target(eb, key, ifVersion, scope))
          .returning(touched.as('key'));
      } else {
        query = db
          .deleteFrom(this.#table)
          .where((eb) => this.#target(eb, key, ifVersion, scope))
          .returning(touched.as('key'));
      }
      if ((await this.execute(query.compile(), '', signal)).length > 0) return true;
      return ifVersion === undefined ? false : ((await this.#conflict(db, key, signal, scope)) ?? false);
    }, signal);
  }
}
