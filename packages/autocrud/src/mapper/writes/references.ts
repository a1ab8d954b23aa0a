// The references between entities as the mapper checks them: which referenced row a write names
// that is missing or soft-deleted, and which rows still refer to a row being deleted. Run only
// where the database cannot tell (a soft-deleted parent) or after it refused a write (to name the
// field), so that the common write stays one statement. See docs/decisions.md ("AutoCrud relations").
import { sql, type CompiledQuery } from 'kysely';
import type { Entity, EntityField, EntityReference } from '../../entity.js';
import { keyValue } from '../sql/arguments.js';
import type { Db } from '../sql/engine.js';
import type { SqlDialect } from '../sql/dialect.js';
import { MissingReferenceError, StillReferencedError } from '../errors.js';
import { ValueFault } from '../../values/kinds.js';
import { notDeleted, type Filter } from '../sql/query.js';
import { scopeConditions, scopeFilters } from '../sql/scope.js';
import type { Executor } from '../sql/statements.js';

/** A reference to an entity, from the entity that declares it. */
export interface Referrer {
  readonly entity: Entity;
  readonly reference: EntityReference;
}

/** Every reference among `entities` whose target is `entity`. */
export function referrersOf(entity: Entity, entities: Iterable<Entity>): Referrer[] {
  const found: Referrer[] = [];
  for (const candidate of entities) {
    for (const reference of candidate.references)
      if (reference.target() === entity) found.push({ entity: candidate, reference });
  }
  return found;
}

/** Runs a compiled statement on the connection (or transaction) of the write it checks; its rows. */
type RowReader = (query: CompiledQuery) => Promise<ReadonlyArray<Record<string, unknown>>>;

// Keys per IN list: far below both engines' parameter limits (SQLite 32766, PostgreSQL 65535).
const KEYS_PER_STATEMENT = 1000;

/** The rows of referenced entities a write may name (see `Scope.references`). */
type ReferenceScopes = ReadonlyMap<Entity, readonly Filter[] | null>;

/**
 * Of `keys`, those `target` has a live (not soft-deleted) row for, inside `visible` (the caller's
 * conditions on its rows) when given, as strings: one statement per 1,000 keys.
 */
async function liveKeys(
  db: Db,
  dialect: SqlDialect,
  target: Entity,
  keys: readonly unknown[],
  read: RowReader,
  visible: readonly Filter[] = [],
): Promise<Set<string>> {
  const pk = target.field(target.primaryKey) as EntityField;
  const found = new Set<string>();
  for (let start = 0; start < keys.length; start += KEYS_PER_STATEMENT) {
    const chunk = keys.slice(start, start + KEYS_PER_STATEMENT);
    const query = db
      .selectFrom(target.table)
      .select(sql.ref(pk.column).as('key'))
      .where((eb) =>
        eb.and([
          eb(sql.ref(pk.column), 'in', chunk),
          ...[notDeleted(eb, dialect, target)].filter((c) => c !== undefined),
          ...scopeConditions(eb, dialect, target, visible),
        ]),
      );
    // Locked until the write's transaction ends (where the transaction does not hold the write
    // lock already): a soft delete locks its row FOR UPDATE before it checks its referrers, so one of the
    // two waits for the other and sees what it wrote. Under a scope, FOR SHARE: a change of the
    // fields the scope tests waits too. See docs/decisions.md ("AutoCrud relations").
    const locked = dialect.lockRows(query, visible.length > 0 ? 'share' : 'key share');
    for (const row of await read(locked.compile())) found.add(String(row.key));
  }
  return found;
}

/**
 * The first row of `inputs` that sets a reference of `entity` to a key no live row has, and the
 * error naming its field; `undefined` when every reference holds. One statement per reference
 * (per 1,000 keys), whatever the number of rows: a bulk or nested write checks its whole batch at
 * once. `softOnly`: only references whose target soft-deletes (the database's foreign key checks
 * the others). A key the database answers in another spelling (a bigint as text) is checked again
 * on its own before it is called missing, so no live parent is ever refused. `scopes`: the rows
 * of each referenced entity the caller may name; a reference to a row outside them is missing
 * too (checked whatever `softOnly` says: the database's foreign key sees every row).
 */
export async function firstMissingReference(
  db: Db,
  dialect: SqlDialect,
  entity: Entity,
  inputs: readonly Readonly<Record<string, unknown>>[],
  softOnly: boolean,
  read: RowReader,
  scopes?: ReferenceScopes,
): Promise<{ index: number; error: MissingReferenceError } | undefined> {
  let first: { index: number; error: MissingReferenceError } | undefined;
  for (const reference of entity.references) {
    const target = reference.target();
    const scoped = scopes?.get(target);
    if (softOnly && target.softDelete === undefined && scoped === undefined) continue;
    // null: the caller may name no row of the target; conditions: only the rows they admit.
    const visible =
      scoped === null || scoped === undefined ? [] : scopeFilters(target, { where: scoped });
    const pk = target.field(target.primaryKey) as EntityField;
    const named: Array<{ index: number; value: unknown; key: unknown }> = [];
    for (
      let index = 0;
      index < inputs.length && (first === undefined || index < first.index);
      index++
    ) {
      const value = (inputs[index] as Readonly<Record<string, unknown>>)[reference.field];
      if (value !== undefined && value !== null)
        named.push({ index, value, key: keyValue(pk, value) });
    }
    if (named.length === 0) continue;
    const keys = [...new Set(named.filter((n) => n.key !== undefined).map((n) => n.key))];
    const live =
      keys.length > 0 && scoped !== null
        ? await liveKeys(db, dialect, target, keys, read, visible)
        : new Set<string>();
    for (const { index, value, key } of named) {
      if (
        key !== undefined &&
        scoped !== null &&
        (live.has(String(key)) ||
          (await liveKeys(db, dialect, target, [key], read, visible)).size > 0)
      )
        continue;
      if (first === undefined || index < first.index)
        first = {
          index,
          error: new MissingReferenceError(entity.name, reference.field, value, target.name),
        };
      break;
    }
  }
  return first;
}

/**
 * True when a write of `input` has references to check before it writes (it names a row of a
 * target that soft-deletes, or of one the caller's `scopes` restrict): the check and the write
 * then run in one transaction, the parents locked (see `firstMissingReference`).
 */
export function checksReferences(
  entity: Entity,
  input: Readonly<Record<string, unknown>>,
  scopes?: ReferenceScopes,
): boolean {
  return entity.references.some((reference) => {
    const value = input[reference.field];
    if (value === undefined || value === null) return false;
    const target = reference.target();
    return target.softDelete !== undefined || scopes?.get(target) !== undefined;
  });
}

/** What naming a refused reference needs of a table (table.ts's `Table` is one). */
interface ReferencingTable {
  readonly entity: Entity;
  readonly dialect: SqlDialect;
  readonly run: <T>(query: (db: Db) => Promise<T>, signal?: AbortSignal) => Promise<T>;
  readonly execute: Executor;
}

/**
 * After the database refused a write of `input` for a foreign key: the error naming the field and
 * the key at fault, read afresh on the table's database (the write's transaction rolled back);
 * `undefined` when every reference now holds (the parent came back meanwhile), so the caller keeps
 * the database's refusal. The one explanation of a refused reference: single, bulk and nested writes.
 */
export async function refusedReference(
  table: ReferencingTable,
  input: Readonly<Record<string, unknown>>,
  signal: AbortSignal | undefined,
): Promise<MissingReferenceError | undefined> {
  if (table.entity.references.length === 0) return undefined;
  const missing = await table.run(
    (db) =>
      firstMissingReference(db, table.dialect, table.entity, [input], false, (query) =>
        table.execute(query, '', signal),
      ),
    signal,
  );
  return missing?.error;
}

/**
 * Throws `MissingReferenceError` for the first reference of `entity` that `input` sets to a key no
 * live row has. `softOnly`: only references whose target soft-deletes (the database's foreign key
 * checks the others).
 */
export async function checkMissingReferences(
  db: Db,
  dialect: SqlDialect,
  entity: Entity,
  input: Readonly<Record<string, unknown>>,
  softOnly: boolean,
  execute: Executor,
  signal: AbortSignal | undefined,
  scopes?: ReferenceScopes,
): Promise<void> {
  const missing = await firstMissingReference(
    db,
    dialect,
    entity,
    [input],
    softOnly,
    (query) => execute(query, '', signal),
    scopes,
  );
  if (missing) throw missing.error;
}

/**
 * Throws `StillReferencedError` naming the first row of `referrers` that refers to `key`.
 * `restrictOnly`: only references declared `restrict`, and only rows that are not soft-deleted
 * (a soft delete, which the database's rules do not see); otherwise every reference and row (a
 * delete the database refused).
 */
export async function checkReferrers(
  db: Db,
  dialect: SqlDialect,
  entity: Entity,
  key: unknown,
  referrers: readonly Referrer[],
  restrictOnly: boolean,
  execute: Executor,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (const { entity: referrer, reference } of referrers) {
    if (restrictOnly && reference.onDelete !== 'restrict') continue;
    const field = referrer.field(reference.field) as EntityField;
    const pk = referrer.field(referrer.primaryKey) as EntityField;
    const query = db
      .selectFrom(referrer.table)
      .select(sql.ref(pk.column).as('key'))
      .where((eb) =>
        eb.and([
          eb(sql.ref(field.column), '=', key),
          ...(restrictOnly
            ? [notDeleted(eb, dialect, referrer)].filter((c) => c !== undefined)
            : []),
        ]),
      )
      .orderBy(sql.ref(pk.column))
      .limit(1);
    const [row] = await execute(query.compile(), '', signal);
    if (row) {
      // The key as the API shows it (a bigint key arrives from PostgreSQL as text).
      const shown = dialect.codec(pk).decode(row.key);
      throw new StillReferencedError(
        entity.name,
        key,
        referrer.name,
        reference.field,
        shown instanceof ValueFault ? String(row.key) : shown,
      );
    }
  }
}
