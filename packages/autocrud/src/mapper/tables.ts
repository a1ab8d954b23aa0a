// The start-up schema check: every entity's table exists with a compatible column per field, or
// start-up fails naming the table and column. With createTables, missing tables are created first.
import { sql, type ColumnMetadata, type TableMetadata } from 'kysely';
import type { Entity } from '../entity.js';
import type { Db, SqlFlavour } from './engine.js';
import { SchemaMismatchError } from './errors.js';
import { columnFamily, columnType, fits } from './flavour.js';

function splitTable(table: string): { schema: string | undefined; name: string } {
  const dot = table.indexOf('.');
  return dot === -1 ? { schema: undefined, name: table } : { schema: table.slice(0, dot), name: table.slice(dot + 1) };
}

function findTable(tables: readonly TableMetadata[], table: string, flavour: SqlFlavour): TableMetadata | undefined {
  const { schema, name } = splitTable(table);
  // SQLite names are case-insensitive; PostgreSQL's are exact once quoted, as Kysely quotes them.
  const same = (a: string) => (flavour === 'sqlite' ? a.toLowerCase() === name.toLowerCase() : a === name);
  const candidates = tables.filter((t) => !t.isView && same(t.name));
  if (schema !== undefined) return candidates.find((t) => t.schema === schema);
  if (flavour === 'sqlite') return candidates[0];
  // Unqualified on PostgreSQL: what the default search_path finds.
  return candidates.find((t) => t.schema === 'public') ?? (candidates.length === 1 ? candidates[0] : undefined);
}

async function createTable(db: Db, flavour: SqlFlavour, entity: Entity): Promise<void> {
  const { schema, name } = splitTable(entity.table);
  let builder = (schema ? db.schema.withSchema(schema) : db.schema).createTable(name).ifNotExists();
  for (const field of entity.fields) {
    const isKey = field.name === entity.primaryKey;
    builder = builder.addColumn(field.column, sql.raw(columnType(flavour, field)), (col) => {
      if (isKey) {
        col = col.primaryKey();
        if (field.type === 'integer' && flavour === 'postgres') col = col.generatedByDefaultAsIdentity();
        if (field.type === 'string' && flavour === 'postgres') col = col.defaultTo(sql`gen_random_uuid()`);
        return col;
      }
      if (field.name === entity.softDelete) return col.notNull().defaultTo(false);
      if (field.required && !field.nullable) col = col.notNull();
      const fallback = field.schema.default;
      if (fallback !== undefined && fallback !== null && typeof fallback !== 'object') col = col.defaultTo(fallback);
      return col;
    });
  }
  await builder.execute();
}

function describe(column: ColumnMetadata): string {
  return column.dataType === '' ? 'untyped' : column.dataType;
}

/**
 * Checks (and with `createTables` first creates) the tables of `entities`. Throws
 * `SchemaMismatchError` naming the first table or column that does not fit.
 */
export async function prepareTables(db: Db, flavour: SqlFlavour, entities: readonly Entity[], createTables: boolean): Promise<void> {
  if (entities.length === 0) return;
  let tables = await db.introspection.getTables();
  if (createTables) {
    const missing = entities.filter((e) => !findTable(tables, e.table, flavour));
    for (const entity of missing) await createTable(db, flavour, entity);
    if (missing.length > 0) tables = await db.introspection.getTables();
  }
  for (const entity of entities) {
    const table = findTable(tables, entity.table, flavour);
    if (!table) {
      throw new SchemaMismatchError(
        `Table '${entity.table}' (entity ${entity.name}) does not exist. Create it (for example with a migration), or pass createTables: true to addKitAutoCrud in development.`,
      );
    }
    for (const field of entity.fields) {
      const column = table.columns.find((c) => (flavour === 'sqlite' ? c.name.toLowerCase() === field.column.toLowerCase() : c.name === field.column));
      if (!column) {
        throw new SchemaMismatchError(
          `Table '${entity.table}' has no column '${field.column}' (entity ${entity.name}, field ${field.name}). Add the column, or map the field to an existing one with defineEntity({ columns: { ${field.name}: '<column>' } }).`,
        );
      }
      if (!fits(field, columnFamily(flavour, column.dataType), flavour)) {
        throw new SchemaMismatchError(
          `Column '${entity.table}.${column.name}' is ${describe(column)}, which cannot hold field ${entity.name}.${field.name} of type ${field.type}.`,
        );
      }
    }
  }
}
