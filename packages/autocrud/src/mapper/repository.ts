import { randomUUID } from 'node:crypto';
import { sql, type Expression, type SqlBool } from 'kysely';
import type { Entity, EntityField } from '../entity.js';
import type { Db, SqlFlavour } from './engine.js';
import { encodeValue } from './flavour.js';
import { condition, notDeleted, type Eb, type ListOptions } from './query.js';

/** A row as the API shows it: field names, JSON values. */
export type Row = Record<string, unknown>;

/** Runs a query against the database with availability and error mapping (see `Database.run`). */
export type Runner = <T>(query: (db: Db) => Promise<T>) => Promise<T>;

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

  constructor(
    readonly entity: Entity,
    private readonly flavour: SqlFlavour,
    private readonly run: Runner,
  ) {
    this.#table = entity.table;
    this.#pk = entity.field(entity.primaryKey) as EntityField;
    this.#selection = entity.fields.map((f) => sql.ref(f.column).as(f.name));
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

  /** One page and the number of rows all the filters match. */
  async list(options: ListOptions): Promise<{ rows: R[]; total: number }> {
    const filtered = (db: Db) =>
      db.selectFrom(this.#table).where((eb) =>
        this.#where(eb, [
          notDeleted(eb, this.flavour, this.entity),
          ...options.filters.map((f) => condition(eb, this.flavour, this.entity.field(f.field) as EntityField, f)),
        ]),
      );
    const order = [...options.sort];
    if (!order.some((s) => s.field === this.entity.primaryKey)) order.push({ field: this.entity.primaryKey, descending: false });
    return this.run(async (db) => {
      let page = filtered(db).select(this.#selection);
      for (const key of order) {
        const column = sql.ref((this.entity.field(key.field) as EntityField).column);
        // NULLs sort last ascending and first descending on both flavours, as PostgreSQL does by default.
        page = page.orderBy(key.descending ? sql`${column} desc nulls first` : sql`${column} asc nulls last`);
      }
      const [rows, count] = await Promise.all([
        page.limit(options.limit).offset(options.offset).execute(),
        filtered(db).select(sql<number>`count(*)`.as('total')).executeTakeFirstOrThrow(),
      ]);
      return { rows: rows.map((r) => this.#decode(r)), total: Number(count.total) };
    });
  }

  /** Every row that is not soft-deleted, by primary key. */
  async all(): Promise<R[]> {
    return this.run(async (db) => {
      const rows = await db
        .selectFrom(this.#table)
        .select(this.#selection)
        .where((eb) => this.#where(eb, [notDeleted(eb, this.flavour, this.entity)]))
        .orderBy(sql.ref(this.#pk.column))
        .execute();
      return rows.map((r) => this.#decode(r));
    });
  }

  /** The row with this primary key, unless absent or soft-deleted. */
  async get(key: unknown): Promise<R | undefined> {
    return this.run(async (db) => {
      const row = await db
        .selectFrom(this.#table)
        .select(this.#selection)
        .where((eb) => this.#byKey(eb, key))
        .executeTakeFirst();
      return row ? this.#decode(row) : undefined;
    });
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

  /** Inserts the writable fields of `input` (others are ignored) and returns the stored row. */
  async create(input: Readonly<Record<string, unknown>>): Promise<R> {
    const values = this.#values(input, false);
    if (this.#pk.type === 'string') values[this.#pk.column] = randomUUID();
    return this.run(async (db) => {
      const insert = Object.keys(values).length === 0 ? db.insertInto(this.#table).defaultValues() : db.insertInto(this.#table).values(values);
      return this.#decode(await insert.returning(this.#selection).executeTakeFirstOrThrow());
    });
  }

  /**
   * Replaces the writable fields of the row (a field `input` leaves out becomes its schema
   * `default`, or NULL) and returns
   * the stored row, or `undefined` when there is no such row (or it is soft-deleted).
   */
  async update(key: unknown, input: Readonly<Record<string, unknown>>): Promise<R | undefined> {
    const values = this.#values(input, true);
    return this.run(async (db) => {
      const row = await db
        .updateTable(this.#table)
        .set(values)
        .where((eb) => this.#byKey(eb, key))
        .returning(this.#selection)
        .executeTakeFirst();
      return row ? this.#decode(row) : undefined;
    });
  }

  /** Soft-deletes (when the entity opts in) or deletes the row; false when there was none. */
  async delete(key: unknown): Promise<boolean> {
    const soft = this.entity.softDelete === undefined ? undefined : this.entity.field(this.entity.softDelete);
    return this.run(async (db) => {
      const result = soft
        ? await db
            .updateTable(this.#table)
            .set({ [soft.column]: encodeValue(this.flavour, true) })
            .where((eb) => this.#byKey(eb, key))
            .executeTakeFirst()
        : await db
            .deleteFrom(this.#table)
            .where((eb) => this.#byKey(eb, key))
            .executeTakeFirst();
      const affected = 'numUpdatedRows' in result ? result.numUpdatedRows : result.numDeletedRows;
      return affected > 0n;
    });
  }
}
