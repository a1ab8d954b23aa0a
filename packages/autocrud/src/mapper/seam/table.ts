// One entity's table as the repository's operations share it: how a row is read (the selection
// and the decoding into Kit's form), how a row's key and version conditions are written, an
// insert's columns and its statement (compiled once per set of columns), and the columns Kit
// maintains on every write, and the transaction a write and its hooks run in. The locked reads of
// a row a recorded write replaces are locked-rows.ts. The single-row operations (repository.ts)
// and the atomic writes (writes/) are built on it; it knows nothing of HTTP.
import { randomUUID } from 'node:crypto';
import { KitError } from '@kit/core';
import { sql, type Expression, type SqlBool } from 'kysely';
import type { Entity, EntityField } from '../../entity.js';
import { writeValues } from '../sql/arguments.js';
import type { ColumnCodec } from '../sql/columns.js';
import type { Db } from '../sql/engine.js';
import { encodeValue, type SqlDialect } from '../sql/dialect.js';
import { notDeleted, type Eb, type Filter } from '../sql/query.js';
import {
  checkReadOnly,
  scopeConditions,
  scopeFilters,
  scopeValues,
  type Scope,
} from '../sql/scope.js';
import { decodeRow } from '../sql/decode.js';
import { UnrepresentableValueError } from '../errors.js';
import { Slot, StatementCache, type Executor, type Statement } from '../sql/statements.js';
import { kitTimestamps } from '../sql/stamps.js';
import {
  versionOf,
  type ChangeContext,
  type ChangeOperation,
  type ChangeRecord,
} from './changes.js';
import {
  afterCommit,
  changeTransaction,
  EntityHooks,
  type Committed,
  type Runner,
} from './hooks.js';

/**
 * A row as the API shows it: field names, JSON values.
 *
 * @example
 * ```ts
 * const row: Row = { id: 7, name: 'Kettle', price: 40 };
 * ```
 */
export type Row = Record<string, unknown>;

export type { Runner } from './hooks.js';

export type { Executor } from '../sql/statements.js';

/** One row's insert: the columns it sets (its own, then Kit's stamps) and their bound values. */
export interface PreparedInsert {
  readonly columns: string[];
  readonly values: Record<string, unknown>;
}

/**
 * node:sqlite refuses to read an integer beyond 2^53 - 1 (ERR_OUT_OF_RANGE) rather than round it:
 * that is the same fault as any value Kit cannot answer exactly.
 */
function unreadable(entity: Entity, err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code === 'ERR_OUT_OF_RANGE'
    ? new UnrepresentableValueError(
        entity.name,
        undefined,
        'holds an integer outside the range a JavaScript number holds exactly',
        { cause: err },
      )
    : err;
}

const NO_FILTERS: readonly Filter[] = [];

/** A call's scope checked for its writes (see {@link Table.writeScope}). */
export interface WriteScope {
  readonly scope: Scope;
  /** The conditions, checked against the entity. */
  readonly where: readonly Filter[];
  /** The columns a write sets: each `eq` condition's field to its value (a create lands inside the scope, an update keeps the row in it). */
  readonly set: Record<string, unknown>;
}

/** Hands `changes` of `table` to its write hooks, on the current transaction (see hooks.ts). */
export type Recorder = (table: Table, changes: readonly ChangeRecord[]) => Promise<void>;

/** What every operation on one entity's table shares. */
export class Table {
  readonly name: string;
  readonly pk: EntityField;
  readonly version: EntityField | undefined;
  readonly selection;
  readonly run: Runner;
  /** Each field's codec, in the entity's order (the locked reads read the row with them too, locked-rows.ts). */
  readonly codecs: readonly ColumnCodec[];
  // An insert per set of columns the bodies bring, compiled once (see statements.ts).
  readonly #inserts = new StatementCache();
  /** The seam's hooks on this entity (hooks.ts): none, and a read or write runs no hook code. */
  readonly hooks: EntityHooks;

  constructor(
    readonly entity: Entity,
    readonly dialect: SqlDialect,
    run: Runner,
    readonly execute: Executor,
  ) {
    this.name = entity.table;
    this.pk = entity.field(entity.primaryKey) as EntityField;
    this.codecs = entity.fields.map((f) => dialect.codec(f));
    this.selection = entity.fields.map((f, i) =>
      (this.codecs[i] as ColumnCodec).read(f.column).as(f.name),
    );
    this.run = dialect.refusesWideIntegers
      ? (query) =>
          run((db) => query(db).catch((err: unknown) => Promise.reject(unreadable(entity, err))))
      : run;
    this.version = entity.version === undefined ? undefined : entity.field(entity.version);
    this.hooks = new EntityHooks(this.run);
  }

  /**
   * A row as the API shows it: each value in Kit's form (see columns.ts). NULL is `null` on a
   * nullable field and absent on an optional one. A value with no exact answer throws
   * `UnrepresentableValueError` naming the field and the row: never a rounded or shifted value.
   */
  decode(row: Row): Row {
    return decodeRow(this.entity, this.codecs, row);
  }

  where(eb: Eb, conditions: Array<Expression<SqlBool> | undefined>): Expression<SqlBool> {
    const present = conditions.filter((c): c is Expression<SqlBool> => c !== undefined);
    return eb.and(present);
  }

  /** The row with this key, unless soft-deleted or outside the call's scope (checked filters, see scope.ts). */
  byKey(eb: Eb, key: unknown, scope: readonly Filter[] = NO_FILTERS): Expression<SqlBool> {
    return this.where(eb, [
      eb(sql.ref(this.pk.column), '=', key),
      notDeleted(eb, this.dialect, this.entity),
      ...scopeConditions(eb, this.dialect, this.entity, scope),
    ]);
  }

  /** The row's key condition (inside the scope), plus the version condition of a conditional write. */
  target(
    eb: Eb,
    key: unknown,
    ifVersion: readonly number[] | undefined,
    scope: readonly Filter[] = NO_FILTERS,
  ): Expression<SqlBool> {
    const byKey = this.byKey(eb, key, scope);
    if (ifVersion === undefined || !this.version) return byKey;
    return eb.and([byKey, eb(sql.ref(this.version.column), 'in', [...ifVersion])]);
  }

  /** `ifVersion`, refused with a KitError on an entity without a version field. */
  checkCondition(
    options: { readonly ifVersion?: readonly number[] | undefined } | undefined,
  ): readonly number[] | undefined {
    const ifVersion = options?.ifVersion;
    if (ifVersion !== undefined && !this.version) {
      throw new KitError(
        'KIT_ERR_INVALID_ARGUMENT',
        `ifVersion: entity ${this.entity.name} declares no version field (defineEntity({ version: ... })).`,
      );
    }
    return ifVersion;
  }

  /** A call's scope as its writes use it: the checked filters, and the columns a create sets from them (see scope.ts). */
  writeScope(scope: Scope | undefined, creating: boolean): WriteScope | undefined {
    if (scope === undefined) return undefined;
    const where = scopeFilters(this.entity, scope);
    return { scope, where, set: scopeValues(this.entity, this.dialect, where, creating) };
  }

  /**
   * One row's insert of the writable fields of `input`: a UUID key made by Kit, version 1, Kit's
   * stamps; under a scope, an input naming a read-only field is refused and the scope's fields are
   * set from it, whatever the input says (a row is created inside the caller's scope).
   */
  insertValues(input: Readonly<Record<string, unknown>>, scope?: WriteScope): PreparedInsert {
    if (scope) checkReadOnly(this.entity, scope.scope, input);
    const values = writeValues(this.entity, this.dialect, input, false);
    if (scope) Object.assign(values, scope.set);
    if (this.pk.type === 'string') values[this.pk.column] = randomUUID();
    if (this.version) values[this.version.column] = 1;
    return {
      columns: [
        ...Object.keys(values),
        ...Object.keys(kitTimestamps(this.entity, this.dialect, 'create')),
      ],
      values,
    };
  }

  /** The INSERT ... RETURNING of a set of columns, compiled once per set. */
  insertStatement(db: Db, columns: readonly string[]): Statement {
    return this.#inserts.get(columns.join('\u0000'), () => {
      const stamps = kitTimestamps(this.entity, this.dialect, 'create');
      const slots = Object.fromEntries(columns.map((c) => [c, stamps[c] ?? new Slot(c)]));
      return (
        columns.length === 0
          ? db.insertInto(this.name).defaultValues()
          : db.insertInto(this.name).values(slots)
      ).returning(this.selection);
    });
  }

  /**
   * The columns Kit maintains on every generated write of a row (`update`, `patch`, the atomic
   * writes, a soft delete), added to the write's own: the version, +1, and Kit's `updatedAt` (the
   * database clock). The one place a write's extra columns are added.
   */
  maintained(values: Record<string, unknown>): Record<string, unknown> {
    Object.assign(values, kitTimestamps(this.entity, this.dialect, 'update'));
    if (this.version) values[this.version.column] = sql`${sql.ref(this.version.column)} + 1`;
    return values;
  }

  /**
   * A soft delete's columns: the entity's soft-delete field set, then Kit's maintained columns
   * (see {@link Table.maintained}), as every path of a soft delete writes them (one statement
   * with its changes, a recorded transaction, a plain statement).
   */
  softDeleteValues(soft: EntityField): Record<string, unknown> {
    return this.maintained({ [soft.column]: encodeValue(this.dialect, soft, true) });
  }

  /**
   * Runs `work` in one transaction whose changes `record` hands to each table's write hooks, then,
   * after COMMIT, tells each table's commit hooks what committed and `context` how many were
   * recorded. `execute` runs a statement on the transaction. This table's before hooks run first,
   * on the transaction, before `work` (a throw rolls it back before any statement of the write);
   * a table with none enters no hook code.
   */
  async transaction<T>(
    signal: AbortSignal | undefined,
    context: ChangeContext | undefined,
    work: (db: Db, trx: Db, record: Recorder, execute: Executor) => Promise<T>,
  ): Promise<T> {
    const count = { n: 0 };
    let committed: Committed = [];
    const result = await this.run(
      (db) =>
        db.transaction().execute(async (trx) => {
          // A transaction tried again (a bulk write replayed row by row) counts afresh.
          count.n = 0;
          committed = [];
          const tx = changeTransaction(trx, this.dialect);
          if (this.hooks.guarded) await this.hooks.begin(tx, context);
          return work(
            db,
            trx,
            (table, changes) => table.hooks.record(tx, changes, context, count, committed),
            tx.execute,
          );
        }),
      signal,
    );
    afterCommit(context, count, committed);
    return result;
  }

  /** One row's change, from its decoded rows before and after the write. */
  change(
    operation: ChangeOperation,
    before: Row | undefined,
    after: Row | undefined,
  ): ChangeRecord {
    const v = this.version?.name;
    const key = (after ?? before ?? {})[this.pk.name];
    const change: { -readonly [K in keyof ChangeRecord]: ChangeRecord[K] } = {
      entity: this.entity.name,
      key,
      operation,
    };
    if (before) {
      change.before = before;
      const vb = versionOf(before, v);
      if (vb !== undefined) change.versionBefore = vb;
    }
    if (after) {
      change.after = after;
      const va = versionOf(after, v);
      if (va !== undefined) change.versionAfter = va;
    }
    return change;
  }
}
