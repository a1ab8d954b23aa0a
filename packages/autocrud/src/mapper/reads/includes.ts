// Related rows attached to a page (or one row) of an entity on SQLite (PostgreSQL and PGlite
// embed them in the entity's own statement: embed.ts), one statement per relation of the
// include tree whatever the number of rows: a many-to-one relation reads its targets by primary
// key, a one-to-many relation its children by the referencing field with a bound per parent
// (see related.ts). Sibling relations run side by side; a nested relation runs on the rows its
// parent relation read. Knows nothing of HTTP: the routes say what to include.
import type { Entity } from '../../entity.js';
import type { Scope } from '../sql/query.js';

type Row = Record<string, unknown>;

/**
 * Where an include reads its rows: a repository (`EntityRepository.related`), and its entity.
 *
 * @example
 * ```ts
 * const customers: RelatedSource = crud.repository(Customer);
 * ```
 */
export interface RelatedSource {
  readonly entity: Entity;
  related(
    field: string,
    keys: readonly unknown[],
    options: { readonly perKey?: number; readonly signal?: AbortSignal; readonly scope?: Scope },
  ): Promise<Row[]>;
}

declare const includePlan: unique symbol;

/**
 * One relation to include on a read's rows, as the runtime plans it from an `include=` query:
 * opaque, so that the plan's shape (sources, limits, scopes) stays the mapper's to change. A read
 * passes on the plans it was given (`ReadOptions.include`).
 *
 * @example
 * ```ts
 * const read = (orders: EntityRepository, plan: readonly IncludePlan[]) => orders.get(1, { include: plan });
 * ```
 */
export interface IncludePlan {
  // A brand no value carries: only asPlans() below makes a plan, so a host cannot pass its own
  // object (not even `{}`) where the runtime's plan is expected.
  readonly [includePlan]: 'IncludePlan';
}

/**
 * One relation to include, and the relations to include on its rows (what `include=` becomes).
 * Internal: the public type is the opaque {@link IncludePlan}.
 *
 * @example
 * ```ts
 * const lines: IncludeNode = { name: 'lines', kind: 'many', field: 'orderId', source: crud.repository(OrderLine), limit: 100, cutName: 'linesCut', children: [] };
 * const order = await crud.repository(Order).get(1, { include: [lines] });
 * ```
 */
export interface IncludeNode {
  /** The property the related row (or rows) is set on. */
  readonly name: string;
  /** `one`: the row holds the related row's key in `field`; `many`: the related rows hold the row's primary key in `field`. */
  readonly kind: 'one' | 'many';
  readonly field: string;
  readonly source: RelatedSource;
  /** `many`: at most this many related rows per row (the first by primary key). */
  readonly limit?: number;
  /** `many`: the property set to `true` on a row whose related rows were more than `limit`. */
  readonly cutName?: string;
  /** The caller's scope on the related entity: only its rows inside it are included (in the statement). */
  readonly scope?: Scope;
  readonly children: readonly IncludeNode[];
}

/**
 * The planned relations as the opaque plans a read takes (`ReadOptions.include`).
 *
 * @example
 * ```ts
 * await orders.list({ include: asPlans(nodes) });
 * ```
 */
export function asPlans(nodes: readonly IncludeNode[]): readonly IncludePlan[] {
  return nodes as unknown as readonly IncludePlan[];
}

/**
 * The relations behind plans that asPlans() made (a read's own view of `ReadOptions.include`).
 *
 * @example
 * ```ts
 * const nodes = asNodes(options.include ?? []);
 * ```
 */
export function asNodes(plans: readonly IncludePlan[]): readonly IncludeNode[] {
  return plans as unknown as readonly IncludeNode[];
}

function distinct(rows: readonly Row[], field: string): unknown[] {
  const keys = new Set<unknown>();
  for (const row of rows) {
    const key = row[field];
    if (key !== null && key !== undefined) keys.add(key);
  }
  return [...keys];
}

async function includeOne(
  rows: Row[],
  node: IncludeNode,
  key: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  if (node.kind === 'one') {
    const found = await node.source.related(
      node.source.entity.primaryKey,
      distinct(rows, node.field),
      { ...(signal ? { signal } : {}), ...(node.scope ? { scope: node.scope } : {}) },
    );
    await includeAll(found, node.children, node.source.entity.primaryKey, signal);
    const byKey = new Map<unknown, Row>();
    for (const row of found) byKey.set(row[node.source.entity.primaryKey], row);
    // A missing or soft-deleted target reads as null, like a NULL key.
    for (const row of rows) row[node.name] = byKey.get(row[node.field]) ?? null;
    return;
  }
  const limit = node.limit ?? Number.POSITIVE_INFINITY;
  // One row more than the bound tells whether there were more.
  const found = await node.source.related(node.field, distinct(rows, key), {
    ...(Number.isFinite(limit) ? { perKey: limit + 1 } : {}),
    ...(signal ? { signal } : {}),
    ...(node.scope ? { scope: node.scope } : {}),
  });
  const byParent = new Map<unknown, Row[]>();
  const kept: Row[] = [];
  for (const child of found) {
    const parent = child[node.field];
    let group = byParent.get(parent);
    if (!group) byParent.set(parent, (group = []));
    if (group.length < limit) kept.push(child);
    group.push(child);
  }
  await includeAll(kept, node.children, node.source.entity.primaryKey, signal);
  for (const row of rows) {
    const group = byParent.get(row[key]) ?? [];
    if (group.length > limit) {
      group.length = limit;
      if (node.cutName !== undefined) row[node.cutName] = true;
    }
    row[node.name] = group;
  }
}

/**
 * Sets each node's related rows on `rows` (whose primary key is `key`), and the nodes' children
 * on those. One statement per node; none when `rows` is empty.
 */
export async function includeAll(
  rows: Row[],
  nodes: readonly IncludeNode[],
  key: string,
  signal?: AbortSignal,
): Promise<void> {
  if (rows.length === 0 || nodes.length === 0) return;
  if (nodes.length === 1) return includeOne(rows, nodes[0] as IncludeNode, key, signal);
  await Promise.all(nodes.map((node) => includeOne(rows, node, key, signal)));
}
