// What a single row's create, update and delete share (row-writes.ts, row-deletes.ts): the table
// and who refers to it, the one-statement path with its changes (inline-changes.ts) and when a
// write may take it, the locked read of the row a recorded write replaces, the answer to a
// conditional write that changed nothing, and a foreign-key refusal explained.
import { sql, type Compilable } from 'kysely';
import type { EntityField } from '../../entity.js';
import type { WriteOptions } from '../reads/call-options.js';
import type { ChangeContext, ChangeOperation, ChangeSinkSql } from '../seam/changes.js';
import { afterCommit } from '../seam/hooks.js';
import type { Db } from '../sql/engine.js';
import { ConstraintViolationError, VersionConflictError } from '../errors.js';
import {
  contextValues,
  InlineStatements,
  slotValues,
  updateStatement,
  versionValues,
} from './inline-changes.js';
import type { Filter } from '../sql/query.js';
import { refusedReference, type Referrer } from './references.js';
import { slotScope } from '../sql/scope.js';
import type { Executor, Row, Table } from '../seam/table.js';
import { lockedRow } from '../seam/locked-rows.js';

/**
 * The paths a single row's writes share on one entity's table.
 *
 * @example
 * ```ts
 * const paths = new RowWritePaths(table, () => referrers);
 * const forms = paths.inlineForms();
 * ```
 */
export class RowWritePaths {
  // A single recorded write and its changes as one statement (PostgreSQL), by shape (inline-changes.ts).
  readonly #inlineWrites = new InlineStatements();

  constructor(
    readonly table: Table,
    readonly referrers: () => readonly Referrer[],
  ) {}

  /**
   * After the database refused a write for a foreign key: the field and key at fault, as
   * `MissingReferenceError`; anything else as it was.
   */
  explainWrite(
    input: Readonly<Record<string, unknown>>,
    signal: AbortSignal | undefined,
  ): (err: unknown) => Promise<never> {
    return async (err) => {
      const missing =
        err instanceof ConstraintViolationError && err.kind === 'foreignKey'
          ? await refusedReference(this.table, input, signal)
          : undefined;
      throw missing ?? err;
    };
  }

  /**
   * The row a recorded write replaces, decoded, read and locked on its transaction inside the
   * call's scope (checked filters); undefined when there is none. `VersionConflictError` when it
   * is not at one of `ifVersion`.
   */
  async lockedAt(
    db: Db,
    execute: Executor,
    key: unknown,
    ifVersion: readonly number[] | undefined,
    scope: readonly Filter[],
  ): Promise<Row | undefined> {
    const t = this.table;
    const raw = await lockedRow(t, db, execute, key, scope);
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
  inlineForms(): readonly ChangeSinkSql[] | undefined {
    return this.table.dialect.writableCte && this.table.entity.references.length === 0
      ? this.table.hooks.inline
      : undefined;
  }

  /** Runs a single write's composed statement (built once per `shape`), counts its change; its one row, if any. */
  async inline(
    forms: readonly ChangeSinkSql[],
    shape: string,
    build: (db: Db, binds: Parameters<typeof contextValues>[0]) => Compilable,
    values: Record<string, unknown>,
    context: ChangeContext | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Row | undefined> {
    const t = this.table;
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
  async inlineUpdate(
    forms: readonly ChangeSinkSql[],
    operation: ChangeOperation,
    key: unknown,
    values: Record<string, unknown>,
    ifVersion: readonly number[] | undefined,
    where: readonly Filter[],
    options: WriteOptions | undefined,
  ): Promise<Row | undefined> {
    const t = this.table;
    const signal = options?.signal;
    const scoped = slotScope(this.table.dialect, this.table.entity, where, 's');
    const { shape, set, bound } = slotValues(values);
    const row = await this.inline(
      forms,
      `${operation}\u0002${shape}\u0002${scoped.shape}\u0002${ifVersion?.length ?? ''}`,
      (db, binds) =>
        updateStatement(db, t, operation, set, ifVersion?.length, scoped.filters, forms, binds),
      { ...bound, ...scoped.values, ...versionValues(ifVersion), key },
      options?.changeContext,
      signal,
    );
    if (row || ifVersion === undefined) return row;
    return t.run((db) => this.conflict(db, key, signal, where), signal);
  }

  /** After a conditional write changed nothing: undefined when there is no row (inside the scope), else the conflict. */
  async conflict(
    db: Db,
    key: unknown,
    signal: AbortSignal | undefined,
    scope: readonly Filter[],
    execute: Executor = this.table.execute,
  ): Promise<undefined> {
    const t = this.table;
    const version = t.version as EntityField;
    const query = db
      .selectFrom(t.name)
      .select(sql.ref(version.column).as('version'))
      .where((eb) => t.byKey(eb, key, scope));
    const [row] = await execute(query.compile(), '', signal);
    if (row) throw new VersionConflictError(Number(row.version));
    return undefined;
  }
}
