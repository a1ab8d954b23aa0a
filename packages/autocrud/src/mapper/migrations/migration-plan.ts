// What a migration must do to bring a database to the entities: the tables and columns it lacks,
// as the SQL `createTables` itself would run (tables.ts builds both), or a refusal listing every
// change Kit will not make by itself. Kit only adds: a table, a column that is nullable or has a
// default. Anything that loses data or fails on a table with rows while an older version of the
// service still runs (a drop, a type change, a NOT NULL column without a default) is the user's
// to write, deliberately (docs/decisions.md, "Schema migrations").
import { sql } from 'kysely';
import { KitError } from '@kit/core';
import type { Entity, EntityField } from '../../entity.js';
import { kindLabel } from '../sql/columns.js';
import type { Db } from '../sql/engine.js';
import type { SqlDialect } from '../sql/dialect.js';
import { outboxMigration } from '../outbox/outbox-table.js';
import {
  checkReferences,
  columnDefault,
  columnDefinition,
  createTableBuilder,
  findColumn,
  findTable,
  referenceIndexBuilders,
  referenceOrder,
  splitTable,
} from '../schema/tables.js';

/** The statements of a migration and what they do, in words (for the file's header and the slug). */
interface MigrationPlan {
  /** Each statement, without its `;`. Empty when the database already fits the entities. */
  readonly statements: readonly string[];
  /** One line per statement: `create table books`, `add column books.published_at`. */
  readonly changes: readonly string[];
  /** Columns no field names, left alone (Kit never drops one). */
  readonly untouched: readonly string[];
}

/** Whether a new column for `field` would be NOT NULL with no default: it cannot be added to a table with rows. */
function needsValue(entity: Entity, field: EntityField): boolean {
  if (field.name === entity.softDelete || field.name === entity.version) return false;
  return field.required && !field.nullable && columnDefault(field) === undefined;
}

/**
 * Compares the database `db` speaks to with `entities` and plans the migration between them.
 * Throws `KIT_ERR_AUTOCRUD_MIGRATION` listing every destructive change the entities would need.
 */
export async function planMigration(
  db: Db,
  dialect: SqlDialect,
  entities: readonly Entity[],
  own: { readonly outbox?: boolean } = {},
): Promise<MigrationPlan> {
  const tables = await db.introspection.getTables();
  const catalogTypes =
    entities.length > 0
      ? await dialect.columnTypes(
          db,
          entities.map((e) => e.table),
        )
      : undefined;
  const statements: string[] = [];
  const changes: string[] = [];
  const untouched: string[] = [];
  const refused: string[] = [];
  checkReferences(entities);
  for (const entity of referenceOrder(entities)) {
    const table = findTable(tables, entity.table, dialect);
    if (!table) {
      statements.push(createTableBuilder(db, dialect, entity).compile().sql);
      changes.push(`create table ${entity.table}`);
      for (const { index, builder } of referenceIndexBuilders(db, entity)) {
        statements.push(builder.compile().sql);
        changes.push(`create index ${index}`);
      }
      continue;
    }
    const { schema, name } = splitTable(entity.table);
    for (const field of entity.fields) {
      const column = findColumn(table, field, dialect);
      const where = `${entity.table}.${field.column} (${entity.name}.${field.name})`;
      if (!column) {
        if (field.name === entity.primaryKey) {
          refused.push(
            `${where}: the table has no column for the primary key. Kit does not add a key to a table that has rows: write that migration yourself.`,
          );
        } else if (needsValue(entity, field)) {
          refused.push(
            `${where}: a new column for a required field with no default would be NOT NULL on a table that may have rows, and an older version still running would fail to insert. Declare the field nullable (type: [..., 'null']) or give it a default; backfill it; make it NOT NULL in a migration of your own once every row has a value.`,
          );
        } else {
          const { type, define } = columnDefinition(dialect, entity, field);
          statements.push(
            (schema ? db.schema.withSchema(schema) : db.schema)
              .alterTable(name)
              .addColumn(field.column, sql.raw(type), define)
              .compile().sql,
          );
          changes.push(`add column ${entity.table}.${field.column}`);
          const reference = referenceIndexBuilders(db, entity).find((i) => i.field === field.name);
          if (reference) {
            statements.push(reference.builder.compile().sql);
            changes.push(`create index ${reference.index}`);
          }
        }
        continue;
      }
      const type =
        catalogTypes?.get(`${table.schema ?? ''}.${table.name}.${column.name}`) ??
        dialect.declaredType(column.dataType);
      const why = dialect.refusal(field, type);
      if (why !== undefined) {
        refused.push(
          `${where}: the column is ${type.declared}, which cannot hold a ${kindLabel(field)}${why ? ` (${why})` : ''}. Kit does not change a column's type (it can lose values, and rewrites the table under a lock): add a new column for the new type, copy the values over, move the field to it (columns: { ${field.name}: '<new column>' }), and drop the old one later (expand, then contract).`,
        );
      }
    }
    const named = new Set(entity.fields.map((f) => dialect.foldName(f.column)));
    for (const column of table.columns) {
      if (named.has(dialect.foldName(column.name))) continue;
      if (!column.isNullable && !column.hasDefaultValue && !column.isAutoIncrementing) {
        refused.push(
          `${entity.table}.${column.name}: no field of ${entity.name} names this column, and it is NOT NULL without a default, so every row Kit inserts would be refused. Kit never drops a column: give it a default or DROP NOT NULL in a migration of your own, or drop it there once no deployed version reads it (or declare a field for it).`,
        );
      } else {
        untouched.push(`${entity.table}.${column.name}`);
      }
    }
  }
  if (own.outbox) {
    const outbox = outboxMigration(db, dialect, tables);
    statements.push(...outbox.statements);
    changes.push(...outbox.changes);
  }
  if (refused.length > 0) {
    throw new KitError(
      'KIT_ERR_AUTOCRUD_MIGRATION',
      `Kit will not write this migration: the entities need changes Kit never makes by itself, because they lose data or break a version of the service that still runs:\n- ${refused.join('\n- ')}\nNothing was written.`,
    );
  }
  return { statements, changes, untouched };
}
