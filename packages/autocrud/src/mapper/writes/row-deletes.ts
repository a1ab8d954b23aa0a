// A single row's delete and soft delete (see `EntityRepository.delete`), on the paths every single
// write takes (row-write-paths.ts): one statement with its change, a transaction that locks the row,
// checks who refers to it and calls the seam's hooks, or a plain autocommitted statement.
import { sql } from 'kysely';
import type { EntityField } from '../../entity.js';
import type { WriteOptions } from '../reads/call-options.js';
import { ConstraintViolationError, noRowAnswered } from '../errors.js';
import { deleteStatement, versionValues } from './inline-changes.js';
import { keyValue } from '../sql/arguments.js';
import type { Filter } from '../sql/query.js';
import { checkReferrers } from './references.js';
import { scopeFilters, slotScope } from '../sql/scope.js';
import type { Row, Table } from '../seam/table.js';
import type { RowWritePaths } from './row-write-paths.js';

/**
 * The single-row deletes of one entity's table.
 *
 * @example
 * ```ts
 * const deletes = new RowDeletes(paths);
 * const gone = await deletes.delete(7, { ifVersion: [3] });
 * ```
 */
export class RowDeletes {
  readonly #paths: RowWritePaths;
  readonly #t: Table;

  constructor(paths: RowWritePaths) {
    this.#paths = paths;
    this.#t = paths.table;
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
      ifVersion?.length === 0 || (soft && this.#paths.referrers().length > 0)
        ? undefined
        : this.#paths.inlineForms();
    if (forms) {
      if (soft) {
        return (
          (await this.#paths.inlineUpdate(
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
      const gone = await this.#paths
        .inline(
          forms,
          `delete\u0002${scoped.shape}\u0002${ifVersion?.length ?? ''}`,
          (db, binds) => deleteStatement(db, t, ifVersion?.length, scoped.filters, forms, binds),
          { ...scoped.values, ...versionValues(ifVersion), key },
          options?.changeContext,
          signal,
        )
        .catch(this.#explainDelete(key, signal));
      if (gone || ifVersion === undefined) return gone !== undefined;
      return (await t.run((db) => this.#paths.conflict(db, key, signal, scope), signal)) ?? false;
    }
    // A soft delete that others may refer to locks its row before it checks them (references.ts).
    if (t.hooks.transactional || (soft && this.#paths.referrers().length > 0))
      return this.#recordedDelete(key, soft, ifVersion, scope, options);
    return t
      .run(async (db) => {
        if (ifVersion?.length === 0)
          return (await this.#paths.conflict(db, key, signal, scope)) ?? false;
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
          : ((await this.#paths.conflict(db, key, signal, scope)) ?? false);
      }, signal)
      .catch(this.#explainDelete(key, signal));
  }

  /** The database refused a delete (restrict): names a row that still refers to it. */
  #explainDelete(key: unknown, signal: AbortSignal | undefined): (err: unknown) => Promise<never> {
    return async (err) => {
      const referrers = this.#paths.referrers();
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
        const found = await this.#paths.lockedAt(db, execute, key, ifVersion, scope);
        if (!found) return false;
        const referrers = this.#paths.referrers();
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
