// `include=customer,lines,lines.product` on the list and the read by key: which relations a
// request may name (one nested level), their `fields[path]=` and `limit[path]=` parameters, the
// include tree the mapper reads, and the answer's rows shaped by the field selections. No SQL
// here. See docs/decisions.md ("AutoCrud includes").
import type { ResolvedAuthorization } from '../authorization.js';
import type { Entity } from '../entity.js';
import type { IncludeNode, RelatedSource } from '../mapper/reads/includes.js';
import type { Row } from '../mapper/repository.js';
import { fieldsParameter, project, readFields, visible } from './fields.js';
import type { InvalidParameter } from './problems.js';
import { ref } from './schemas.js';
import { DEFAULT_INCLUDE_LIMIT, MAX_INCLUDE_LIMIT } from './limits.js';
import { openapiText } from './openapi-text.js';
import { parameterText } from '../answers.js';

type Schema = Record<string, unknown>;

/** How deep `include` goes: `lines.product`, not `lines.product.supplier`. */
const MAX_DEPTH = 2;

/** A relation as the routes see it (see relations.ts), with the repository that reads its rows. */
export interface IncludeRelation {
  readonly name: string;
  readonly kind: 'one' | 'many';
  readonly entity: Entity;
  readonly field: string;
  readonly source: RelatedSource;
  /** `many`: the related entity's class serves its list, so the parent has the nested list route. */
  readonly listed: boolean;
  /** The related entity's rules (of the class that serves it): its included rows are read under them. */
  readonly authorization?: ResolvedAuthorization;
}

/** The relations of an entity, by name. */
export type RelationsOf = (entity: Entity) => ReadonlyMap<string, IncludeRelation>;

/** One path `include` accepts (`lines.product`), and the relation it ends with. */
export interface IncludePath {
  readonly path: string;
  readonly relation: IncludeRelation;
  /** The path of the relation it hangs on (`lines`), if nested. */
  readonly parent?: string;
}

/** Every path `include` accepts on `entity`, relation by relation, each followed by its nested paths. */
export function includePaths(entity: Entity, relationsOf: RelationsOf): readonly IncludePath[] {
  const paths: IncludePath[] = [];
  const walk = (from: Entity, prefix: string | undefined, depth: number) => {
    for (const relation of relationsOf(from).values()) {
      const path = prefix === undefined ? relation.name : `${prefix}.${relation.name}`;
      paths.push({ path, relation, ...(prefix === undefined ? {} : { parent: prefix }) });
      if (depth < MAX_DEPTH) walk(relation.entity, path, depth + 1);
    }
  };
  walk(entity, undefined, 1);
  return paths;
}

/** The cut marker of a one-to-many relation: set to `true` on a row whose related rows were more than the limit. */
export function cutName(relation: string): string {
  return `${relation}Cut`;
}

/** The query parameters of includes: `include`, and per path `fields[path]` and (one-to-many) `limit[path]`. */
export function includeParameters(
  entity: Entity,
  paths: readonly IncludePath[],
): Record<string, Schema> {
  if (paths.length === 0) return {};
  const names = paths.map((p) => p.path);
  const properties: Record<string, Schema> = {
    include: {
      type: 'array',
      items: { type: 'string', enum: names },
      maxItems: names.length,
      description: openapiText.parameters.include(entity, names),
    },
  };
  for (const { path, relation } of paths) {
    properties[`fields[${path}]`] = {
      ...fieldsParameter(relation.entity),
      description: openapiText.parameters.includeFields(path, relation.entity),
    };
    if (relation.kind === 'many') {
      properties[`limit[${path}]`] = {
        type: 'integer',
        minimum: 1,
        maximum: MAX_INCLUDE_LIMIT,
        description: openapiText.parameters.includeLimit(path, relation.entity),
      };
    }
  }
  return properties;
}

/**
 * The optional properties an entity's component gains from its relations, so that a generated
 * client types `order.customer.name`: a many-to-one relation is the related row or null, a
 * one-to-many one an array of rows with its `<name>Cut` marker.
 */
export function relationProperties(
  relations: Iterable<{
    readonly name: string;
    readonly kind: 'one' | 'many';
    readonly entity: Entity;
  }>,
): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const { name, kind, entity } of relations) {
    if (kind === 'one') {
      properties[name] = {
        anyOf: [ref(entity.name), { type: 'null' }],
        description: openapiText.schemas.relatedOne(name, entity),
      };
    } else {
      properties[name] = {
        type: 'array',
        items: ref(entity.name),
        description: openapiText.schemas.relatedMany(name, entity),
      };
      properties[cutName(name)] = {
        type: 'boolean',
        description: openapiText.schemas.relatedCut(name, entity),
      };
    }
  }
  return properties;
}

/** What a request asks to include: the mapper's tree, and the field selections by path. */
export interface IncludeRequest {
  readonly nodes: readonly IncludeNode[];
  readonly fields: ReadonlyMap<string, readonly string[]>;
  /** The relation of each included path. */
  readonly relations: ReadonlyMap<string, IncludeRelation>;
  /** Some included entity has rules: the tree must be scoped by the caller's (routes/authorize.ts). */
  readonly scoped: boolean;
}

interface Building {
  readonly node: IncludeNode & { children: IncludeNode[] };
}

/**
 * The include tree of a validated query (`include` already an array of known paths, see
 * validation.ts), or the parameter at fault: a `fields[path]` or `limit[path]` without its
 * include, or a `fields[path]` naming no field. `undefined` when nothing is included.
 */
export function readIncludes(
  paths: readonly IncludePath[],
  query: Record<string, unknown>,
): IncludeRequest | InvalidParameter | undefined {
  const asked = query.include as readonly string[] | undefined;
  const wanted = new Set<string>();
  for (const path of asked ?? []) {
    // `lines.product` includes `lines`.
    for (let dot = path.indexOf('.'); dot !== -1; dot = path.indexOf('.', dot + 1))
      wanted.add(path.slice(0, dot));
    wanted.add(path);
  }
  const fields = new Map<string, readonly string[]>();
  const relations = new Map<string, IncludeRelation>();
  let scoped = false;
  const built = new Map<string, Building>();
  const roots: IncludeNode[] = [];
  for (const { path, relation, parent } of paths) {
    const rawFields = query[`fields[${path}]`];
    const rawLimit = query[`limit[${path}]`];
    if (!wanted.has(path)) {
      if (rawFields !== undefined)
        return {
          in: 'querystring',
          name: `fields[${path}]`,
          detail: parameterText('needsInclude', { path }),
        };
      if (rawLimit !== undefined)
        return {
          in: 'querystring',
          name: `limit[${path}]`,
          detail: parameterText('needsInclude', { path }),
        };
      continue;
    }
    if (typeof rawFields === 'string') {
      const only = readFields(relation.entity, rawFields);
      if ('detail' in only) return { ...only, name: `fields[${path}]` };
      fields.set(path, only);
    }
    const node: IncludeNode & { children: IncludeNode[] } = {
      name: relation.name,
      kind: relation.kind,
      field: relation.field,
      source: relation.source,
      ...(relation.kind === 'many'
        ? {
            limit: typeof rawLimit === 'number' ? rawLimit : DEFAULT_INCLUDE_LIMIT,
            cutName: cutName(relation.name),
          }
        : {}),
      children: [],
    };
    built.set(path, { node });
    relations.set(path, relation);
    if (relation.authorization) scoped = true;
    if (parent === undefined) roots.push(node);
    else (built.get(parent) as Building).node.children.push(node);
  }
  return roots.length === 0 ? undefined : { nodes: roots, fields, relations, scoped };
}

const NOTHING_HIDDEN: ReadonlyMap<string, ReadonlySet<string>> = new Map();

/**
 * A row as answered: its own fields (all, or those `only` names), and each included relation
 * shaped the same way; without the fields `hidden` hides from the caller, by path (`''`: the row's own).
 */
export function shapeRow(
  row: Row,
  only: readonly string[] | undefined,
  nodes: readonly IncludeNode[],
  fields: ReadonlyMap<string, readonly string[]>,
  prefix = '',
  hidden = NOTHING_HIDDEN,
): Row {
  const concealed = hidden.get(prefix);
  const out = only ? project(row, only) : concealed ? visible(row, concealed) : row;
  for (const node of nodes) {
    const path = prefix === '' ? node.name : `${prefix}.${node.name}`;
    const selected = fields.get(path);
    const value = row[node.name];
    if (Array.isArray(value))
      out[node.name] =
        selected || node.children.length > 0 || hidden.has(path)
          ? value.map((child: Row) =>
              shapeRow(child, selected, node.children, fields, path, hidden),
            )
          : value;
    else
      out[node.name] =
        value === null || value === undefined
          ? null
          : shapeRow(value as Row, selected, node.children, fields, path, hidden);
    if (node.cutName !== undefined && row[node.cutName] === true) out[node.cutName] = true;
  }
  return out;
}
