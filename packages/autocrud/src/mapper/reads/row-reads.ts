// An entity's reads: a page (with its count and keyset position), every row, one row by key, and
// the rows related to a set of keys. Each is a statement compiled once per shape and bound per
// call; related rows are embedded in the statement where the dialect embeds them (the dialect's `embedding`), else
// read by a statement per relation (includes.ts). The repository (repository.ts) is their surface.
import { KitError } from '@kit/core';
import { sql } from 'kysely';
import type { Entity, EntityField } from '../../entity.js';
import { keyValue, listArguments } from '../sql/arguments.js';
import {
  anyOf,
  condition,
  keyset,
  notDeleted,
  orderOf,
  slotList,
  type ListOptions,
  type SortKey,
} from '../sql/query.js';
import { scopeConditions, scopeFilters, slotScope } from '../sql/scope.js';
import { Slot, statement, StatementCache, type Statement } from '../sql/statements.js';
import type { Row, Table } from '../seam/table.js';
import type { CallOptions, ReadOptions } from './call-options.js';
import type { IncludeEmbedding } from '../sql/embedding.js';
import { asNodes, includeAll, type IncludeNode } from './includes.js';
import { keySet, relatedQuery } from './related.js';

/**
 * The reads of one entity's table, with the statements they compiled.
 *
 * @example
 * ```ts
 * const reads = new RowReads<Product>(table);
 * const page = await reads.list({ filters: [], sort: [], offset: 0, limit: 20 });
 * ```
 */
export class RowReads<R extends object> {
  readonly #entity: Entity;
  // The read by key, compiled once (see statements.ts).
  #byKeyStatement: Statement | undefined;
  // The reads by key under a scope or with includes inside (the dialect's `embedding`), by shape.
  readonly #embedded = new StatementCache();
  // The dialect's embedding of related rows, or undefined: a statement per relation (includes.ts).
  readonly #embedding: IncludeEmbedding | undefined;
  // The lists, by shape (see slotList): pages and counts.
  readonly #lists = new StatementCache();
  // The orders order() made: list() takes one as it is, so a caller that needs the order first
  // (the list route, for its cursors) and the query share one.
  readonly #orders = new WeakSet<readonly SortKey[]>();
  // The reads of related rows, by field and bound (see related.ts).
  readonly #related = new StatementCache();

  constructor(private readonly t: Table) {
    this.#entity = t.entity;
    this.#embedding = t.dialect.embedding;
  }

  /** The dialect's embedding, where a statement embeds its includes (`embed` set only then). */
  get #embeds(): IncludeEmbedding {
    return this.#embedding as IncludeEmbedding;
  }

  /** See `EntityRepository.related`. */
  async related(
    field: string,
    keys: readonly unknown[],
    options: CallOptions & { readonly perKey?: number },
  ): Promise<R[]> {
    const entity = this.#entity;
    const target = entity.field(field);
    if (!target)
      throw new KitError(
        'KIT_ERR_INVALID_ARGUMENT',
        `related: '${field}' is not a field of ${entity.name}.`,
      );
    if (keys.length === 0) return [];
    const t = this.t;
    const { perKey, signal } = options;
    // The caller's scope on the related entity, in the statement, its values in slots.
    const scoped = slotScope(t.dialect, entity, scopeFilters(entity, options.scope), 's');
    const values: Record<string, unknown> = {
      ...scoped.values,
      keys: keySet(t.dialect, target, keys),
    };
    if (perKey !== undefined) values.perKey = perKey;
    return t.hooks.read(async (db) => {
      const read = this.#related.get(
        `${field}\u0000${perKey === undefined ? '' : 'n'}\u0000${scoped.shape}`,
        () =>
          relatedQuery(
            db,
            t.dialect,
            entity,
            t.selection,
            target,
            perKey !== undefined,
            scoped.filters,
          ),
      );
      return (await t.execute(read.bind(values), read.name, signal)).map((r) => t.decode(r) as R);
    }, signal);
  }

  /** See `EntityRepository.order`. */
  order(sort: readonly SortKey[]): readonly SortKey[] {
    if (this.#orders.has(sort)) return sort;
    const order = Object.freeze([...orderOf(this.#entity, sort)]);
    this.#orders.add(order);
    return order;
  }

  /** See `EntityRepository.list`. */
  async list(options: ListOptions & ReadOptions): Promise<{ rows: R[]; total?: number }> {
    // Every plan is an IncludeNode: the runtime (routes/includes.ts) makes them, opaque to a host.
    const include = options.include?.length ? asNodes(options.include) : undefined;
    const embeds = this.#embedding !== undefined;
    // The scope's conditions join the caller's: the page, the count and the keyset alike.
    const scoped =
      options.scope && options.scope.where.length > 0
        ? { ...options, filters: [...options.filters, ...options.scope.where] }
        : options;
    const found = await this.#list(scoped, include && embeds ? include : undefined);
    if (include && !embeds)
      await includeAll(found.rows as Row[], include, this.#entity.primaryKey, options.signal);
    return found;
  }

  async #list(
    options: ListOptions,
    embed: readonly IncludeNode[] | undefined,
  ): Promise<{ rows: R[]; total?: number }> {
    const t = this.t;
    const order = this.order(options.sort);
    const checked = listArguments(this.#entity, options, order);
    const { shape, filters, or, after, values } = slotList(
      this.t.dialect,
      this.#entity,
      checked.filters,
      order,
      checked.after,
      checked.or,
    );
    const skip = after === undefined && options.offset > 0;
    values.limit = options.limit;
    if (skip) values.offset = options.offset;
    const signal = options.signal;
    return t.hooks.read(async (db) => {
      const filtered = () =>
        db
          .selectFrom(t.name)
          .where((eb) =>
            t.where(eb, [
              notDeleted(eb, this.t.dialect, this.#entity),
              ...filters.map((f) =>
                condition(eb, this.t.dialect, this.#entity.field(f.field) as EntityField, f),
              ),
              anyOf(eb, this.t.dialect, this.#entity, or),
            ]),
          );
      const page = this.#lists.get(
        `${shape}\u0002${skip ? 'offset' : ''}\u0002${embed ? this.#embeds.shape(embed) : ''}`,
        () => {
          let query = filtered().select(t.selection);
          if (embed) query = query.select(this.#embeds.selection(this.#entity, embed));
          if (after !== undefined)
            query = query.where((eb) => keyset(eb, this.t.dialect, this.#entity, order, after));
          for (const key of order) {
            // Qualified: ORDER BY resolves a bare name to the SELECT list's output first, and a field
            // read through an expression (a timestamp as text) would then sort as text.
            const column = sql.ref(
              `${t.name}.${(this.#entity.field(key.field) as EntityField).column}`,
            );
            // NULLs sort last ascending and first descending on every dialect, as PostgreSQL does by default.
            query = query.orderBy(
              key.descending ? sql`${column} desc nulls first` : sql`${column} asc nulls last`,
            );
          }
          // Slots stand for the numbers until the statement is bound.
          query = query.limit(new Slot('limit') as unknown as number);
          return skip ? query.offset(new Slot('offset') as unknown as number) : query;
        },
      );
      const rows = t.execute(
        page.bind(embed ? this.#embeds.values(embed, { ...values }) : values),
        page.name,
        signal,
      );
      const decode = embed
        ? (r: Row) => this.#embeds.decode(t.decode(r), r, embed) as R
        : (r: Row) => t.decode(r) as R;
      if (options.count === false) return { rows: (await rows).map(decode) };
      const count = this.#lists.get(`${shape}\u0002count`, () =>
        filtered().select(sql<number>`count(*)`.as('total')),
      );
      const [found, [counted]] = await Promise.all([
        rows,
        t.execute(count.bind(values), count.name, signal),
      ]);
      return { rows: found.map(decode), total: Number(counted?.total) };
    }, signal);
  }

  // Every statement runs through `execute`, which carries the call's signal to the connection.

  /** See `EntityRepository.all`. */
  async all(options?: CallOptions): Promise<R[]> {
    const t = this.t;
    const signal = options?.signal;
    const scope = scopeFilters(this.#entity, options?.scope);
    return t.hooks.read(async (db) => {
      const query = db
        .selectFrom(t.name)
        .select(t.selection)
        .where((eb) =>
          t.where(eb, [
            notDeleted(eb, this.t.dialect, this.#entity),
            ...scopeConditions(eb, this.t.dialect, this.#entity, scope),
          ]),
        )
        .orderBy(sql.ref(`${t.name}.${t.pk.column}`));
      const rows = await t.execute(query.compile(), '', signal);
      return rows.map((r) => t.decode(r) as R);
    }, signal);
  }

  /** See `EntityRepository.get`. */
  async get(key: unknown, options?: ReadOptions): Promise<R | undefined> {
    const t = this.t;
    key = keyValue(t.pk, key);
    if (key === undefined) return undefined;
    const signal = options?.signal;
    const include = options?.include?.length ? asNodes(options.include) : undefined;
    const embed = include && this.#embedding ? include : undefined;
    // Under a scope, one statement per scope shape with the scope's values in slots, as a list's filters.
    const scoped = slotScope(
      this.t.dialect,
      this.#entity,
      scopeFilters(this.#entity, options?.scope),
      's',
    );
    const row = await t.hooks.read(async (db) => {
      const byKey = () =>
        db
          .selectFrom(t.name)
          .select(t.selection)
          .where((eb) => t.byKey(eb, new Slot('key'), scoped.filters));
      const read =
        embed || scoped.filters.length > 0
          ? this.#embedded.get(
              `${embed ? this.#embeds.shape(embed) : ''}\u0002${scoped.shape}`,
              () => (embed ? byKey().select(this.#embeds.selection(this.#entity, embed)) : byKey()),
            )
          : (this.#byKeyStatement ??= statement(byKey()));
      const values = { ...scoped.values, key };
      const [raw] = await t.execute(
        read.bind(embed ? this.#embeds.values(embed, values) : values),
        read.name,
        signal,
      );
      return raw
        ? embed
          ? this.#embeds.decode(t.decode(raw), raw, embed)
          : t.decode(raw)
        : undefined;
    }, signal);
    if (row && include && !embed) await includeAll([row], include, this.#entity.primaryKey, signal);
    return row as R | undefined;
  }
}
