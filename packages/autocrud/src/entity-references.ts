// An entity definition's references to other entities: each field's target, its delete rule and
// the names of the relation on both sides, checked when the entity is defined (and, for a target
// given as a function, by the plugin once every entity exists).
import type { Entity, EntityField, EntityReference, ReferenceRule } from './entity-types.js';
import { entityError, IDENTIFIER, isRecord } from './entity-checks.js';

const RULES: ReadonlySet<string> = new Set(['restrict', 'cascade', 'set null']);

function isEntity(value: unknown): value is Entity {
  return (
    isRecord(value) &&
    typeof value.primaryKey === 'string' &&
    typeof value.field === 'function' &&
    Array.isArray(value.fields)
  );
}

/**
 * Whether `field` can hold `target`'s primary key: the same kind. Checked at once for an entity
 * given directly, and by the plugin (see `checkReferences`) for one given as a function.
 *
 * @example
 * ```ts
 * const fault = referenceFault('Order', Order.field('customerId') as EntityField, Customer); // undefined when the kinds match
 * ```
 */
export function referenceFault(
  entity: string,
  field: EntityField,
  target: Entity,
): string | undefined {
  const key = target.field(target.primaryKey);
  if (key && key.kind === field.kind) return undefined;
  return `field '${field.name}' references ${target.name}, whose primary key '${target.primaryKey}' is ${key?.kind ?? 'missing'}, but '${field.name}' is ${field.kind}: declare it as the key is declared (entity ${entity}).`;
}

/**
 * The references a definition declares, resolved and checked: each names a field other than the
 * key, soft-delete, version and timestamp fields (`reserved`), a delete rule the field can hold,
 * and relation names no field or other relation of the entity takes.
 *
 * @example
 * ```ts
 * const references = referencesOf('Order', 'orders', { customerId: () => Customer }, byName, reserved);
 * ```
 */
export function referencesOf(
  name: string,
  table: string,
  declared: unknown,
  byName: ReadonlyMap<string, EntityField>,
  reserved: ReadonlySet<string | undefined>,
): readonly EntityReference[] {
  if (declared === undefined) return Object.freeze([]);
  if (!isRecord(declared))
    throw entityError(
      name,
      'references must be an object { field: Entity | () => Entity | { entity, onDelete, as, many } }.',
    );
  const out: EntityReference[] = [];
  const names = new Set<string>();
  for (const [fieldName, value] of Object.entries(declared)) {
    if (value === undefined) continue;
    const field = byName.get(fieldName);
    if (!field)
      throw entityError(
        name,
        `references names '${fieldName}', which is not a field of the schema.`,
      );
    if (reserved.has(fieldName))
      throw entityError(
        name,
        `references.${fieldName}: the primary key, soft-delete, version and timestamp fields cannot reference another entity.`,
      );
    const options: Record<string, unknown> =
      isRecord(value) && !isEntity(value) ? value : { entity: value };
    const given = options.entity;
    if (!isEntity(given) && typeof given !== 'function')
      throw entityError(
        name,
        `references.${fieldName} must be an entity made by defineEntity, or a function returning one.`,
      );
    const onDelete = options.onDelete ?? 'restrict';
    if (typeof onDelete !== 'string' || !RULES.has(onDelete))
      throw entityError(
        name,
        `references.${fieldName}.onDelete must be 'restrict', 'cascade' or 'set null'; found ${JSON.stringify(onDelete)}.`,
      );
    if (onDelete === 'set null' && !field.nullable)
      throw entityError(
        name,
        `references.${fieldName}.onDelete is 'set null', but '${fieldName}' is not nullable: declare it type: [..., 'null'].`,
      );
    if (isEntity(given)) {
      const fault = referenceFault(name, field, given);
      if (fault) throw entityError(name, fault);
    }
    const as = options.as ?? (fieldName.replace(/(_id|Id)$/, '') || fieldName);
    const many = options.many ?? splitName(table);
    for (const [label, relation] of [
      ['as', as],
      ['many', many],
    ] as const) {
      if (typeof relation !== 'string' || !IDENTIFIER.test(relation))
        throw entityError(
          name,
          `references.${fieldName}.${label} must be an identifier; found ${JSON.stringify(relation)}.`,
        );
    }
    if (as === fieldName || byName.has(as as string) || names.has(as as string)) {
      throw entityError(
        name,
        `references.${fieldName}: the relation name '${String(as)}' is already a field or another relation of ${name}; set as: '<name>'.`,
      );
    }
    names.add(as as string);
    const resolve = isEntity(given) ? () => given : (given as () => Entity);
    out.push(
      Object.freeze({
        field: fieldName,
        target: resolve,
        onDelete: onDelete as ReferenceRule,
        as: as as string,
        many: many as string,
      }),
    );
  }
  return Object.freeze(out);
}

/** A table's name without its schema (the default one-to-many relation name). */
function splitName(table: string): string {
  const dot = table.indexOf('.');
  return dot === -1 ? table : table.slice(dot + 1);
}
