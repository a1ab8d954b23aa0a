// The relations between the entities an app serves: who references whom, built once from every
// @AutoCrud class of the app (core's plan of endpoint classes, known before any group's routes are
// made), because a one-to-many relation is declared on the child and the parent's routes need it.
// Only entities an @AutoCrud class serves with a read route take part: an include never answers
// rows the API gives no other way to read (docs/decisions.md, "AutoCrud includes").
import { KitError, type PlannedEndpoint } from '@kit/core';
import type { ResolvedAuthorization } from './authorization.js';
import type { Entity } from './entity.js';
import { allows, CrudOperations } from './operations.js';
import type { RelatedSource } from './mapper/reads/includes.js';
import type { IncludeRelation, RelationsOf } from './routes/includes.js';

/** What `@AutoCrud` declared on a class. */
interface AutoCrudDeclaration {
  readonly entity: Entity;
  readonly operations: number;
  /** The class's rules, checked; absent: none. */
  readonly authorization?: ResolvedAuthorization;
}

// By class: filled by @AutoCrud when the class is defined, read when an app's plan is known.
const declarations = new WeakMap<object, AutoCrudDeclaration>();

/** Records what `@AutoCrud` declared on `cls`. */
export function declareAutoCrud(cls: object, declaration: AutoCrudDeclaration): void {
  declarations.set(cls, declaration);
}

/** One relation of an entity, by the name `include=` and the nested route give it. */
interface Relation {
  /** `customer` (many-to-one) or `lines` (one-to-many). */
  readonly name: string;
  /** `one`: this entity holds the key; `many`: the related entity's rows hold this entity's key. */
  readonly kind: 'one' | 'many';
  /** The related entity. */
  readonly entity: Entity;
  /** The field holding the key: this entity's for `one`, the related entity's for `many`. */
  readonly field: string;
  /** `many`: the related entity's class serves its list, so the nested route exists. */
  readonly listed: boolean;
  /** The rules of the class serving the related entity: included and nested-listed rows are read under them. */
  readonly authorization?: ResolvedAuthorization;
}

/** The served entities of one app and their relations. */
export interface RelationRegistry {
  /** The relations of an entity, by name (empty for an entity not served). */
  of(entity: Entity): ReadonlyMap<string, Relation>;
  /** Every entity some class of the app serves with a read route. */
  readonly entities: readonly Entity[];
}

const EMPTY: ReadonlyMap<string, Relation> = new Map();

function relationError(entity: Entity, message: string): KitError {
  return new KitError('KIT_ERR_AUTOCRUD_ENTITY', `Relations of ${entity.name}: ${message}`);
}

/**
 * The registry of the app whose endpoint classes are `endpoints`. A relation name that is also a
 * field or another relation of the entity (or, for one-to-many, whose cut marker `<name>Cut` is)
 * fails start-up naming both.
 */
export function buildRelations(endpoints: readonly PlannedEndpoint[]): RelationRegistry {
  // The first class serving an entity with a read route speaks for it.
  const served = new Map<Entity, AutoCrudDeclaration>();
  for (const { cls } of endpoints) {
    const declared = declarations.get(cls);
    if (!declared || served.has(declared.entity)) continue;
    if (
      allows(declared.operations, CrudOperations.Get) ||
      allows(declared.operations, CrudOperations.List)
    )
      served.set(declared.entity, declared);
  }
  const relations = new Map<Entity, Map<string, Relation>>();
  const add = (entity: Entity, relation: Relation, why: string) => {
    let own = relations.get(entity);
    if (!own) relations.set(entity, (own = new Map()));
    for (const name of relation.kind === 'many'
      ? [relation.name, `${relation.name}Cut`]
      : [relation.name]) {
      const clash = entity.field(name)
        ? `field '${name}'`
        : own.has(name) ||
            [...own.values()].some((r) => r.kind === 'many' && `${r.name}Cut` === name)
          ? `another relation named '${name}'`
          : undefined;
      if (clash)
        throw relationError(
          entity,
          `the relation '${name}' (${why}) has the name of its ${clash}; name it with references: { field: { entity, as: '...', many: '...' } }.`,
        );
    }
    own.set(relation.name, relation);
  };
  for (const [entity] of served) {
    for (const reference of entity.references) {
      const target = reference.target();
      const targetClass = served.get(target);
      if (!targetClass) continue;
      add(
        entity,
        {
          name: reference.as,
          kind: 'one',
          entity: target,
          field: reference.field,
          listed: false,
          ...(targetClass.authorization ? { authorization: targetClass.authorization } : {}),
        },
        `${entity.name}.${reference.field} -> ${target.name}`,
      );
      const child = served.get(entity) as AutoCrudDeclaration;
      add(
        target,
        {
          name: reference.many,
          kind: 'many',
          entity,
          field: reference.field,
          listed: allows(child.operations, CrudOperations.List),
          ...(child.authorization ? { authorization: child.authorization } : {}),
        },
        `${entity.name}.${reference.field} -> ${target.name}`,
      );
    }
  }
  // A stable order whatever the order of the classes: the entity's own references as declared, then the one-to-many relations by name.
  for (const [entity, own] of relations) {
    const rank = (r: Relation) =>
      r.kind === 'one'
        ? entity.references.findIndex((ref) => ref.field === r.field)
        : entity.references.length;
    relations.set(
      entity,
      new Map([...own].sort(([a, x], [b, y]) => rank(x) - rank(y) || (a < b ? -1 : a > b ? 1 : 0))),
    );
  }
  return { of: (entity) => relations.get(entity) ?? EMPTY, entities: [...served.keys()] };
}

/** The entities `entity`'s answers may hold through includes, at any depth (itself left out). */
export function reachable(entity: Entity, registry: RelationRegistry): Set<Entity> {
  const seen = new Set<Entity>([entity]);
  const queue = [entity];
  for (let next = queue.pop(); next; next = queue.pop()) {
    for (const relation of registry.of(next).values()) {
      if (!seen.has(relation.entity)) {
        seen.add(relation.entity);
        queue.push(relation.entity);
      }
    }
  }
  seen.delete(entity);
  return seen;
}

/** The relations as the routes read them, each with the source (repository) of its related entity. */
export function includeRelations(
  registry: RelationRegistry,
  sourceOf: (entity: Entity) => RelatedSource,
): RelationsOf {
  const cache = new Map<Entity, ReadonlyMap<string, IncludeRelation>>();
  return (entity) => {
    let found = cache.get(entity);
    if (!found) {
      found = new Map(
        [...registry.of(entity)].map(([name, r]) => [
          name,
          {
            name,
            kind: r.kind,
            entity: r.entity,
            field: r.field,
            listed: r.listed,
            source: sourceOf(r.entity),
            ...(r.authorization ? { authorization: r.authorization } : {}),
          },
        ]),
      );
      cache.set(entity, found);
    }
    return found;
  };
}
