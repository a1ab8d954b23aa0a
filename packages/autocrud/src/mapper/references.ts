// The references between entities as the mapper checks them: which referenced row a write names
// that is missing or soft-deleted, and which rows still refer to a row being deleted. Run only
// where the database cannot tell (a soft-deleted parent) or after it refused a write (to name the
// field), so that the common write stays one statement. See docs/decisions.md ("AutoCrud relations").
import { sql } from 'kysely';
import type { Entity, EntityField, EntityReference } from '../entity.js';
import { keyValue } from './arguments.js';
import type { Db, SqlFlavour } from './engine.js';
import { columnCodec } from './columns.js';
import { MissingReferenceError, StillReferencedError } from './errors.js';
import { ValueFault } from '../values/kinds.js';
import { notDeleted } from './query.js';
import type { Executor } from './statements.js';

/** A reference to an entity, from the entity that declares it. */
export interface Referrer {
  readonly entity: Entity;
  readonly reference: EntityReference;
}

/** Every reference among `entities` whose target is `entity`. */
export function referrersOf(entity: Entity, entities: Iterable<Entity>): Referrer[] {
  const found: Referrer[] = [];
  for (const candidate of entities) {
    for (const reference of candidate.references) if (reference.target() === entity) found.push({ entity: candidate, reference });
  }
  return found;
}

/** Whether `target` has a row with primary key `key` that is not soft-deleted. */
async function exists(db: Db, flavour: SqlFlavour, target: Entity, key: unknown, execute: Executor, signal: AbortSignal | undefined): Promise<boolean> {
  const pk = target.field(target.primaryKey) as EntityField;
  const query = db
    .selectFrom(target.table)
    .select(sql.ref(pk.column).as('key'))
    .where((eb) => eb.and([eb(sql.ref(pk.column), '=', key), ...[notDeleted(eb, flavour, target)].filter((c) => c !== undefined)]))
    .limit(1);
  return (await execute(query.compile(), '', signal)).length > 0;
}

/**
 * Throws `MissingReferenceError` for the first reference of `entity` that `input` sets to a key no
 * live row has. `softOnly`: only references whose target soft-deletes (the database's foreign key
 * checks the others).
 */
export async function checkMissingReferences(
  db: Db,
  flavour: SqlFlavour,
  entity: Entity,
  input: Readonly<Record<string, unknown>>,
  softOnly: boolean,
  execute: Executor,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (const reference of entity.references) {
    const value = input[reference.field];
    if (value === undefined || value === null) continue;
    const target = reference.target();
    if (softOnly && target.softDelete === undefined) continue;
    const key = keyValue(target.field(target.primaryKey) as EntityField, value);
    if (key === undefined || !(await exists(db, flavour, target, key, execute, signal))) throw new MissingReferenceError(entity.name, reference.field, value, target.name);
  }
}

/**
 * Throws `StillReferencedError` naming the first row of `referrers` that refers to `key`.
 * `restrictOnly`: only references declared `restrict`, and only rows that are not soft-deleted
 * (a soft delete, which the database's rules do not see); otherwise every reference and row (a
 * delete the database refused).
 */
export async function checkReferrers(
  db: Db,
  flavour: SqlFlavour,
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
      .where((eb) => eb.and([eb(sql.ref(field.column), '=', key), ...(restrictOnly ? [notDeleted(eb, flavour, referrer)].filter((c) => c !== undefined) : [])]))
      .orderBy(sql.ref(pk.column))
      .limit(1);
    const [row] = await execute(query.compile(), '', signal);
    if (row) {
      // The key as the API shows it (a bigint key arrives from PostgreSQL as text).
      const shown = columnCodec(flavour, pk).decode(row.key);
      throw new StillReferencedError(entity.name, key, referrer.name, reference.field, shown instanceof ValueFault ? String(row.key) : shown);
    }
  }
}
