// A single row's create, update, patch and delete (bulk and nested writes are atomic.ts and
// upsert.ts), each on one of three paths: one statement with its changes (inline-changes.ts) on
// PostgreSQL and PGlite when every write hook has an SQL form and none waits for the commit; a
// transaction that locks the row and calls the seam's hooks (seam/hooks.ts); a plain autocommitted
// statement when no hook is registered.
import { sql, type Compilable } from 'kysely';
import type { EntityField } from '../../entity.js';
import type { CallOptions, WriteOptions } from '../reads/call-options.js';
import type { ChangeContext, ChangeOperation, ChangeSinkSql } from '../seam/changes.js';
import { afterCommit } from '../seam/hooks.js';
import type { Db } from '../sql/engine.js';
import { ConstraintViolationError, noRowAnswered, VersionConflictError } from '../errors.js';
import {
  contextValues,
  deleteStatement,
  InlineStatements,
  insertStatement,
  slotValues,
  updateStatement,
  versionValues,
} from './inline-changes.js';
import { keyValue } from '../sql/arguments.js';
import type { Filter } from '../sql/query.js';
import {
  checkMissingReferences,
  checkReferrers,
  checksReferences,
  refusedReference,
  type Referrer,
} from './references.js';
import { scopeFilters, slotScope } from '../sql/scope.js';
import { kitTimestamps } from '../sql/stamps.js';
import type { Executor, Row, Table } from '../seam/table.js';

/** The single-row writes of one entity's table; the repository checks their input and answers their rows. */
export class RowWrites {
  readonly #t: Table;
  readonly #referrers: () => readonly Referrer[];
  // A single recorded write and its changes as one statement (PostgreSQL), by shape (inline-changes.ts).
  readonly #inlineWrites = new InlineStatements();

  constructor(table: Table, referrers: () => readonly Referrer[]) {
    this.#t = table;
    this.#referrers = referrers;
  }

  /**
   * After the database refused a write for a foreign key: the field and key at fault, as
   * `MissingReferenceError`; anything else as it was.
   */
  #explainWrite(
    input: Readonly<Record<string, unknown>>,
    signal: AbortSignal | undefined,
  ): (err: unknown) => Promise<never> {
    return async (err) => {
      const missing =
        err instanceof ConstraintViolationError && err.kind === 'foreignKey'
          ? await refusedReference(this.#t, input, signal)
          : undefined;
      throw missing ?? err;
    };
  }

  /** Inserts one row (see `EntityRepository.create`); the stored row, decoded. */
  async create(
    written: Readonly<Record<string, unknown>>,
    options: CallOptions | undefined,
  ): Promise<Row> {
    const t = this.#t;
    const { columns, values } = t.insertValues(written, t.writeScope(options?.scope, true));
    const signal = options?.signal;
    const forms = this.#inlineForms();
    if (forms) {
      const stamps = kitTimestamps(this.#t.entity, this.#t.dialect, 'create');
      const { shape, set, bound } = slotValues(
        Object.fromEntries(columns.map((c) => [c, stamps[c] ?? values[c]])),
      );
      const row = await this.#inline(
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
      t.hooks.recording ||
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
        .catch(this.#explainWrite(written, signal));
    }
    return t
      .run(async (db) => {
        const insert = t.insertStatement(db, columns);
        const [row] = await t.execute(insert.bind(values), insert.name, signal);
        if (!row) throw noRowAnswered(`INSERT INTO ${t.name} ... RETURNING`);
        return t.decode(row);
      }, signal)
      .catch(this.#explainWrite(written, signal));
  }

  /**
   * The row a recorded write replaces, decoded, read and locked on its transaction inside the
   * call's scope (checked filters); undefined when there is none. `VersionConflictError` when it
   * is not at one of `ifVersion`.
   */
  async #lockedAt(
    db: Db,
    execute: Executor,
    key: unknown,
    ifVersion: readonly number[] | undefined,
    scope: readonly Filter[],
  ): Promise<Row | undefined> {
    const t = this.#t;
    const raw = await t.locked(db, execute, key, scope);
    if (!raw) return undefined;
    const found = t.decode(raw);
    if (ifVersion !== undefined && t.version) {
      const current = found[t.version.name] as number;
      if (!ifVersion.includes(current)) throw new VersionConflictError(current);
    }
    return found;
  }

  /**
   * The SQL forms of the entity's change sinks when a single write and its changes can be one
   * statement (inline-changes.ts): on PostgreSQL and PGlite, every sink having one, and no
   * reference to check inside the write's transaction. Undefined: the write keeps its transaction.
   */
  #inlineForms(): readonly ChangeSinkSql[] | undefined {
    return this.#t.dialect.writableCte && this.#t.entity.references.length === 0
      ? this.#t.hooks.inline
      : undefined;
  }

  /** Runs a single write's composed statement (built once per `shape`), counts its change; its one row, if any. */
  async #inline(
    forms: readonly ChangeSinkSql[],
    shape: string,
    build: (db: Db, binds: Parameters<typeof contextValues>[0]) => Compilable,
    values: Record<string, unknown>,
    context: ChangeContext | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Row | undefined> {
    const t = this.#t;
    return t.run(async (db) => {
      const { statement: composed, binds } = this.#inlineWrites.get(forms, shape, (b) =>
        build(db, b),
      );
      const [row] = await t.execute(
        composed.bind({ ...values, ...contextValues(binds, context) }),
        composed.name,
        signal,
      );
      // Autocommitted: the write and its change rows are in the database now.
      if (row) afterCommit(context, { n: 1 });
      return row;
    }, signal);
  }

  /** An update, patch or soft delete of one row and its changes as one statement; the row after (undecoded), or undefined (a conflict thrown). */
  async #inlineUpdate(
    forms: readonly ChangeSinkSql[],
    operation: ChangeOperation,
    key: unknown,
    values: Record<string, unknown>,
    ifVersion: readonly number[] | undefined,
    where: readonly Filter[],
    options: WriteOptions | undefined,
  ): Promise<Row | undefined> {
    const t = this.#t;
    const signal = options?.signal;
    const scoped = slotScope(this.#t.dialect, this.#t.entity, where, 's');
    const { shape, set, bound } = slotValues(values);
    const row = await this.#inline(
      forms,
      `${operation}\u0002${shape}\u0002${scoped.shape}\u0002${ifVersion?.length ?? ''}`,
      (db, binds) =>
        updateStatement(db, t, operation, set, ifVersion?.length, scoped.filters, forms, binds),
      { ...bound, ...scoped.values, ...versionValues(ifVersion), key },
      options?.changeContext,
      signal,
    );
    if (row || ifVersion === undefined) return row;
    return t.run((db) => this.#conflict(db, key, signal, where), signal);
  }

  /** After a conditional write changed nothing: undefined when there is no row (inside the scope), else the conflict. */
  async #conflict(
    db: Db,
    key: unknown,
    signal: AbortSignal | undefined,
    scope: readonly Filter[],
    execute: Executor = this.#t.execute,
  ): Promise<undefined> {
    const t = this.#t;
    const version = t.version as EntityField;
    const query = db
      .selectFrom(t.name)
      .select(sql.ref(version.column).as('version'))
      .where((eb) => t.byKey(eb, key, scope));
    const [row] = await execute(query.compile(), '', signal);
    if (row) throw new VersionConflictError(Number(row.version));
    return undefined;
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
    const forms = ifVersion?.length === 0 ? undefined : this.#inlineForms();
    if (forms) {
      const row = await this.#inlineUpdate(
        forms,
        operation,
        key,
        values,
        ifVersion,
        where,
        options,
      ).catch(this.#explainWrite(input, signal));
      return row === undefined ? undefined : t.decode(row);
    }
    if (t.hooks.recording || checksReferences(this.#t.entity, input, options?.scope?.references)) {
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
            const [raw] = await execute(t.lockedUpdate(db, values, key, ifVersion, where), '');
            if (!raw)
              return ifVersion === undefined
                ? undefined
                : this.#conflict(db, key, signal, where, execute);
            const { before, after } = t.splitLocked(raw);
            await record(t, [t.change(operation, before, after)]);
            return after;
          }
          // The row it replaces, read and locked inside the scope: one outside it is neither written nor recorded.
          const found = await this.#lockedAt(db, execute, key, ifVersion, where);
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
        .catch(this.#explainWrite(input, signal));
    }
    return t
      .run(async (db) => {
        if (ifVersion?.length === 0) return this.#conflict(db, key, signal, where);
        const query = db
          .updateTable(t.name)
          .set(values)
          .where((eb) => t.target(eb, key, ifVersion, where))
          .returning(t.selection);
        const [row] = await t.execute(query.compile(), '', signal);
        if (row) return t.decode(row);
        return ifVersion === undefined ? undefined : this.#conflict(db, key, signal, where);
      }, signal)
      .catch(this.#explainWrite(input, signal));
  }

  /** Deletes or soft-deletes one row (see `EntityRepository.delete`); false when there was none. */
  async delete(key: unknown, options: WriteOptions | undefined): Promise<boolean> {
    const t = this.#t;
    const ifVersion = t.checkCondition(options);
    key = keyValue(t.pk, key);
    if (key === undefined) return false;
    const soft =
      this.#t.entity.softDelete === undefined
        ? undefined
        : this.#t.entity.field(this.#t.entity.softDelete);
    const signal = options?.signal;
    const scope = scopeFilters(this.#t.entity, options?.scope);
    // A soft delete restricted by referrers checks them inside a transaction first.
    const forms =
      ifVersion?.length === 0 || (soft && this.#referrers().length > 0)
        ? undefined
        : this.#inlineForms();
    if (forms) {
      if (soft) {
        return (
          (await this.#inlineUpdate(
            forms,
            'softDelete',
            key,
            t.softDeleteValues(soft),
            ifVersion,
            scope,
            options,
          )) !== undefined
        );
      }
      const scoped = slotScope(this.#t.dialect, this.#t.entity, scope, 's');
      const gone = await this.#inline(
        forms,
        `delete\u0002${scoped.shape}\u0002${ifVersion?.length ?? ''}`,
        (db, binds) => deleteStatement(db, t, ifVersion?.length, scoped.filters, forms, binds),
        { ...scoped.values, ...versionValues(ifVersion), key },
        options?.changeContext,
        signal,
      ).catch(this.#explainDelete(key, signal));
      if (gone || ifVersion === undefined) return gone !== undefined;
      return (await t.run((db) => this.#conflict(db, key, signal, scope), signal)) ?? false;
    }
    // A soft delete that others may refer to locks its row before it checks them (references.ts).
    if (t.hooks.recording || (soft && this.#referrers().length > 0))
      return this.#recordedDelete(key, soft, ifVersion, scope, options);
    return t
      .run(async (db) => {
        if (ifVersion?.length === 0) return (await this.#conflict(db, key, signal, scope)) ?? false;
        // RETURNING the key counts the rows touched, on every engine, through the one statement path.
        const touched = sql.ref(t.pk.column);
        let query;
        if (soft) {
          query = db
            .updateTable(t.name)
            .set(t.softDeleteValues(soft))
            .where((eb) => t.target(eb, key, ifVersion, scope))
            .returning(touched.as('key'));
        } else {
          query = db
            .deleteFrom(t.name)
            .where((eb) => t.target(eb, key, ifVersion, scope))
            .returning(touched.as('key'));
        }
        if ((await t.execute(query.compile(), '', signal)).length > 0) return true;
        return ifVersion === undefined
          ? false
          : ((await this.#conflict(db, key, signal, scope)) ?? false);
      }, signal)
      .catch(this.#explainDelete(key, signal));
  }

  /** The database refused a delete (restrict): names a row that still refers to it. */
  #explainDelete(key: unknown, signal: AbortSignal | undefined): (err: unknown) => Promise<never> {
    return async (err) => {
      const referrers = this.#referrers();
      if (
        err instanceof ConstraintViolationError &&
        err.kind === 'foreignKey' &&
        referrers.length > 0
      ) {
        const t = this.#t;
        await t.run(
          (db) =>
            checkReferrers(
              db,
              this.#t.dialect,
              this.#t.entity,
              key,
              referrers,
              false,
              t.execute,
              signal,
            ),
          signal,
        );
      }
      throw err;
    };
  }

  /**
   * `delete` of an entity that records its changes, or a soft delete others may refer to: the row
   * read and locked first (inside the call's scope: a row outside it is absent, neither deleted nor
   * recorded, never a restrict conflict), then its live referrers checked, in one transaction with
   * the write and its change. The lock comes before the check so that a create naming the row,
   * which locks it too, is either seen by the check or waits and finds the row gone.
   */
  async #recordedDelete(
    key: unknown,
    soft: EntityField | undefined,
    ifVersion: readonly number[] | undefined,
    scope: readonly Filter[],
    options: WriteOptions | undefined,
  ): Promise<boolean> {
    const t = this.#t;
    const signal = options?.signal;
    return t
      .transaction(signal, options?.changeContext, async (db, trx, record, execute) => {
        const found = await this.#lockedAt(db, execute, key, ifVersion, scope);
        if (!found) return false;
        const referrers = this.#referrers();
        if (soft && referrers.length > 0)
          await checkReferrers(
            db,
            this.#t.dialect,
            this.#t.entity,
            key,
            referrers,
            true,
            execute,
            signal,
          );
        if (soft) {
          const query = db
            .updateTable(t.name)
            .set(t.softDeleteValues(soft))
            .where((eb) => t.byKey(eb, key, scope))
            .returning(t.selection);
          const [row] = (await trx.executeQuery<Row>(query.compile())).rows;
          if (!row) throw noRowAnswered(`UPDATE ${t.name} of a locked row`);
          await record(t, [t.change('softDelete', found, t.decode(row))]);
        } else {
          await trx.executeQuery(
            db
              .deleteFrom(t.name)
              .where((eb) => t.byKey(eb, key, scope))
              .compile(),
          );
          await record(t, [t.change('delete', found, undefined)]);
        }
        return true;
      })
      .catch(this.#explainDelete(key, signal));
  }
}
