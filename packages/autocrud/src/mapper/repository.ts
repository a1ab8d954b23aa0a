import { randomUUID } from 'node:crypto';
import { KitError } from '@kit/core';
import { sql, type Expression, type SqlBool } from 'kysely';
import type { Entity, EntityField } from '../entity.js';
import { keyValue, listArguments, patchValues, writeValues } from './arguments.js';
import { columnCodec, encodeValue, type ColumnCodec } from './columns.js';
import type { Db, SqlFlavour } from './engine.js';
import { anyOf, condition, keyset, notDeleted, orderOf, slotList, type Eb, type ListOptions, type SortKey } from './query.js';
import { ConstraintViolationError, UnrepresentableValueError, VersionConflictError } from './errors.js';
import { checkMissingReferences, checkReferrers, type Referrer } from './references.js';
import { Slot, statement, StatementCache, type Executor, type Statement } from './statements.js';
import { kitTimestamps } from './stamps.js';
import { decodeRow } from './decode.js';
import { keySet, relatedQuery } from './related.js';
import { decodeEmbedded, embedSelection, embedShape, embedValues } from './embed.js';
import { includeAll, type IncludeNode } from './includes.js';

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

/**
 * Options of a read that may answer related rows with each row.
 *
 * @example
 * ```ts
 * const order = await orders.get(1, { include: [{ name: 'customer', kind: 'one', field: 'customerId', source: customers, children: [] }] });
 * ```
 */
export interface ReadOptions extends CallOptions {
  /**
   * The relations to set on each row (see `IncludeNode`): inside the row's own statement on
   * PostgreSQL and PGlite, one more statement per relation on SQLite.
   */
  readonly include?: readonly IncludeNode[];
}

/** Runs a query against the database with availability and error mapping (see `Database.run`). */
export type Runner = <T>(query: (db: Db) => Promise<T>, signal?: AbortSignal) => Promise<T>;

export type { Executor } from './statements.js';

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
  readonly #inserts = new StatementCache();
  // The lists, by shape (see slotList): pages and counts.
  readonly #lists = new StatementCache();
  // The orders order() made: list() takes one as it is, so a caller that needs the order first
  // (the list route, for its cursors) and the query share one.
  readonly #orders = new WeakSet<readonly SortKey[]>();
  // The reads of related rows, by field and bound (see related.ts).
  readonly #related = new StatementCache();
  // The reads by key with includes inside (PostgreSQL; see embed.ts), by include tree.
  readonly #embedded = new StatementCache();

  constructor(
    readonly entity: Entity,
    private readonly flavour: SqlFlavour,
    private readonly run: Runner,
    private readonly execute: Executor,
    private readonly referrers: () => readonly Referrer[] = () => [],
  ) {
    this.#table = entity.table;
    this.#pk = entity.field(entity.primaryKey) as EntityField;
    this.#codecs = entity.fields.map((f) => columnCodec(flavour, f));
    this.#selection = entity.fields.map((f, i) => (this.#codecs[i] as ColumnCodec).read(f.column).as(f.name));
    if (flavour === 'sqlite') this.run = (query) => run((db) => query(db).catch((err: unknown) => Promise.reject(unreadable(entity, err))));
    this.#version = entity.version === undefined ? undefined : entity.field(entity.version);
  }

  /**
   * After the database refused a write for a foreign key: the field and key at fault, as
   * `MissingReferenceError`; anything else as it was.
   */
  #explainWrite(input: Readonly<Record<string, unknown>>, signal: AbortSignal | undefined): (err: unknown) => Promise<never> {
    return async (err) => {
      if (err instanceof ConstraintViolationError && err.kind === 'foreignKey' && this.entity.references.length > 0) {
        await this.run((db) => checkMissingReferences(db, this.flavour, this.entity, input, false, this.execute, signal), signal);
      }
      throw err;
    };
  }

  /**
   * A row as the API shows it: each value in Kit's form (see columns.ts). NULL is `null` on a
   * nullable field and absent on an optional one. A value with no exact answer throws
   * `UnrepresentableValueError` naming the field and the row: never a rounded or shifted value.
   */
  #decode(row: Row): R {
    return decodeRow(this.entity, this.#codecs, row) as R;
  }

  #where(eb: Eb, conditions: Array<Expression<SqlBool> | undefined>): Expression<SqlBool> {
    const present = conditions.filter((c): c is Expression<SqlBool> => c !== undefined);
    return eb.and(present);
  }

  #byKey(eb: Eb, key: unknown): Expression<SqlBool> {
    return this.#where(eb, [eb(sql.ref(this.#pk.column), '=', key), notDeleted(eb, this.flavour, this.entity)]);
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
  list(options: ListOptions<Extract<keyof R, string>> & ReadOptions & { count: false }): Promise<{ rows: R[]; total?: undefined }>;
  list(options: ListOptions<Extract<keyof R, string>> & ReadOptions): Promise<{ rows: R[]; total: number }>;
  async list(options: ListOptions<Extract<keyof R, string>> & ReadOptions): Promise<{ rows: R[]; total?: number }> {
    const include = options.include?.length ? options.include : undefined;
    const found = await this.#list(options, include && this.flavour === 'postgres' ? include : undefined);
    if (include && this.flavour !== 'postgres') await includeAll(found.rows as Row[], include, this.entity.primaryKey, options.signal);
    return found;
  }

  async #list(options: ListOptions<Extract<keyof R, string>>, embed: readonly IncludeNode[] | undefined): Promise<{ rows: R[]; total?: number }> {
    const order = this.order(options.sort);
    const checked = listArguments(this.entity, options, order);
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
      const page = this.#lists.get(`${shape}\u0002${skip ? 'offset' : ''}\u0002${embed ? embedShape(embed) : ''}`, () => {
        let query = filtered().select(this.#selection);
        if (embed) query = query.select(embedSelection(this.entity, embed));
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
      const rows = this.execute(page.bind(embed ? embedValues(embed, { ...values }) : values), page.name, signal);
      const decode = embed ? (r: Row) => decodeEmbedded(this.#decode(r) as Row, r, embed) as R : (r: Row) => this.#decode(r);
      if (options.count === false) return { rows: (await rows).map(decode) };
      const count = this.#lists.get(`${shape}\u0002count`, () => filtered().select(sql<number>`count(*)`.as('total')));
      const [found, [counted]] = await Promise.all([rows, this.execute(count.bind(values), count.name, signal)]);
      return { rows: found.map(decode), total: Number(counted?.total) };
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
        .orderBy(sql.ref(`${this.#table}.${this.#pk.column}`));
      const rows = await this.execute(query.compile(), '', signal);
      return rows.map((r) => this.#decode(r));
    }, signal);
  }

  /** The row with this primary key, unless absent or soft-deleted; with `include`, its related rows set on it. */
  async get(key: unknown, options?: ReadOptions): Promise<R | undefined> {
    key = keyValue(this.#pk, key);
    if (key === undefined) return undefined;
    const signal = options?.signal;
    const include = options?.include?.length ? options.include : undefined;
    const embed = include && this.flavour === 'postgres' ? include : undefined;
    const row = await this.run(async (db) => {
      const byKey = () => db.selectFrom(this.#table).select(this.#selection).where((eb) => this.#byKey(eb, new Slot('key')));
      const read = embed ? this.#embedded.get(embedShape(embed), () => byKey().select(embedSelection(this.entity, embed))) : (this.#byKeyStatement ??= statement(byKey()));
      const [raw] = await this.execute(read.bind(embed ? embedValues(embed, { key }) : { key }), read.name, signal);
      return raw ? (embed ? decodeEmbedded(this.#decode(raw) as Row, raw, embed) : this.#decode(raw)) : undefined;
    }, signal);
    if (row && include && !embed) await includeAll([row as Row], include, this.entity.primaryKey, signal);
    return row as R | undefined;
  }

  /**
   * The rows (not soft-deleted) whose `field` holds one of `keys`, ordered by that field, then by
   * primary key; with `perKey`, at most that many rows per key, the first by primary key. One
   * statement whatever the number of keys (see related.ts): what includes read.
   *
   * @example
   * ```ts
   * const lines = await orderLines.related('orderId', [1, 2, 3], { perKey: 101 });
   * ```
   */
  async related(field: Extract<keyof R, string>, keys: readonly unknown[], options: CallOptions & { readonly perKey?: number } = {}): Promise<R[]> {
    const target = this.entity.field(field);
    if (!target) throw new KitError('KIT_ERR_INVALID_ARGUMENT', `related: '${field}' is not a field of ${this.entity.name}.`);
    if (keys.length === 0) return [];
    const { perKey, signal } = options;
    const values: Record<string, unknown> = { keys: keySet(this.flavour, target, keys) };
    if (perKey !== undefined) values.perKey = perKey;
    return this.run(async (db) => {
      const read = this.#related.get(`${field}\u0000${perKey === undefined ? '' : 'n'}`, () => relatedQuery(db, this.flavour, this.entity, this.#selection, target, perKey !== undefined));
      return (await this.execute(read.bind(values), read.name, signal)).map((r) => this.#decode(r));
    }, signal);
  }

  /**
   * Inserts the writable fields of `input` (others are ignored) and returns the stored row (its
   * version 1). A field left out gets the column's default; an explicit `null` is NULL.
   */
  async create(input: I, options?: CallOptions): Promise<R> {
    const values = writeValues(this.entity, this.flavour, input as Readonly<Record<string, unknown>>, false);
    if (this.#pk.type === 'string') values[this.#pk.column] = randomUUID();
    if (this.#version) values[this.#version.column] = 1;
    const stamps = kitTimestamps(this.entity, this.flavour, 'create');
    const columns = [...Object.keys(values), ...Object.keys(stamps)];
    const signal = options?.signal;
    const written = input as Readonly<Record<string, unknown>>;
    return this.run(async (db) => {
      // A soft-deleted parent is gone for a new reference, which the database's foreign key cannot tell.
      if (this.entity.references.length > 0) await checkMissingReferences(db, this.flavour, this.entity, written, true, this.execute, signal);
      const insert = this.#inserts.get(columns.join('\u0000'), () => {
        const slots = Object.fromEntries(columns.map((c) => [c, stamps[c] ?? new Slot(c)]));
        return (columns.length === 0 ? db.insertInto(this.#table).defaultValues() : db.insertInto(this.#table).values(slots)).returning(this.#selection);
      });
      const [row] = await this.execute(insert.bind(values), insert.name, signal);
      if (!row) throw new Error(`INSERT INTO ${this.#table} ... RETURNING answered no row`);
      return this.#decode(row);
    }, signal).catch(this.#explainWrite(written, signal));
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
   * @throws {VersionConflictError} With `ifVersion`, when the row is at another version (nothing written); `ConstraintViolationError`, `InvalidValueError` when the database refuses the write.
   */
  async update(key: unknown, input: I, options?: WriteOptions): Promise<R | undefined> {
    const ifVersion = this.#checkCondition(options);
    const written = input as Readonly<Record<string, unknown>>;
    return this.#write(key, writeValues(this.entity, this.flavour, written, true), written, ifVersion, options?.signal);
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
    const values = patchValues(this.entity, this.flavour, patch as Readonly<Record<string, unknown>>);
    if (Object.keys(values).length > 0) return this.#write(key, values, patch as Readonly<Record<string, unknown>>, ifVersion, options?.signal);
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
  async #write(key: unknown, written: Record<string, unknown>, input: Readonly<Record<string, unknown>>, ifVersion: readonly number[] | undefined, signal: AbortSignal | undefined): Promise<R | undefined> {
    key = keyValue(this.#pk, key);
    if (key === undefined) return undefined;
    const values = this.#maintained(written);
    return this.run(async (db) => {
      if (ifVersion?.length === 0) return this.#conflict(db, key, signal);
      if (this.entity.references.length > 0) await checkMissingReferences(db, this.flavour, this.entity, input, true, this.execute, signal);
      const query = db
        .updateTable(this.#table)
        .set(values)
        .where((eb) => this.#target(eb, key, ifVersion))
        .returning(this.#selection);
      const [row] = await this.execute(query.compile(), '', signal);
      if (row) return this.#decode(row);
      return ifVersion === undefined ? undefined : this.#conflict(db, key, signal);
    }, signal).catch(this.#explainWrite(input, signal));
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
    return this.run(async (db) => {
      if (ifVersion?.length === 0) return (await this.#conflict(db, key, signal)) ?? false;
      // RETURNING the key counts the rows touched, on every engine, through the one statement path.
      const touched = sql.ref(this.#pk.column);
      let query;
      // A soft delete is an UPDATE, which the database's ON DELETE rules never see: restrict is checked here.
      const referrers = this.referrers();
      if (soft && referrers.length > 0) await checkReferrers(db, this.flavour, this.entity, key, referrers, true, this.execute, signal);
      if (soft) {
        const values: Record<string, unknown> = { [soft.column]: encodeValue(this.flavour, soft, true), ...kitTimestamps(this.entity, this.flavour, 'update') };
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
    }, signal).catch(async (err: unknown) => {
      // The database refused the delete (restrict): name a row that still refers to it.
      const referrers = this.referrers();
      if (err instanceof ConstraintViolationError && err.kind === 'foreignKey' && referrers.length > 0) {
        await this.run((db) => checkReferrers(db, this.flavour, this.entity, key, referrers, false, this.execute, signal), signal);
      }
      throw err;
    });
  }
}
