// The start-up schema check: every entity's table exists with a column per field that holds the
// field's values exactly (columns.ts), or start-up fails naming the table and column and what to
// declare instead. With createTables, missing tables are created first.
import {
  sql,
  type ColumnDefinitionBuilderCallback,
  type CreateIndexBuilder,
  type CreateTableBuilder,
  type TableMetadata,
} from 'kysely';
import { referenceFault, type Entity, type EntityField } from '../../entity.js';
import { ValueFault } from '../../values/kinds.js';
import { fieldValue } from '../../values/fields.js';
import { kindLabel } from '../sql/columns.js';
import type { Db } from '../sql/engine.js';
import type { SqlDialect } from '../sql/dialect.js';
import { SchemaMismatchError } from '../errors.js';

export function splitTable(table: string): { schema: string | undefined; name: string } {
  const dot = table.indexOf('.');
  return dot === -1
    ? { schema: undefined, name: table }
    : { schema: table.slice(0, dot), name: table.slice(dot + 1) };
}

export function findTable(
  tables: readonly TableMetadata[],
  table: string,
  dialect: SqlDialect,
): TableMetadata | undefined {
  const { schema, name } = splitTable(table);
  const folded = dialect.foldName(name);
  const same = (a: string) => dialect.foldName(a) === folded;
  const candidates = tables.filter((t) => !t.isView && same(t.name));
  if (schema !== undefined) return candidates.find((t) => t.schema === schema);
  return dialect.unqualified(candidates);
}

/**
 * The column `createTables` and the migration writer declare for `field`: its type (columns.ts's
 * `columnType`, the one map from kind to column type), key, NOT NULL and default. Throws
 * `SchemaMismatchError` where the dialect has no column that holds the field exactly.
 */
export function columnDefinition(
  dialect: SqlDialect,
  entity: Entity,
  field: EntityField,
): { type: string; define: ColumnDefinitionBuilderCallback } {
  const type = dialect.columnType(field);
  if (type === undefined) {
    throw new SchemaMismatchError(
      `No column can be made for ${entity.name}.${field.name} of type ${kindLabel(field)}: ${dialect.refusal(field, { declared: '', family: 'other' })}.`,
    );
  }
  const isKey = field.name === entity.primaryKey;
  const reference = entity.references.find((r) => r.field === field.name);
  const define: ColumnDefinitionBuilderCallback = (col) => {
    if (reference) {
      const target = reference.target();
      const key = target.field(target.primaryKey);
      // Column-level REFERENCES: the one form CREATE TABLE and ALTER TABLE ADD COLUMN share on every engine.
      col = col
        .references(`${target.table}.${key?.column ?? target.primaryKey}`)
        .onDelete(reference.onDelete);
    }
    if (isKey) {
      col = col.primaryKey();
      return dialect.keyColumn(col, field);
    }
    if (field.name === entity.softDelete) return col.notNull().defaultTo(false);
    if (field.name === entity.version) return col.notNull().defaultTo(1);
    // Kit sets them on every write; the default covers rows written by something else.
    if (field.name === entity.createdAt || field.name === entity.updatedAt)
      return col.notNull().defaultTo(dialect.clock());
    if (field.required && !field.nullable) col = col.notNull();
    const fallback = columnDefault(field);
    if (fallback !== undefined) col = col.defaultTo(fallback);
    // A CHECK rather than a PostgreSQL enum type: the same on every engine, and a value is added by replacing a constraint (docs/decisions.md).
    if (field.enum !== undefined)
      col = col.check(
        sql`${sql.ref(field.column)} in (${sql.join(field.enum.map((v) => sql.lit(v)))})`,
      );
    return col;
  };
  return { type, define };
}

/** The field's schema `default` in Kit's form, as a write would store it (a SQLite text column compares it as text); `undefined` when none. */
export function columnDefault(field: EntityField): string | number | boolean | undefined {
  const fallback =
    field.schema.default === undefined || field.schema.default === null
      ? undefined
      : fieldValue(field, field.schema.default);
  if (fallback === undefined || fallback instanceof ValueFault) return undefined;
  // A JSON field's default is stored as its text, as a write stores the value.
  return typeof fallback === 'object'
    ? JSON.stringify(fallback)
    : (fallback as string | number | boolean);
}

/** `CREATE TABLE` for an entity, as `createTables` runs it and the migration writer writes it. */
export function createTableBuilder(
  db: Db,
  dialect: SqlDialect,
  entity: Entity,
): CreateTableBuilder<string, never> {
  const { schema, name } = splitTable(entity.table);
  let builder = (schema ? db.schema.withSchema(schema) : db.schema).createTable(name);
  for (const field of entity.fields) {
    const { type, define } = columnDefinition(dialect, entity, field);
    builder = builder.addColumn(field.column, sql.raw(type), define);
  }
  for (const key of entity.unique) {
    const columns = key.map((f) => entity.field(f)?.column ?? f);
    // PostgreSQL's own name for it (table_columns_key), so a hand-written migration and Kit's agree.
    builder = builder.addUniqueConstraint(
      uniqueConstraintName(entity, columns),
      columns as never[],
    );
  }
  return builder;
}

/** The name of a unique key's constraint: `<table>_<columns>_key`, at most 63 characters. */
function uniqueConstraintName(entity: Entity, columns: readonly string[]): string {
  return `${splitTable(entity.table).name}_${columns.join('_')}_key`.slice(0, 63);
}

// Indexes Kit's own tables declare beyond their references (the change history's), by entity.
const declaredIndexes = new WeakMap<Entity, { index: string; columns: readonly string[] }[]>();

/** Declares an index `createTables` and the migration writer make with `entity`'s table (for Kit's own tables). */
export function declareIndex(entity: Entity, index: string, columns: readonly string[]): void {
  const list = declaredIndexes.get(entity) ?? [];
  list.push({ index, columns });
  declaredIndexes.set(entity, list);
}

/**
 * The index on each referencing column (PostgreSQL and SQLite index the referenced key, never the
 * referencing column), then the indexes declared with `declareIndex`.
 */
export function referenceIndexBuilders(
  db: Db,
  entity: Entity,
): { field: string; index: string; builder: CreateIndexBuilder }[] {
  const { schema, name } = splitTable(entity.table);
  const on = () => (schema ? db.schema.withSchema(schema) : db.schema);
  const references = entity.references.map((reference) => {
    const column = entity.field(reference.field)?.column ?? reference.field;
    const index = `${name}_${column}_idx`.slice(0, 63);
    return {
      field: reference.field,
      index,
      builder: on().createIndex(index).on(name).column(column),
    };
  });
  const declared = (declaredIndexes.get(entity) ?? []).map(({ index, columns }) => ({
    field: columns.join(','),
    index,
    builder: on()
      .createIndex(index)
      .on(name)
      .columns([...columns]),
  }));
  return [...references, ...declared];
}

/** Entities ordered so a referenced table is created before the tables referring to it (a cycle keeps the declared order). */
export function referenceOrder(entities: readonly Entity[]): Entity[] {
  const ordered: Entity[] = [];
  const visiting = new Set<Entity>();
  const visit = (entity: Entity): void => {
    if (ordered.includes(entity) || visiting.has(entity)) return;
    visiting.add(entity);
    for (const reference of entity.references) {
      const target = reference.target();
      if (entities.includes(target)) visit(target);
    }
    ordered.push(entity);
  };
  for (const entity of entities) visit(entity);
  return ordered;
}

async function createTable(db: Db, dialect: SqlDialect, entity: Entity): Promise<void> {
  await createTableBuilder(db, dialect, entity).ifNotExists().execute();
  for (const { builder } of referenceIndexBuilders(db, entity))
    await builder.ifNotExists().execute();
}

/** The table's column for `field` (SQLite names are case-insensitive). */
export function findColumn(
  table: TableMetadata,
  field: EntityField,
  dialect: SqlDialect,
): TableMetadata['columns'][number] | undefined {
  const folded = dialect.foldName(field.column);
  return table.columns.find((c) => dialect.foldName(c.name) === folded);
}

/**
 * Every reference given as a function returns an entity whose key the field can hold. Throws
 * `SchemaMismatchError` naming the field.
 */
export function checkReferences(entities: readonly Entity[]): void {
  for (const entity of entities) {
    for (const reference of entity.references) {
      const target: unknown = reference.target();
      const field = entity.field(reference.field);
      if (!isEntity(target))
        throw new SchemaMismatchError(
          `${entity.name}.${reference.field}: its references function returned ${String(target)}, not an entity made by defineEntity.`,
        );
      const fault = field ? referenceFault(entity.name, field, target) : undefined;
      if (fault) throw new SchemaMismatchError(fault);
    }
  }
}

function isEntity(value: unknown): value is Entity {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Entity).field === 'function' &&
    typeof (value as Entity).table === 'string'
  );
}

/** What the start-up check's messages advise for a table or column the database lacks. */
const MIGRATE =
  "Write the migration that adds it: writeMigration({ url, entities, dir }) from @kit/autocrud writes it for review, and addKitAutoCrud(app, url, { migrate: 'apply', migrationsDir: dir }) applies it at start-up (docs/autocrud.md, Schema migrations)";

/**
 * Checks (and with `createTables` first creates) the tables of `entities`. Throws
 * `SchemaMismatchError` naming the first table or column that does not fit.
 */
export async function prepareTables(
  db: Db,
  dialect: SqlDialect,
  entities: readonly Entity[],
  createTables: boolean,
): Promise<void> {
  if (entities.length === 0) return;
  checkReferences(entities);
  let tables = await db.introspection.getTables();
  for (const entity of entities) {
    for (const reference of entity.references) {
      const target = reference.target();
      if (
        !(createTables && entities.includes(target)) &&
        !findTable(tables, target.table, dialect)
      ) {
        throw new SchemaMismatchError(
          `Table '${target.table}' (entity ${target.name}, which ${entity.name}.${reference.field} references) does not exist. ${MIGRATE}; or serve ${target.name} from this addKitAutoCrud too, with createTables.`,
        );
      }
    }
  }
  if (createTables && entities.some((e) => !findTable(tables, e.table, dialect))) {
    tables = await dialect.creatingTables(db, async (db) => {
      const present = await db.introspection.getTables();
      const missing = referenceOrder(entities).filter((e) => !findTable(present, e.table, dialect));
      for (const entity of missing) await createTable(db, dialect, entity);
      return missing.length > 0 ? db.introspection.getTables() : present;
    });
  }
  const catalogTypes = await dialect.columnTypes(
    db,
    entities.map((e) => e.table),
  );
  for (const entity of entities) {
    const table = findTable(tables, entity.table, dialect);
    if (!table) {
      throw new SchemaMismatchError(
        `Table '${entity.table}' (entity ${entity.name}) does not exist. ${MIGRATE}; or pass createTables: true to addKitAutoCrud in development.`,
      );
    }
    for (const field of entity.fields) {
      const column = findColumn(table, field, dialect);
      if (!column) {
        throw new SchemaMismatchError(
          `Table '${entity.table}' has no column '${field.column}' (entity ${entity.name}, field ${field.name}). ${MIGRATE}; or map the field to an existing column with defineEntity({ columns: { ${field.name}: '<column>' } }).`,
        );
      }
      const type =
        catalogTypes?.get(`${table.schema ?? ''}.${table.name}.${column.name}`) ??
        dialect.declaredType(column.dataType);
      const refused = dialect.refusal(field, type);
      if (refused !== undefined) {
        throw new SchemaMismatchError(
          `Column '${entity.table}.${column.name}' is ${type.declared}, which cannot hold field ${entity.name}.${field.name} of type ${kindLabel(field)}${refused ? `: ${refused}` : ''}.`,
        );
      }
    }
  }
}
