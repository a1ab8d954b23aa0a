// The one statement that reads the rows related to a set of keys, for includes: every row whose
// field holds one of the keys (one bound parameter for all of them: PostgreSQL's `= any($1)`,
// SQLite's `json_each`, so the SQL text is the same whatever the number of keys and stays
// prepared), soft-deleted rows left out, and, for a one-to-many include, at most N rows per key
// with `row_number() over (partition by key order by primary key)`. No N+1: one statement per
// relation whatever the page size (docs/decisions.md, "AutoCrud includes").
import { sql, type Compilable, type Expression, type SelectExpression, type SqlBool } from 'kysely';
import type { Entity, EntityField } from '../../entity.js';
import type { Db, DynamicDatabase } from '../sql/engine.js';
import { encodeValue, type SqlDialect } from '../sql/dialect.js';
import { notDeleted, type Filter } from '../sql/query.js';
import { scopeConditions } from '../sql/scope.js';
import { Slot } from '../sql/statements.js';

/** The column that numbers each key's rows (by primary key) in a bounded read. */
const RANK = 'kit_rank';

/** The keys as the statement's one parameter: an array (PostgreSQL), a JSON array (SQLite). */
export function keySet(dialect: SqlDialect, field: EntityField, keys: readonly unknown[]): unknown {
  return dialect.bindList(keys.map((k) => encodeValue(dialect, field, k)));
}

/**
 * The rows of `entity` whose `field` holds one of the keys in the `keys` slot (see
 * {@link keySet}), ordered by that field and the primary key; with `limited`, at most the `perKey`
 * slot's number of rows per key, the first by primary key. `scope`: the caller's conditions on
 * the related rows (slotted, see scope.ts), in the statement, before the bound is counted.
 */
export function relatedQuery(
  db: Db,
  dialect: SqlDialect,
  entity: Entity,
  selection: readonly SelectExpression<DynamicDatabase, string>[],
  field: EntityField,
  limited: boolean,
  scope: readonly Filter[] = [],
): Compilable {
  const pk = entity.field(entity.primaryKey) as EntityField;
  const column = sql.ref(`${entity.table}.${field.column}`);
  const keys = new Slot('keys');
  const among: Expression<SqlBool> = dialect.inList(column, keys);
  const rows = db.selectFrom(entity.table).where((eb) => {
    const live = notDeleted(eb, dialect, entity);
    const conditions = [
      among,
      ...(live ? [live] : []),
      ...scopeConditions(eb, dialect, entity, scope, entity.table),
    ];
    return conditions.length === 1 ? among : eb.and(conditions);
  });
  if (!limited)
    return rows
      .select([...selection])
      .orderBy(column)
      .orderBy(sql.ref(`${entity.table}.${pk.column}`));
  const ranked = rows.select([
    ...selection,
    sql<number>`row_number() over (partition by ${column} order by ${sql.ref(`${entity.table}.${pk.column}`)})`.as(
      RANK,
    ),
  ]);
  return db
    .selectFrom(ranked.as('kit_related'))
    .selectAll()
    .where(sql.ref(RANK), '<=', new Slot('perKey') as unknown as number)
    .orderBy(sql.ref(field.name))
    .orderBy(sql.ref(RANK));
}
