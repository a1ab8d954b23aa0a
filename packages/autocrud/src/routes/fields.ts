// `fields=id,name` on the list and on the read by key: the answer's rows hold only those fields.
// The database still reads the whole row: the ETag is the row's version and a list's cursor holds
// its sort keys, whichever fields the client asked for (docs/decisions.md, "fields=").
import type { FastifyReply } from 'fastify';
import type { Entity } from '../entity.js';
import type { Row } from '../mapper/repository.js';
import { parameterText } from '../answers.js';
import { openapiText } from './openapi-text.js';

type Schema = Record<string, unknown>;

/** Why `fields=` is refused: an `InvalidParameter` by its shape (problems.ts imports schemas.ts, which imports this file). */
export interface FieldsFault {
  readonly in: 'querystring';
  readonly name: 'fields';
  readonly detail: string;
}

/** The `fields` query parameter's schema: comma-separated identifiers; which fields exist is checked by {@link readFields}, to name the one at fault. */
export function fieldsParameter(entity: Entity): Schema {
  const names = entity.fields.map((f) => f.name);
  return {
    type: 'string',
    minLength: 1,
    maxLength: names.join(',').length,
    pattern: '^[A-Za-z_][A-Za-z0-9_]*(?:,[A-Za-z_][A-Za-z0-9_]*)*$',
    description: openapiText.parameters.fields(entity, names),
  };
}

/**
 * The fields `fields=` asks for, in the entity's order, or the parameter at fault. A field the
 * caller may not see (`hidden`) is refused as a field that does not exist, and not listed.
 */
export function readFields(
  entity: Entity,
  raw: string,
  hidden?: ReadonlySet<string>,
): readonly string[] | FieldsFault {
  const asked = new Set<string>();
  for (const name of raw.split(',')) {
    if (!entity.field(name) || hidden?.has(name)) {
      return {
        in: 'querystring',
        name: 'fields',
        detail: parameterText('notAFieldNamed', {
          name: JSON.stringify(name),
          entity: entity.name,
          fields: entity.fields
            .filter((f) => !hidden?.has(f.name))
            .map((f) => f.name)
            .join(', '),
        }),
      };
    }
    if (asked.has(name))
      return { in: 'querystring', name: 'fields', detail: parameterText('twice', { name }) };
    asked.add(name);
  }
  return entity.fields.filter((f) => asked.has(f.name)).map((f) => f.name);
}

/** The row with only `fields` (a field the row leaves out, an optional NULL, stays out). */
export function project(row: Row, fields: readonly string[]): Row {
  const out: Row = {};
  for (const name of fields) if (name in row) out[name] = row[name];
  return out;
}

/**
 * A partial answer (or one with included rows) is serialized as plain JSON: the route's response schema describes whole rows
 * (its required fields would make Fastify's compiled serializer throw on a partial one). The
 * values are already in Kit's one JSON form per kind.
 */
export function sendPartial(reply: FastifyReply): void {
  // A reply's own serializer leaves the content type to the route: Fastify sets it only for its default one.
  reply.type('application/json; charset=utf-8').serializer(JSON.stringify);
}

/** The row without the fields the caller may not see (the row itself when none are hidden). */
export function visible(row: Row, hidden: ReadonlySet<string> | undefined): Row {
  if (hidden === undefined || hidden.size === 0) return row;
  const out: Row = {};
  for (const name of Object.keys(row)) if (!hidden.has(name)) out[name] = row[name];
  return out;
}
