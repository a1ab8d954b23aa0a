// Kit-maintained timestamps (an entity's `createdAt` and `updatedAt`): the database's clock, set
// by the statement itself, so that every instance of a service agrees on one clock and a row's
// stamps follow the order its writes committed in.
import type { RawBuilder } from 'kysely';
import type { Entity } from '../../entity.js';
import type { SqlDialect } from './dialect.js';

/**
 * The columns a generated write sets from the database's clock, by column name: on `create` the
 * entity's `createdAt` and `updatedAt`, on any other write (`update`: a replace, a partial update,
 * a soft delete) its `updatedAt`. Every write path merges these into the values it sets.
 *
 * @example
 * ```ts
 * const values = { ...writeValues(entity, dialect, input, false), ...kitTimestamps(entity, dialect, 'update') };
 * ```
 */
export function kitTimestamps(
  entity: Entity,
  dialect: SqlDialect,
  write: 'create' | 'update',
): Record<string, RawBuilder<unknown>> {
  const out: Record<string, RawBuilder<unknown>> = {};
  for (const name of write === 'create'
    ? [entity.createdAt, entity.updatedAt]
    : [entity.updatedAt]) {
    const field = name === undefined ? undefined : entity.field(name);
    if (field) out[field.column] = dialect.clock();
  }
  return out;
}
