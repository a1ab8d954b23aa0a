// An entity: `defineEntity` checks a definition and makes the entity the mapper and the routes
// read. The types it takes and makes are in entity-types.ts (re-exported here, where the package
// and its modules import them from); each concern of the check has its file: the names and the
// error (entity-checks.ts), a field's schema (entity-fields.ts), references
// (entity-references.ts), unique keys (entity-unique-keys.ts).
import { kindOf, ValueFault } from './values/kinds.js';
import { fieldValue } from './values/fields.js';
import type { Entity, EntityDefinition, EntityField, EntitySchema } from './entity-types.js';
import { COMPONENT_NAME, entityError, IDENTIFIER, isRecord } from './entity-checks.js';
import { decimalSize, enumOf, scalarOf } from './entity-fields.js';
import { referencesOf } from './entity-references.js';
import { uniqueKeys } from './entity-unique-keys.js';

export type {
  Entity,
  EntityDefinition,
  EntityField,
  EntityFieldName,
  EntityInput,
  EntityReference,
  EntityRow,
  EntitySchema,
  FieldType,
  ReferenceOptions,
  ReferenceRule,
  ReferenceTarget,
  RowOf,
} from './entity-types.js';
export { referenceFault } from './entity-references.js';

// entity-types.ts's own, spelled again rather than exported: an exported alias would be printed by
// name in the API report, where the public surface shows what it is.
type FieldName<S> = S extends { properties: infer P } ? Extract<keyof P, string> : string;

/**
 * Declares an entity: a table, its primary key, the fields as a JSON Schema object, which fields
 * clients may write, and an optional soft-delete field. Validated here: a mistake throws
 * `KIT_ERR_AUTOCRUD_ENTITY` naming the field. Works with TypeBox and with a plain JSON Schema
 * literal alike (the schema is copied as plain JSON).
 *
 * @throws {KitError} `KIT_ERR_AUTOCRUD_ENTITY` naming the field or setting at fault.
 * @example
 * ```ts
 * import { Type } from '@sinclair/typebox';
 *
 * export const Product = defineEntity({
 *   name: 'Product',
 *   table: 'products',
 *   schema: Type.Object({
 *     id: Type.Integer(),
 *     name: Type.String({ maxLength: 200 }),
 *     price: Type.Number({ minimum: 0 }),
 *     isDeleted: Type.Boolean(),
 *   }),
 *   writable: ['name', 'price'],
 *   softDelete: 'isDeleted',
 * });
 * ```
 */
export function defineEntity<
  const S extends EntitySchema,
  const W extends FieldName<S> = FieldName<S>,
>(definition: EntityDefinition<S, W>): Entity<S, W> {
  if (!isRecord(definition))
    throw entityError(undefined, 'expected an object { name, table, schema, writable, ... }.');
  const { name, table } = definition;
  if (typeof name !== 'string' || !COMPONENT_NAME.test(name)) {
    throw entityError(
      name,
      'name must start with a letter and hold only letters, digits, ".", "_" or "-" (it is the OpenAPI component name).',
    );
  }
  if (
    typeof table !== 'string' ||
    !table.split('.').every((part) => IDENTIFIER.test(part)) ||
    table.split('.').length > 2
  ) {
    throw entityError(
      name,
      `table ${JSON.stringify(table)} must be an identifier (letters, digits, "_"), optionally schema-qualified ("shop.products").`,
    );
  }
  if (
    !isRecord(definition.schema) ||
    definition.schema.type !== 'object' ||
    !isRecord(definition.schema.properties)
  ) {
    throw entityError(
      name,
      "schema must be a JSON Schema object: { type: 'object', properties: { ... } } (TypeBox: Type.Object({ ... })).",
    );
  }
  // A plain JSON copy: TypeBox's symbols and any class instances go; what remains is what
  // Fastify, ajv and the OpenAPI document see.
  const schema = JSON.parse(JSON.stringify(definition.schema)) as Record<string, unknown> & {
    properties: Record<string, Record<string, unknown>>;
    required?: unknown;
  };
  delete schema.$id;
  delete schema.$schema;
  const required = new Set(
    Array.isArray(schema.required)
      ? schema.required.filter((r): r is string => typeof r === 'string')
      : [],
  );
  const columns: Record<string, unknown> = isRecord(definition.columns) ? definition.columns : {};
  for (const key of Object.keys(columns)) {
    if (!(key in schema.properties))
      throw entityError(name, `columns names '${key}', which is not a field of the schema.`);
  }

  const fields: EntityField[] = [];
  const seenColumns = new Map<string, string>();
  for (const [field, property] of Object.entries(schema.properties)) {
    if (!IDENTIFIER.test(field))
      throw entityError(
        name,
        `field '${field}' must be an identifier (letters, digits, "_", at most 63 characters).`,
      );
    if (!isRecord(property))
      throw entityError(name, `field '${field}' must have a JSON Schema object.`);
    const scalar = scalarOf(property);
    if (!scalar) {
      throw entityError(
        name,
        `field '${field}' must be of type integer, number, string, boolean, object or array (optionally nullable); found ${JSON.stringify(property).slice(0, 80)}.`,
      );
    }
    const kind = kindOf(scalar.type, scalar.format);
    const values = kind === 'string' ? enumOf(property) : undefined;
    const { precision, scale } =
      kind === 'decimal'
        ? decimalSize(name, field, property)
        : { precision: undefined, scale: undefined };
    const column = columns[field] ?? field;
    if (typeof column !== 'string' || !IDENTIFIER.test(column))
      throw entityError(name, `columns.${field} = ${JSON.stringify(column)} is not an identifier.`);
    const clash = seenColumns.get(column);
    if (clash)
      throw entityError(
        name,
        `fields '${clash}' and '${field}' map to the same column '${column}'.`,
      );
    seenColumns.set(column, field);
    fields.push({
      name: field,
      column,
      type: scalar.type,
      kind,
      nullable: scalar.nullable,
      required: required.has(field),
      format: scalar.format,
      ...(values ? { enum: Object.freeze(values) } : {}),
      ...(precision !== undefined ? { precision, scale } : {}),
      schema: property,
    });
    // A default is stored as a write would store it: one Kit would refuse in a body is a mistake here.
    const fallback = property.default;
    if (fallback !== undefined && fallback !== null) {
      const checked = fieldValue(fields[fields.length - 1] as EntityField, fallback);
      if (checked instanceof ValueFault)
        throw entityError(
          name,
          `field '${field}' has a default Kit would refuse: ${checked.detail}.`,
        );
    }
  }
  const byName = new Map(fields.map((f) => [f.name, f]));

  const primaryKey = definition.primaryKey ?? 'id';
  const pk = byName.get(primaryKey);
  if (!pk)
    throw entityError(
      name,
      `primary key '${primaryKey}' is not a field of the schema (set primaryKey or add an '${primaryKey}' field).`,
    );
  if (pk.nullable) throw entityError(name, `primary key '${primaryKey}' cannot be nullable.`);
  if (pk.type !== 'integer' && !(pk.type === 'string' && pk.format === 'uuid')) {
    throw entityError(
      name,
      `primary key '${primaryKey}' must be an integer (generated by the database) or a string with format 'uuid' (generated by Kit).`,
    );
  }

  const softDelete = definition.softDelete;
  if (softDelete !== undefined) {
    const field = byName.get(softDelete);
    if (!field) throw entityError(name, `softDelete '${softDelete}' is not a field of the schema.`);
    if (field.type !== 'boolean' || softDelete === primaryKey)
      throw entityError(name, `softDelete '${softDelete}' must be a boolean field.`);
  }

  const version = definition.version;
  if (version !== undefined) {
    const field = byName.get(version);
    if (!field) throw entityError(name, `version '${version}' is not a field of the schema.`);
    if (
      field.type !== 'integer' ||
      field.nullable ||
      version === primaryKey ||
      version === softDelete
    ) {
      throw entityError(
        name,
        `version '${version}' must be a non-nullable integer field other than the primary key and the soft-delete field.`,
      );
    }
  }

  const stamps: Record<string, string | undefined> = {};
  for (const option of ['createdAt', 'updatedAt'] as const) {
    const stamp = definition[option];
    if (stamp === undefined) continue;
    const field = byName.get(stamp);
    if (!field) throw entityError(name, `${option} '${stamp}' is not a field of the schema.`);
    if (
      field.kind !== 'date-time' ||
      stamp === primaryKey ||
      stamp === version ||
      stamp === softDelete
    ) {
      throw entityError(
        name,
        `${option} '${stamp}' must be a field { type: 'string', format: 'date-time' } other than the primary key, the version and the soft-delete field.`,
      );
    }
    stamps[option] = stamp;
  }
  if (stamps.createdAt !== undefined && stamps.createdAt === stamps.updatedAt)
    throw entityError(
      name,
      `createdAt and updatedAt cannot be the same field '${stamps.createdAt}'.`,
    );

  if (!Array.isArray(definition.writable))
    throw entityError(name, 'writable must be an array of field names (it may be empty).');
  const writable = [...new Set(definition.writable as readonly string[])];
  for (const field of writable) {
    if (!byName.has(field))
      throw entityError(name, `writable names '${field}', which is not a field of the schema.`);
    if (field === primaryKey)
      throw entityError(name, `the primary key '${field}' cannot be writable.`);
    if (field === softDelete)
      throw entityError(name, `the soft-delete field '${field}' cannot be writable.`);
    if (field === version)
      throw entityError(
        name,
        `the version field '${field}' cannot be writable: Kit increments it on every write.`,
      );
    if (field === stamps.createdAt || field === stamps.updatedAt)
      throw entityError(
        name,
        `the timestamp field '${field}' cannot be writable: Kit sets it from the database's clock.`,
      );
  }
  const references = referencesOf(
    name,
    table,
    definition.references,
    byName,
    new Set([primaryKey, softDelete, version, stamps.createdAt, stamps.updatedAt]),
  );
  const unique = uniqueKeys(name, definition.unique, new Set(writable));
  if (definition.history !== undefined && typeof definition.history !== 'boolean')
    throw entityError(
      name,
      `history must be true or false; found ${JSON.stringify(definition.history)}.`,
    );
  const redact = definition.redact ?? [];
  if (!Array.isArray(redact)) throw entityError(name, 'redact must be an array of field names.');
  for (const field of redact as readonly unknown[]) {
    if (typeof field !== 'string' || !byName.has(field))
      throw entityError(
        name,
        `redact names ${JSON.stringify(field)}, which is not a field of the schema.`,
      );
    if (field === primaryKey)
      throw entityError(
        name,
        `redact cannot name the primary key '${field}': the history is found by it.`,
      );
  }
  return Object.freeze({
    name,
    table,
    primaryKey,
    schema: schema as unknown as S,
    writable: Object.freeze(writable) as readonly W[],
    softDelete,
    version,
    createdAt: stamps.createdAt,
    updatedAt: stamps.updatedAt,
    fields: Object.freeze(fields),
    references,
    unique,
    history: definition.history === true,
    redact: Object.freeze([...new Set(redact as readonly string[])]),
    field: (fieldName: string) => byName.get(fieldName),
  });
}
