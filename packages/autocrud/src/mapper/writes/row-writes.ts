// A single row's create, update, patch and delete (bulk and nested writes are atomic.ts and
// upsert.ts), each on one of three paths: one statement with its changes (inline-changes.ts) on
// PostgreSQL and PGlite when every write hook has an SQL form and none waits for the commit; a
// transaction that locks the row and calls the seam's hooks (seam/hooks.ts); a plain autocommitted
// statement when no hook is registered. What the three share is row-write-paths.ts; the delete
// is row-deletes.ts.
import type { CallOptions, WriteOptions } from '../reads/call-options.js';
import { noRowAnswered } from '../errors.js';
import { keyValue } from '../sql/arguments.js';
import { kitTimestamps } from '../sql/stamps.js';
import { checkMissingReferences, checksReferences, type Referrer } from './references.js';
import { insertStatement, slotValues } from './inline-changes.js';
import type { Row, Table } from '../seam/table.js';
import { RowWritePaths } from './row-write-paths.js';
import { RowDeletes } from './row-deletes.js';
import { lockedUpdate, splitLocked } from '../seam/locked-rows.js';

/**
 * The single-row writes of one entity's table; the repository checks their input and answers their rows.
 *
 * @example
 * ```ts
 * const writes = new RowWrites(table, () => referrers);
 * const row = await writes.create({ name: 'Kettle' }, undefined);
 * ```
 */
export class RowWrites {
  readonly #t: Table;
  readonly #paths: RowWritePaths;
  readonly #deletes: RowDeletes;

  constructor(table: Table, referrers: () => readonly Referrer[]) {
    this.#t = table;
    this.#paths = new RowWritePaths(table, referrers);
    this.#deletes = new RowDeletes(this.#paths);
  }

  /** Inserts one row (see `EntityRepository.create`); the stored row, decoded. */
  async create(
    written: Readonly<Record<string, unknown>>,
    options: CallOptions | undefined,
  ): Promise<Row> {
    const t = this.#t;
    const { columns, values } = t.insertValues(written, t.writeScope(options?.scope, true));
    const signal = options?.signal;
    const forms = this.#paths.inlineForms();
    if (forms) {
      const stamps = kitTimestamps(this.#t.entity, this.#t.dialect, 'create');
      const { shape, set, bound } = slotValues(
        Object.fromEntries(columns.map((c) => [c, stamps[c] ?? values[c]])),
      );
      const row = await this.#paths.inline(
        forms,
        `create\u0002${shape}`,
        (db, binds) => insertStatement(db, t, set, forms, binds),
        bound,
        options?.changeContext,
        signal,
      );
      if (!row) throw noRowAnswered(`INSERT INTO ${t.name} ... RETURNING`);
      return t.decode(row);
    }
    // A write naming a parent Kit checks locks it in the write's transaction (references.ts).
    if (
      t.hooks.transactional ||
      checksReferences(this.#t.entity, written, options?.scope?.references)
    ) {
      return t
        .transaction(signal, options?.changeContext, async (db, trx, record, execute) => {
          if (this.#t.entity.references.length > 0)
            await checkMissingReferences(
              db,
              this.#t.dialect,
              this.#t.entity,
              written,
              true,
              execute,
              signal,
              options?.scope?.references,
            );
          const [row] = (await trx.executeQuery<Row>(t.insertStatement(db, columns).bind(values)))
            .rows;
          if (!row) throw noRowAnswered(`INSERT INTO ${t.name} ... RETURNING`);
          const stored = t.decode(row);
          await record(t, [t.change('create', undefined, stored)]);
          return stored;
        })
        .catch(this.#paths.explainWrite(written, signal));
    }
    return t
      .run(async (db) => {
        const insert = t.insertStatement(db, columns);
        const [row] = await t.execute(insert.bind(values), insert.name, signal);
        if (!row) throw noRowAnswered(`INSERT INTO ${t.name} ... RETURNING`);
        return t.decode(row);
      }, signal)
      .catch(this.#paths.explainWrite(written, signal));
  }

  /** One row's UPDATE (`update` and `patch`): the values, Kit's maintained columns, the version check. */
  async write(
    operation: 'update' | 'patch',
    key: unknown,
    written: Record<string, unknown>,
    input: Readonly<Record<string, unknown>>,
    ifVersion: readonly number[] | undefined,
    options: WriteOptions | undefined,
  ): Promise<Row | undefined> {
    const t = this.#t;
    key = keyValue(t.pk, key);
    if (key === undefined) return undefined;
    const signal = options?.signal;
    const scope = t.writeScope(options?.scope, false);
    const where = scope?.where ?? [];
    // The scope's eq fields keep their value: a write cannot move a row out of the caller's scope.
    const values = t.maintained(scope ? Object.assign(written, scope.set) : written);
    const forms = ifVersion?.length === 0 ? undefined : this.#paths.inlineForms();
    if (forms) {
      const row = await this.#paths
        .inlineUpdate(forms, operation, key, values, ifVersion, where, options)
        .catch(this.#paths.explainWrite(input, signal));
      return row === undefined ? undefined : t.decode(row);
    }
    if (
      t.hooks.transactional ||
      checksReferences(this.#t.entity, input, options?.scope?.references)
    ) {
      return t
        .transaction(signal, options?.changeContext, async (db, trx, record, execute) => {
          if (this.#t.entity.references.length > 0)
            await checkMissingReferences(
              db,
              this.#t.dialect,
              this.#t.entity,
              input,
              true,
              execute,
              signal,
              options?.scope?.references,
            );
          if (this.#t.dialect.writableCte && ifVersion?.length !== 0) {
            // One statement locks the row (inside the scope), writes it and answers it before and after.
            const [raw] = await execute(lockedUpdate(t, db, values, key, ifVersion, where), '');
            if (!raw)
              return ifVersion === undefined
                ? undefined
                : this.#paths.conflict(db, key, signal, where, execute);
            const { before, after } = splitLocked(t, raw);
            await record(t, [t.change(operation, before, after)]);
            return after;
          }
          // The row it replaces, read and locked inside the scope: one outside it is neither written nor recorded.
          const found = await this.#paths.lockedAt(db, execute, key, ifVersion, where);
          if (!found) return undefined;
          const query = db
            .updateTable(t.name)
            .set(values)
            .where((eb) => t.byKey(eb, key, where))
            .returning(t.selection);
          const [row] = (await trx.executeQuery<Row>(query.compile())).rows;
          if (!row) throw noRowAnswered(`UPDATE ${t.name} of a locked row`);
          const stored = t.decode(row);
          await record(t, [t.change(operation, found, stored)]);
          return stored;
        })
        .catch(this.#paths.explainWrite(input, signal));
    }
    return t
      .run(async (db) => {
        if (ifVersion?.length === 0) return this.#paths.conflict(db, key, signal, where);
        const query = db
          .updateTable(t.name)
          .set(values)
          .where((eb) => t.target(eb, key, ifVersion, where))
          .returning(t.selection);
        const [row] = await t.execute(query.compile(), '', signal);
        if (row) return t.decode(row);
        return ifVersion === undefined ? undefined : this.#paths.conflict(db, key, signal, where);
      }, signal)
      .catch(this.#paths.explainWrite(input, signal));
  }

  /** Deletes or soft-deletes one row (see `EntityRepository.delete`); false when there was none. */
  delete(key: unknown, options: WriteOptions | undefined): Promise<boolean> {
    return this.#deletes.delete(key, options);
  }
}
