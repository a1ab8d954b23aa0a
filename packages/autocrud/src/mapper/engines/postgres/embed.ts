// Includes inside the entity's own statement on PostgreSQL and PGlite, as PostgREST embeds: each
// included relation is a correlated subquery in the SELECT list that answers JSON. A many-to-one
// relation is the related row (`row_to_json`) or NULL; a one-to-many relation is
// `[rows, cut]`: its first `limit` rows by primary key (`json_agg`) and whether there were more,
// read as `limit + 1` rows and counted in SQL. Soft-deleted rows are left out in the subquery. The
// related rows' fields are selected through the same read expressions as a plain read (an int64
// or a decimal as its text, a timestamp as its ISO text, JSON as its text), so that decoding the
// embedded JSON through each column's codec (decode.ts) answers every value exactly as a read of
// the row does. One nested level is a subquery inside the subquery. Knows nothing of HTTP; SQLite
// keeps one statement per relation (reads/includes.ts; docs/decisions.md, "AutoCrud includes").
import { expressionBuilder, sql, type AliasedRawBuilder, type RawBuilder } from 'kysely';
import type { Entity, EntityField } from '../../../entity.js';
import type { ColumnCodec } from '../../sql/columns.js';
import { decodeRow } from '../../sql/decode.js';
import type { EmbedNode, IncludeEmbedding } from '../../sql/embedding.js';
import type { SqlDialect } from '../../sql/dialect.js';
import type { DynamicDatabase } from '../../sql/engine.js';
import {
  scopeConditions,
  scopeFilters,
  slotScope,
  type Scope,
  type SlottedScope,
} from '../../sql/scope.js';
import { Slot } from '../../sql/statements.js';
import { postgresCodec } from './columns.js';

type Row = Record<string, unknown>;

const codecsOf = new WeakMap<Entity, readonly ColumnCodec[]>();

/** The PostgreSQL codecs of an entity's fields, once per entity. */
function codecs(entity: Entity): readonly ColumnCodec[] {
  let found = codecsOf.get(entity);
  if (!found) codecsOf.set(entity, (found = entity.fields.map((f) => postgresCodec(f))));
  return found;
}

/** The slot of a one-to-many node's limit, by the node's path. */
function limitSlot(path: string): string {
  return `limit:${path}`;
}

/** The caller's scope on a node's rows, slotted under the node's path (see scope.ts). */
function nodeScope(d: SqlDialect, node: EmbedNode, path: string): SlottedScope {
  const entity = node.source.entity;
  return slotScope(
    d,
    entity,
    scopeFilters(entity, node.scope as Scope | undefined),
    `scope:${path}:`,
  );
}

/** What makes two include trees the same statement: the paths, kinds and scope shapes (the limits and scope values are bound). */
function embedShape(d: SqlDialect, nodes: readonly EmbedNode[], prefix = ''): string {
  return nodes
    .map((n) => {
      const path = pathOf(prefix, n);
      return `${n.name}:${n.kind}[${n.scope ? nodeScope(d, n, path).shape : ''}](${embedShape(d, n.children, path)})`;
    })
    .join(',');
}

/** The limits and scope values of an include tree, by slot name, to bind with the statement. */
function embedValues(
  d: SqlDialect,
  nodes: readonly EmbedNode[],
  values: Record<string, unknown>,
  prefix = '',
): Record<string, unknown> {
  for (const node of nodes) {
    const path = pathOf(prefix, node);
    // The routes always bound a one-to-many include; without a bound, one this large keeps one SQL text.
    if (node.kind === 'many') values[limitSlot(path)] = node.limit ?? Number.MAX_SAFE_INTEGER - 1;
    if (node.scope) Object.assign(values, nodeScope(d, node, path).values);
    embedValues(d, node.children, values, path);
  }
  return values;
}

/** `alias.column` is not soft-deleted, or nothing to check. */
function live(entity: Entity, alias: string): RawBuilder<unknown> | undefined {
  const field = entity.softDelete === undefined ? undefined : entity.field(entity.softDelete);
  if (!field) return undefined;
  const column = sql.ref(`${alias}.${field.column}`);
  const isFalse = sql`${column} = ${postgresCodec(field).encode(false)}`;
  return field.nullable ? sql`(${isFalse} or ${column} is null)` : isFalse;
}

/** The correlated subquery of one node, on rows of `parent` known in the enclosing query as `outer`. */
function subquery(
  d: SqlDialect,
  parent: Entity,
  outer: string,
  node: EmbedNode,
  path: string,
  depth: number,
): RawBuilder<unknown> {
  const entity = node.source.entity;
  const alias = `kit_${depth}`;
  const key = (e: Entity) => e.field(e.primaryKey) as EntityField;
  const [inner, outerColumn] =
    node.kind === 'one'
      ? [key(entity), parent.field(node.field) as EntityField]
      : [entity.field(node.field) as EntityField, key(parent)];
  const match = sql`${sql.ref(`${alias}.${inner.column}`)} = ${sql.ref(`${outer}.${outerColumn.column}`)}`;
  const alive = live(entity, alias);
  // The caller's scope on the included entity, inside the subquery: rows outside it are never read.
  const scoped = node.scope
    ? scopeConditions(
        expressionBuilder<DynamicDatabase, string>(),
        d,
        entity,
        nodeScope(d, node, path).filters,
        alias,
      )
    : [];
  const where = sql.join([match, ...(alive ? [alive] : []), ...scoped], sql` and `);
  const select = sql.join(columns(d, entity, alias, node.children, path, depth + 1));
  const from = sql`${sql.ref(entity.table)} as ${sql.ref(alias)}`;
  if (node.kind === 'one')
    return sql`(select row_to_json(kit_r) from (select ${select} from ${from} where ${where}) kit_r)`;
  const pk = sql.ref(`${alias}.${key(entity).column}`);
  const limit = sql`${new Slot(limitSlot(path))}::int8`;
  // One row past the limit tells a cut from an exact fit; the rows are numbered by primary key.
  return sql`(select json_build_array(coalesce(json_agg(kit_k.j order by kit_k.n) filter (where kit_k.n <= ${limit}), '[]'::json), count(*) > ${limit}) from (select row_to_json(kit_r) as j, row_number() over (order by kit_r.${sql.ref(entity.primaryKey)}) as n from (select ${select} from ${from} where ${where} order by ${pk} limit ${limit} + 1) kit_r) kit_k)`;
}

/** The entity's fields (read as a plain read reads them) and each node's subquery, named as answered. */
function columns(
  d: SqlDialect,
  entity: Entity,
  alias: string,
  nodes: readonly EmbedNode[],
  prefix: string,
  depth: number,
): RawBuilder<unknown>[] {
  const list: RawBuilder<unknown>[] = entity.fields.map(
    (f, i) =>
      sql`${(codecs(entity)[i] as ColumnCodec).read(`${alias}.${f.column}`)} as ${sql.ref(f.name)}`,
  );
  for (const node of nodes)
    list.push(
      sql`${subquery(d, entity, alias, node, pathOf(prefix, node), depth)} as ${sql.ref(node.name)}`,
    );
  return list;
}

function pathOf(prefix: string, node: EmbedNode): string {
  return prefix === '' ? node.name : `${prefix}.${node.name}`;
}

/**
 * The SELECT list's extra columns for `nodes` on the entity's statement (its table unaliased), one
 * per node, named by the node, holding JSON text (decoded by {@link decodeEmbedded}).
 */
function embedSelection(
  d: SqlDialect,
  entity: Entity,
  nodes: readonly EmbedNode[],
): AliasedRawBuilder<unknown, string>[] {
  // As text at the top: parsed here, the same on pg and PGlite whatever their type parsers do.
  return nodes.map((node) =>
    sql`${subquery(d, entity, entity.table, node, node.name, 1)}::text`.as(node.name),
  );
}

/** Sets each node's rows (and cut marker) on `row`, from the JSON the node's column (or object) holds. */
function attach(row: Row, from: Row, nodes: readonly EmbedNode[]): void {
  for (const node of nodes) {
    const raw = from[node.name];
    const value: unknown = typeof raw === 'string' ? JSON.parse(raw) : raw;
    const entity = node.source.entity;
    if (node.kind === 'one') {
      row[node.name] =
        value === null || value === undefined
          ? null
          : decodeIncluded(entity, value as Row, node.children);
      continue;
    }
    const [rows, cut] = value as [Row[], boolean];
    row[node.name] = rows.map((r) => decodeIncluded(entity, r, node.children));
    if (cut && node.cutName !== undefined) row[node.cutName] = true;
  }
}

function decodeIncluded(entity: Entity, raw: Row, nodes: readonly EmbedNode[]): Row {
  const row = decodeRow(entity, codecs(entity), raw);
  attach(row, raw, nodes);
  return row;
}

/** Sets the included rows on `row` (already decoded) from its statement's raw row `raw`. */
function decodeEmbedded(row: Row, raw: Row, nodes: readonly EmbedNode[]): Row {
  attach(row, raw, nodes);
  return row;
}

/**
 * PostgreSQL's embedding of related rows (see `SqlDialect.embedding`), its scopes' values bound as `dialect` binds them.
 *
 * @example
 * ```ts
 * const query = db.selectFrom('orders').select(postgresEmbedding(postgresDialect).selection(Order, nodes));
 * ```
 */
export function postgresEmbedding(dialect: SqlDialect): IncludeEmbedding {
  return {
    shape: (nodes) => embedShape(dialect, nodes),
    values: (nodes, values) => embedValues(dialect, nodes, values),
    selection: (entity, nodes) => embedSelection(dialect, entity, nodes),
    decode: decodeEmbedded,
  };
}
