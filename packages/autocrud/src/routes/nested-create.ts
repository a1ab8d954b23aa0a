// Nested create: `POST /api/order` with `{ ..., lines: [{...}, {...}] }` creates the order and its
// lines in one transaction. A one-to-many relation is declared on the child (its `references`),
// so the parent's routes learn their children only once every @AutoCrud class is known: the
// plugin links them when the app is ready (see plugin.ts), filling the `NestedRelations` the
// parent's POST route was made with: its body validator and the documented shapes.
import type { FastifyReply, FastifySchemaCompiler } from 'fastify';
import type { AnySchema, ErrorObject, ValidateFunction } from 'ajv';
import type { ResolvedAuthorization } from '../authorization.js';
import type { Entity } from '../entity.js';
import type { Scope } from '../mapper/sql/query.js';
import type { EntityRepository, Row } from '../mapper/repository.js';
import { readBody } from './body.js';
import { badRequest, BATCH_RELATION, BATCH_ROW, rowPath } from './problems.js';
import { inputSchema, ref } from './schemas.js';
import { MAX_NESTED_ROWS } from './limits.js';
import { parameterText } from '../answers.js';
import { openapiText } from './openapi-text.js';

type Schema = Record<string, unknown>;

/** One one-to-many relation a parent's create can carry. */
export interface NestedRelation {
  readonly name: string;
  readonly entity: Entity;
  /** The child's field holding the parent's key (set by the create, never by the client). */
  readonly field: string;
  readonly repository: EntityRepository<Row, Readonly<Record<string, unknown>>>;
  readonly validate: ValidateFunction;
  /** The child class's rules: its rows are created under the caller's rule for the child's create. */
  readonly authorization?: ResolvedAuthorization;
}

/** The rows of one relation of a nested create, read. */
export interface NestedChildren {
  readonly repository: NestedRelation['repository'];
  readonly field: string;
  readonly rows: Record<string, unknown>[];
  readonly entity: Entity;
  readonly authorization?: ResolvedAuthorization;
  /** The caller's scope on the child entity, once its rules admitted the create. */
  readonly scope?: Scope;
}

/**
 * A child's create body inside its parent's: the child's writable fields without the one that
 * references the parent. Inline (no `$id`): the document shows it under the parent's operation.
 */
export function nestedInputSchema(entity: Entity, field: string): Schema {
  const {
    $id: _id,
    title: _title,
    ...input
  } = inputSchema(entity) as Schema & { properties: Schema; required?: string[] };
  const { [field]: _key, ...properties } = input.properties as Schema;
  const { required: all, ...rest } = input as Schema & { required?: string[] };
  const required = all?.filter((name) => name !== field) ?? [];
  return {
    ...rest,
    description: openapiText.schemas.nestedChild(entity, field),
    properties,
    ...(required.length > 0 ? { required } : {}),
  };
}

/** The one-to-many relations of one entity's create, filled when the app is ready. */
export class NestedRelations {
  readonly #relations = new Map<string, NestedRelation>();
  // The documented shapes, changed in place when relations are linked (the document is built later).
  readonly #documented: { body: Schema; answer: Schema }[] = [];

  constructor(readonly entity: Entity) {}

  get size(): number {
    return this.#relations.size;
  }

  /** The child entities by relation name, for problems naming a child's field. */
  get entities(): ReadonlyMap<string, Entity> {
    return new Map([...this.#relations].map(([name, r]) => [name, r.entity]));
  }

  /**
   * Keeps a POST route's single-row body schema and its 201 answer (each holding `$ref` to the
   * entity's input and row), to be completed in place when relations are linked.
   */
  document(body: Schema, answer: Schema): void {
    this.#documented.push({ body, answer });
  }

  /** Adds a relation (at start-up, once every class is known) and documents it. */
  add(relation: NestedRelation): void {
    this.#relations.set(relation.name, relation);
    const bodies: Schema = {};
    const answers: Schema = {};
    for (const r of this.#relations.values()) {
      bodies[r.name] = {
        type: 'array',
        maxItems: MAX_NESTED_ROWS,
        description: openapiText.schemas.nestedRows(r.entity),
        items: nestedInputSchema(r.entity, r.field),
      };
      answers[r.name] = {
        type: 'array',
        description: openapiText.schemas.nestedCreated(r.entity),
        items: ref(r.entity.name),
      };
    }
    for (const { body, answer } of this.#documented) {
      for (const [schema, id, properties] of [
        [body, `${this.entity.name}Input`, bodies],
        [answer, this.entity.name, answers],
      ] as const) {
        delete schema.$ref;
        schema.allOf = [ref(id), { type: 'object', properties }];
      }
    }
  }

  /** The relation names `body` carries (an own key holding anything), or none. */
  carried(body: Readonly<Record<string, unknown>>): string[] {
    const found: string[] = [];
    for (const name of this.#relations.keys())
      if (Object.prototype.hasOwnProperty.call(body, name)) found.push(name);
    return found;
  }

  /**
   * A single-row validator that also takes the relations: the parent's own fields against
   * `validateRow`, each relation an array of at most MAX_NESTED_ROWS rows (all relations
   * together), each row against its child's schema; an error names `lines[3].quantity`.
   */
  validator(
    validateRow: ValidateFunction,
  ): (data: unknown) => { ok: boolean; errors: ErrorObject[] | null } {
    return (data) => {
      const names =
        this.#relations.size === 0 ||
        typeof data !== 'object' ||
        data === null ||
        Array.isArray(data)
          ? []
          : this.carried(data as Record<string, unknown>);
      if (names.length === 0) {
        const ok = validateRow(data);
        return { ok, errors: ok ? null : (validateRow.errors ?? null) };
      }
      const own: Record<string, unknown> = { ...(data as Record<string, unknown>) };
      for (const name of names) delete own[name];
      if (!validateRow(own)) return { ok: false, errors: validateRow.errors ?? null };
      let total = 0;
      for (const name of names) {
        const relation = this.#relations.get(name) as NestedRelation;
        const rows = (data as Record<string, unknown>)[name];
        if (!Array.isArray(rows))
          return {
            ok: false,
            errors: [
              {
                keyword: 'type',
                instancePath: `/${name}`,
                schemaPath: '',
                params: { type: 'array' },
                message: parameterText('anArray'),
              },
            ],
          };
        total += rows.length;
        if (total > MAX_NESTED_ROWS)
          return {
            ok: false,
            errors: [
              {
                keyword: 'maxItems',
                instancePath: `/${name}`,
                schemaPath: '',
                params: {},
                message: parameterText('nestedRows', { max: MAX_NESTED_ROWS }),
              },
            ],
          };
        for (let i = 0; i < rows.length; i++) {
          if (!relation.validate(rows[i])) {
            const marker = { name, entity: relation.entity };
            return {
              ok: false,
              errors: (relation.validate.errors ?? []).map((e) => ({
                ...e,
                params: { ...e.params, [BATCH_ROW]: i, [BATCH_RELATION]: marker },
              })),
            };
          }
        }
      }
      return { ok: true, errors: null };
    };
  }

  /**
   * The parent's values and each carried relation's rows in Kit's form, or `undefined` once a 400
   * naming the field (`lines[3].quantity`) is sent.
   */
  read(
    reply: FastifyReply,
    body: Readonly<Record<string, unknown>>,
    names: readonly string[],
  ): { values: Record<string, unknown>; children: Record<string, NestedChildren> } | undefined {
    const own: Record<string, unknown> = { ...body };
    for (const name of names) delete own[name];
    const parent = readBody(this.entity, own);
    if ('fault' in parent) {
      badRequest(reply, parent.fault);
      return undefined;
    }
    const children: Record<string, NestedChildren> = {};
    for (const name of names) {
      const relation = this.#relations.get(name) as NestedRelation;
      const rows: Record<string, unknown>[] = [];
      const given = body[name] as readonly Record<string, unknown>[];
      for (let i = 0; i < given.length; i++) {
        const read = readBody(relation.entity, given[i] as Record<string, unknown>);
        if ('fault' in read) {
          badRequest(reply, { ...read.fault, name: rowPath(i, read.fault.name, name) });
          return undefined;
        }
        rows.push(read.values);
      }
      children[name] = {
        repository: relation.repository,
        field: relation.field,
        rows,
        entity: relation.entity,
        ...(relation.authorization ? { authorization: relation.authorization } : {}),
      };
    }
    return { values: parent.values, children };
  }
}

/** A validator compiler's view of one schema, for the children's bodies. */
export function compileNested(
  compiler: FastifySchemaCompiler<AnySchema>,
  schema: Schema,
): ValidateFunction {
  return compiler({ schema, method: 'POST', url: '', httpPart: 'body' }) as ValidateFunction;
}
