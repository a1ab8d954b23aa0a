// A row read from the database in Kit's form, field by field through each column's codec: the one
// decoder of the entity's own rows (repository.ts) and of the rows an include embeds as JSON
// (embed.ts), so an included row answers every value exactly as a read of it does.
import type { Entity, EntityField } from '../../entity.js';
import { ValueFault } from '../../values/kinds.js';
import type { ColumnCodec } from './columns.js';
import { UnrepresentableValueError } from '../errors.js';

/**
 * `row` (by field name, as the driver or JSON gives it) in Kit's form. NULL is `null` on a
 * nullable field and absent on an optional one. A value with no exact answer throws
 * `UnrepresentableValueError` naming the field and the row: never a rounded or shifted value.
 */
export function decodeRow(
  entity: Entity,
  codecs: readonly ColumnCodec[],
  row: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const fields = entity.fields;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i] as EntityField;
    const value = row[field.name];
    if (value === null || value === undefined) {
      if (field.nullable) out[field.name] = null;
      continue;
    }
    const decoded = (codecs[i] as ColumnCodec).decode(value);
    if (decoded instanceof ValueFault) {
      throw new UnrepresentableValueError(
        entity.name,
        field.name,
        `${decoded.detail} (the row with ${entity.primaryKey} ${JSON.stringify(String(row[entity.primaryKey]))})`,
      );
    }
    out[field.name] = decoded;
  }
  return out;
}
