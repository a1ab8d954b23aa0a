// Kit-maintained timestamps (an entity's `createdAt` and `updatedAt`): the database's clock, set
// by the statement itself, so that every instance of a service agrees on one clock and a row's
// stamps follow the order its writes committed in.
import { sql, type RawBuilder } from 'kysely';
import type { Entity } from '../../entity.js';
import type { SqlFlavour } from './engine.js';

/**
 * The database's clock in Kit's form of a timestamp: PostgreSQL's `statement_timestamp()` (with
 * microseconds), SQLite's `'now'` (milliseconds) written as `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
 */
export function databaseClock(flavour: SqlFlavour): RawBuilder<unknown> {
  return flavour === 'postgres' ? sql`statement_timestamp()` : sql`(strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')`;
}

/**
 * The columns a generated write sets from the database's clock, by column name: on `create` the
 * entity's `createdAt` and `updatedAt`, on any other write (`update`: a replace, a partial update,
 * a soft delete) its `updatedAt`. Every write path merges these into the values it sets.
 *
 * @example
 * ```ts
 * const values = { ...writeValues(entity, flavour, input, false), ...kitTimestamps(entity, flavour, 'update') };
 * ```
 */
export function kitTimestamps(entity: Entity, flavour: SqlFlavour, write: 'create' | 'update'): Record<string, RawBuilder<unknown>> {
  const out: Record<string, RawBuilder<unknown>> = {};
  for (const name of write === 'create' ? [entity.createdAt, entity.updatedAt] : [entity.updatedAt]) {
    const field = name === undefined ? undefined : entity.field(name);
    if (field) out[field.column] = databaseClock(flavour);
  }
  return out;
}
