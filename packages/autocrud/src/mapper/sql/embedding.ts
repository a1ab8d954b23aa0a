// Related rows read inside the entity's own statement, for a dialect that can (PostgreSQL's JSON
// functions): what the reads ask of such a dialect. The include plan itself is the reads' own
// (reads/includes.ts); a node here is what embedding reads of it.
import type { AliasedRawBuilder } from 'kysely';
import type { Entity } from '../../entity.js';

/**
 * One included relation as embedding reads it (an include plan's node is one).
 *
 * @example
 * ```ts
 * const node: EmbedNode = { name: 'lines', kind: 'many', field: 'orderId', source: { entity: OrderLine }, limit: 100, children: [] };
 * ```
 */
export interface EmbedNode {
  /** The property the related row (or rows) is set on. */
  readonly name: string;
  /** `one`: the row holds the related row's key in `field`; `many`: the related rows hold the row's primary key in `field`. */
  readonly kind: 'one' | 'many';
  readonly field: string;
  readonly source: { readonly entity: Entity };
  /** `many`: at most this many related rows per row (the first by primary key). */
  readonly limit?: number;
  /** `many`: the property set to `true` on a row whose related rows were more than `limit`. */
  readonly cutName?: string;
  /**
   * The caller's scope on the related entity (a `Scope` of sql/query.ts, which this file cannot
   * name: the dialect contract it belongs to is below the query helpers).
   */
  readonly scope?: object;
  readonly children: readonly EmbedNode[];
}

/**
 * How a dialect embeds related rows in the entity's statement: the extra SELECT columns, what
 * makes two include trees one statement, the values they bind, and decoding them.
 *
 * @example
 * ```ts
 * const embedding = dialect.embedding;
 * if (embedding) query = query.select(embedding.selection(entity, nodes));
 * ```
 */
export interface IncludeEmbedding {
  /** What makes two include trees the same statement (the limits and scope values are bound). */
  shape(nodes: readonly EmbedNode[]): string;
  /** The limits and scope values of an include tree, added to `values`, by slot name. */
  values(nodes: readonly EmbedNode[], values: Record<string, unknown>): Record<string, unknown>;
  /** The SELECT list's extra columns, one per node, named by the node. */
  selection(entity: Entity, nodes: readonly EmbedNode[]): AliasedRawBuilder<unknown, string>[];
  /** Sets the included rows on `row` (already decoded) from its statement's raw row `raw`. */
  decode(
    row: Record<string, unknown>,
    raw: Record<string, unknown>,
    nodes: readonly EmbedNode[],
  ): Record<string, unknown>;
}
