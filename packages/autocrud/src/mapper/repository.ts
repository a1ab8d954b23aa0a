import type { Entity } from '../entity.js';
import { patchValues, writeValues } from './sql/arguments.js';
import type { CallOptions, ReadOptions, WriteOptions } from './reads/call-options.js';
import type { ChangeSink } from './seam/changes.js';
import type { SqlDialect } from './sql/dialect.js';
import { VersionConflictError } from './errors.js';
import type { ListOptions, SortKey } from './sql/query.js';
import type { Referrer } from './writes/references.js';
import { RowReads } from './reads/row-reads.js';
import { RowWrites } from './writes/row-writes.js';
import { checkReadOnly, withoutReadOnly, type Scope } from './sql/scope.js';
import { Table, type Executor, type Row, type Runner } from './seam/table.js';
import type { EntityHooks } from './seam/hooks.js';
import { createMany } from './writes/bulk-create.js';
import { createTree, type ChildRows } from './writes/nested-create.js';
import { patchMany } from './writes/bulk-patch.js';
import { upsertKey, upsertMany, type UpsertedRow, type UpsertResolution } from './writes/upsert.js';
import { registerTable, tableOf } from './seam/table-of.js';

export type { Executor, Row, Runner } from './seam/table.js';
export type { UpsertedRow, UpsertOutcome, UpsertResolution } from './writes/upsert.js';
export type { CallOptions, ReadOptions, WriteOptions } from './reads/call-options.js';

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
export class EntityRepository<
  R extends object = Row,
  I extends object = Readonly<Record<string, unknown>>,
> {
  readonly #t: Table;
  // list, get, all and related rows (row-reads.ts).
  readonly #reads: RowReads<R>;
  // create, update, patch and delete of one row (row-writes.ts).
  readonly #writes: RowWrites;

  constructor(
    readonly entity: Entity,
    private readonly dialect: SqlDialect,
    run: Runner,
    execute: Executor,
    referrers: () => readonly Referrer[] = () => [],
  ) {
    this.#t = new Table(entity, dialect, run, execute);
    this.#reads = new RowReads<R>(this.#t);
    this.#writes = new RowWrites(this.#t, referrers);
    registerTable(this, this.#t);
  }

  /**
   * Registers a sink every write of this entity calls inside its transaction, after the rows are
   * written and before COMMIT (see `ChangeSink`); sinks are called in the order they were added.
   * An entity with a sink writes in a transaction and reads the rows it replaces there (locked).
   *
   * @example
   * ```ts
   * products.addChangeSink(async (tx, changes, context) => { console.log(changes.length, context.correlationId); });
   * ```
   */
  addChangeSink(sink: ChangeSink): void {
    this.#t.hooks.add({ write: sink });
  }

  /**
   * True when a hook of the seam runs in the entity's writes (one that checks them first, or takes
   * their changes): they run in a transaction, and the routes hand them the request's context.
   */
  get recordsChanges(): boolean {
    return this.#t.hooks.transactional;
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
  async related(
    field: Extract<keyof R, string>,
    keys: readonly unknown[],
    options: CallOptions & { readonly perKey?: number } = {},
  ): Promise<R[]> {
    return this.#reads.related(field, keys, options);
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
  order(
    sort: readonly SortKey<Extract<keyof R, string>>[],
  ): readonly SortKey<Extract<keyof R, string>>[] {
    return this.#reads.order(sort) as readonly SortKey<Extract<keyof R, string>>[];
  }

  /**
   * One page, and the number of rows all the filters (and one alternative of `or`) match (unless `count: false`). With `after`,
   * the page starts after that keyset position (see `ListOptions.after`) and `offset` is ignored.
   * @throws {KitError} `KIT_ERR_INVALID_ARGUMENT` when `after` does not hold one value per key of the order, or `or` has more than 10 alternatives or an empty one; `DatabaseUnavailableError`, `DatabaseBusyError`, `StatementTimeoutError` when the database cannot run it.
   */
  list(
    options: ListOptions<Extract<keyof R, string>> & ReadOptions & { count: false },
  ): Promise<{ rows: R[]; total?: undefined }>;
  list(
    options: ListOptions<Extract<keyof R, string>> & ReadOptions,
  ): Promise<{ rows: R[]; total: number }>;
  async list(
    options: ListOptions<Extract<keyof R, string>> & ReadOptions,
  ): Promise<{ rows: R[]; total?: number }> {
    return this.#reads.list(options);
  }

  /** Every row that is not soft-deleted, by primary key. */
  async all(options?: CallOptions): Promise<R[]> {
    return this.#reads.all(options);
  }

  /** The row with this primary key, unless absent or soft-deleted; with `include`, its related rows set on it. */
  async get(key: unknown, options?: ReadOptions): Promise<R | undefined> {
    return this.#reads.get(key, options);
  }

  /**
   * Inserts the writable fields of `input` (others are ignored) and returns the stored row (its
   * version 1). A field left out gets the column's default; an explicit `null` is NULL.
   */
  async create(input: I, options?: CallOptions): Promise<R> {
    return (await this.#writes.create(input as Readonly<Record<string, unknown>>, options)) as R;
  }

  /**
   * Inserts every row of `inputs` in one transaction, in order, and returns the stored rows in that
   * order; or, when one row cannot be stored, writes nothing and throws `BatchRowError` naming it.
   * Each row as for {@link EntityRepository.create}. The rows are checked before the transaction
   * starts; a `signal` that aborts between two rows rolls the transaction back.
   *
   * @throws {BatchRowError} A row is invalid (cause: `KitError` `KIT_ERR_INVALID_ARGUMENT`) or the database refuses it (`ConstraintViolationError`, `InvalidValueError`); nothing written.
   * @example
   * ```ts
   * const [kettle, pot] = await products.createMany([{ name: 'Kettle', price: 40 }, { name: 'Pot', price: 12 }]);
   * ```
   */
  async createMany(inputs: readonly I[], options?: CallOptions): Promise<R[]> {
    return (await createMany(
      this.#t,
      inputs as readonly Readonly<Record<string, unknown>>[],
      options?.signal,
      options?.scope,
      options?.changeContext,
    )) as R[];
  }

  /**
   * Creates a row and, in the same transaction, the rows of its one-to-many relations: `children`
   * maps a relation's name (`lines`, the `many` of the child's reference) to its repository, the
   * child's referencing field, and the rows to insert (without that field: it is the new row's
   * key). Returns the stored row with each relation's stored rows, in the order sent; or writes
   * nothing and throws: the parent's own error as `create` throws it, a child's as
   * `BatchRowError` with `relation` and `index` (`lines[3]`).
   *
   * @example
   * ```ts
   * const order = await orders.createTree({ customerId: 4 }, { lines: { repository: lines, field: 'orderId', rows: [{ sku: 'A', quantity: 2 }] } });
   * ```
   */
  async createTree(
    input: I,
    children: Readonly<
      Record<
        string,
        {
          readonly repository: EntityRepository<Row, Readonly<Record<string, unknown>>>;
          readonly field: string;
          readonly rows: readonly Readonly<Record<string, unknown>>[];
          readonly scope?: Scope;
        }
      >
    >,
    options?: CallOptions,
  ): Promise<R & Row> {
    const resolved: Record<string, ChildRows> = {};
    for (const [name, { repository, field, rows, scope }] of Object.entries(children))
      resolved[name] = { table: tableOf(repository), field, rows, ...(scope ? { scope } : {}) };
    return (await createTree(
      this.#t,
      input as Readonly<Record<string, unknown>>,
      resolved,
      options?.signal,
      options?.scope,
      options?.changeContext,
    )) as R & Row;
  }

  /**
   * Applies a JSON Merge Patch to each row of `changes` in one transaction, in order, each with its
   * own version condition, and returns the stored rows in that order; or, when one row cannot be
   * changed, writes nothing and throws `BatchRowError` naming it. Each row as for
   * {@link EntityRepository.patch} (an empty patch writes nothing, its `ifVersion` still checked).
   *
   * @throws {BatchRowError} A row is missing (`missing`), at another version (cause: `VersionConflictError`), invalid (`KitError` `KIT_ERR_INVALID_ARGUMENT`) or refused by the database; nothing written.
   * @example
   * ```ts
   * await products.patchMany([{ key: 7, patch: { price: 35 }, ifVersion: [3] }, { key: 9, patch: { tag: null } }]);
   * ```
   */
  async patchMany(
    changes: readonly {
      readonly key: unknown;
      readonly patch: Partial<I>;
      readonly ifVersion?: readonly number[];
    }[],
    options?: CallOptions,
  ): Promise<R[]> {
    return (await patchMany(
      this.#t,
      changes as readonly {
        key: unknown;
        patch: Readonly<Record<string, unknown>>;
        ifVersion?: readonly number[];
      }[],
      options?.signal,
      options?.scope,
      options?.changeContext,
    )) as R[];
  }

  /**
   * Inserts each row of `inputs`, or, where a row with the same values of the entity's unique key
   * (its first `unique` key, or `options.key`) exists, writes the fields the row brings over it
   * (`resolution: 'merge'`, the default) or leaves it as it is (`'ignore'`); one transaction, in
   * order. Each stored row comes with what happened to it: `created`, `updated` or `unchanged`. A
   * merge increments the version and sets Kit's `updatedAt`. A soft-deleted row holding the key is
   * revived as a create would write it (`created`; its version goes on from the deleted row's).
   * Each row must carry every field of the key.
   *
   * @throws {KitError} `KIT_ERR_INVALID_ARGUMENT` when the entity declares no unique key, or `options.key` is not one of them.
   * @throws {BatchRowError} A row lacks a key field or is invalid (cause: `KitError` `KIT_ERR_INVALID_ARGUMENT`), or the database refuses it; nothing written.
   * @example
   * ```ts
   * const [kettle] = await products.upsertMany([{ sku: 'K-1', name: 'Kettle', price: 40 }]);
   * console.log(kettle.outcome);   // 'created', then 'updated' on a second call
   * ```
   */
  async upsertMany(
    inputs: readonly I[],
    options?: CallOptions & {
      readonly resolution?: UpsertResolution;
      readonly key?: readonly string[];
    },
  ): Promise<UpsertedRow[]> {
    const key = upsertKey(this.entity, options?.key);
    return upsertMany(
      this.#t,
      key,
      inputs as readonly Readonly<Record<string, unknown>>[],
      options?.resolution ?? 'merge',
      options?.signal,
      options?.scope,
      options?.changeContext,
    );
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
    const ifVersion = this.#t.checkCondition(options);
    const written = input as Readonly<Record<string, unknown>>;
    checkReadOnly(this.entity, options?.scope, written);
    // A replace leaves the scope's read-only fields as they are.
    return (await this.#writes.write(
      'update',
      key,
      withoutReadOnly(
        this.entity,
        options?.scope,
        writeValues(this.entity, this.dialect, written, true),
      ),
      written,
      ifVersion,
      options,
    )) as R | undefined;
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
    const ifVersion = this.#t.checkCondition(options);
    checkReadOnly(this.entity, options?.scope, patch as Readonly<Record<string, unknown>>);
    const values = patchValues(
      this.entity,
      this.dialect,
      patch as Readonly<Record<string, unknown>>,
    );
    if (Object.keys(values).length > 0)
      return (await this.#writes.write(
        'patch',
        key,
        values,
        patch as Readonly<Record<string, unknown>>,
        ifVersion,
        options,
      )) as R | undefined;
    // Nothing to change: no write, the row as it is (and its version, for ifVersion).
    const row = await this.get(key, options);
    if (row && ifVersion !== undefined && this.#t.version) {
      const current = (row as Row)[this.#t.version.name] as number;
      if (!ifVersion.includes(current)) throw new VersionConflictError(current);
    }
    return row;
  }

  /**
   * Soft-deletes (when the entity opts in; the version is incremented) or deletes the row; false
   * when there was none. `ifVersion` as for {@link EntityRepository.update}.
   */
  async delete(key: unknown, options?: WriteOptions): Promise<boolean> {
    return this.#writes.delete(key, options);
  }
}

/**
 * The seam's hooks of a repository's entity (seam/hooks.ts), for the layers the database attaches
 * at start-up; not a host's API.
 *
 * @example
 * ```ts
 * hooksOf(repository).add({ write: historySink(entity, dialect) });
 * ```
 */
export function hooksOf(
  repository: EntityRepository<Row, Readonly<Record<string, unknown>>>,
): EntityHooks {
  return tableOf(repository).hooks;
}
