// PostgreSQL's SQL for a single write's changes inside its own statement (PGlite speaks it too):
// a change as expressions over the write's CTE rows, text arrays and JSON text built with
// PostgreSQL's array and JSON functions, so that each value reads as Kit's form of it does.
import { sql, type Expression, type RawBuilder } from 'kysely';
import type { Entity, EntityField } from '../../../entity.js';
import type {
  ChangeContext,
  ChangeOperation,
  ChangeSql,
  InlineChangeSql,
} from '../../sql/change-sql.js';
import { differs, jsonText } from './columns.js';

/** A text constant (names are the entity's own; quotes doubled all the same). */
function literal(value: string): RawBuilder<string> {
  return sql.raw<string>(`'${value.replace(/'/g, "''")}'::text`);
}

const NULL_TEXT = sql<string | null>`null::text`;

/** `ChangeSql` over the CTE's `kit_old` (`kit_o_<i>`: the stored row before) and `kit_new` (`kit_n_<i>`: after). */
function over(
  entity: Entity,
  operation: ChangeOperation,
  bind: (name: string, value: (context: ChangeContext) => unknown) => Expression<unknown>,
): ChangeSql {
  const fields = entity.fields;
  const index = new Map(fields.map((f, i) => [f.name, i]));
  const hasBefore = operation !== 'create';
  const hasAfter = operation !== 'delete';
  const whole = operation === 'create' || operation === 'delete';
  const ref = (which: 'before' | 'after', i: number) =>
    sql.ref(which === 'before' ? `kit_old.kit_o_${i}` : `kit_new.kit_n_${i}`);
  const field = (i: number) => fields[i] as EntityField;
  // A row holds a field unless it is NULL on a field that is not nullable (decodeRow leaves it out).
  const holds = (which: 'before' | 'after', i: number): Expression<boolean> | undefined =>
    field(i).nullable ? undefined : sql<boolean>`(${ref(which, i)} is not null)`;
  const and = (
    conditions: ReadonlyArray<Expression<boolean> | undefined>,
  ): Expression<boolean> | undefined => {
    const present = conditions.filter((c): c is Expression<boolean> => c !== undefined);
    return present.length === 0
      ? undefined
      : present.length === 1
        ? present[0]
        : sql<boolean>`(${sql.join(present, sql` and `)})`;
  };
  const not = (c: Expression<boolean> | undefined): Expression<boolean> | undefined =>
    c === undefined ? sql<boolean>`false` : sql<boolean>`(not ${c})`;
  const indices = (names: readonly string[]) =>
    names.map((n) => index.get(n)).filter((i): i is number => i !== undefined);
  const whichRow: 'before' | 'after' = operation === 'create' ? 'after' : 'before';
  const changedOf = (i: number) => differs(field(i), ref('before', i), ref('after', i));
  // The fields of `names` a change touched, each with its condition, in the order Kit lists them.
  const touched = (
    names: readonly string[],
    order: 'fields' | 'before-first',
  ): Array<[number, Expression<boolean> | undefined]> => {
    const all = indices(names);
    if (whole) return all.map((i) => [i, holds(whichRow, i)]);
    if (order === 'fields') return all.map((i) => [i, changedOf(i)]);
    // The row before's keys, then those only the row after holds (outbox-sink.ts, the union of both rows' keys).
    const first = all.map((i): [number, Expression<boolean> | undefined] => [
      i,
      and([holds('before', i), changedOf(i)]),
    ]);
    const only = all
      .filter((i) => !field(i).nullable)
      .map((i): [number, Expression<boolean> | undefined] => [
        i,
        and([not(holds('before', i)), changedOf(i)]),
      ]);
    return [...first, ...only];
  };
  const textArray = (
    items: ReadonlyArray<[number, Expression<boolean> | undefined]>,
    value: (i: number) => Expression<string>,
  ): RawBuilder<string[]> => {
    if (items.length === 0) return sql<string[]>`'{}'::text[]`;
    const elements = items.map(([i, c]) =>
      c === undefined ? value(i) : sql`case when ${c} then ${value(i)} end`,
    );
    return sql<string[]>`array_remove(array[${sql.join(elements)}]::text[], null)`;
  };
  const pk = entity.field(entity.primaryKey) as EntityField;
  const keyField = index.get(pk.name) as number;
  const keyRef = ref(hasAfter ? 'after' : 'before', keyField);
  const keyJson = jsonText(pk, keyRef);
  const version = entity.version === undefined ? undefined : index.get(entity.version);
  return {
    entity: entity.name,
    operation,
    fields: fields.map((f) => f.name),
    keyText: sql<string>`((${keyJson})::jsonb #>> '{}')`,
    keyJson,
    versionBefore:
      version !== undefined && hasBefore
        ? sql<number>`(${ref('before', version)})::integer`
        : sql<null>`null::integer`,
    versionAfter:
      version !== undefined && hasAfter
        ? sql<number>`(${ref('after', version)})::integer`
        : sql<null>`null::integer`,
    changed: (names, order = 'fields') =>
      textArray(touched(names, order), (i) => literal(field(i).name)),
    object: (which, names, only) => {
      if (which === 'before' ? !hasBefore : !hasAfter) return NULL_TEXT;
      const keep = new Set(indices(names));
      const items = (
        only
          ? touched(only.names, only.order ?? 'fields')
          : indices(names).map((i): [number, Expression<boolean> | undefined] => [i, undefined])
      )
        .filter(([i]) => keep.has(i))
        .map(([i, c]): [number, Expression<boolean> | undefined] => [i, and([c, holds(which, i)])]);
      if (items.length === 0) return sql<string>`'{}'::text`;
      const entry = (i: number) =>
        sql<string>`(${literal(`${JSON.stringify(field(i).name)}:`)} || coalesce(${jsonText(field(i), ref(which, i))}, 'null'))`;
      return sql<string>`('{' || array_to_string(${textArray(items, entry)}, ',') || '}')`;
    },
    text: literal,
    bind,
  };
}

/**
 * PostgreSQL's change expressions (see `SqlDialect.changeSql`).
 *
 * @example
 * ```ts
 * const change = postgresChanges.over(entity, 'create', (name) => sql`${new Slot(name)}`);
 * ```
 */
export const postgresChanges: InlineChangeSql = {
  over,
  json: (text: Expression<string | null>): RawBuilder<unknown> => sql`(${text})::jsonb`,
  jsonArray: (list: Expression<string[]>): RawBuilder<unknown> => sql`to_jsonb(${list})`,
  text: (value: Expression<unknown>): RawBuilder<string | null> =>
    sql<string | null>`(${value})::text`,
  uuid: (): RawBuilder<string> => sql<string>`gen_random_uuid()::text`,
  listText: (list: Expression<string[]>): RawBuilder<string> => sql<string>`to_json(${list})::text`,
  nonEmpty: (list: Expression<string[]>): RawBuilder<boolean> =>
    sql<boolean>`cardinality(${list}) > 0`,
};
