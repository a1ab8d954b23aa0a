// The document of the generated POST: one body and answer schema for every kind of create (one
// row, an array, a row with its children, an upsert), the headers and query it takes, and the
// answers it gives. The prose is openapi-text.ts's.
import type { Entity } from '../../entity.js';
import { CrudOperations } from '../../operations.js';
import type { RouteAuthorization } from '../authorize.js';
import { rowsSchema } from '../batch.js';
import type { NestedRelations } from '../nested-create.js';
import { openapiText } from '../openapi-text.js';
import { routeResponses } from '../responses.js';
import {
  etagHeader,
  idempotencyHeaders,
  problemResponse,
  RETRY_AFTER_HEADER,
  unprocessableResponse,
} from '../answer-schemas.js';
import { inputName, ref } from '../schemas.js';
import { ON_CONFLICT, UPSERT_HEADERS } from './upsert.js';

type Schema = Record<string, unknown>;

/** What the POST's document is made from. */
export interface CreateSchemaNeeds {
  readonly entity: Entity;
  readonly authz: RouteAuthorization;
  readonly nested: NestedRelations;
  readonly idempotent: boolean;
}

/** The 201 answer: completed in place with the children once the relations are linked. */
function createdAnswer({ entity, idempotent }: CreateSchemaNeeds): Schema {
  return {
    description: openapiText.create.created(entity, idempotent),
    headers: {
      Location: { type: 'string' },
      ...(entity.version === undefined ? {} : etagHeader(entity)),
      ...(idempotent
        ? {
            'Idempotent-Replayed': {
              type: 'string',
              enum: ['true', 'false'],
              description: openapiText.create.replayed,
            },
          }
        : {}),
      ...(entity.unique.length > 0 ? UPSERT_HEADERS : {}),
    },
    ...ref(entity.name),
  };
}

/** The headers the POST reads, only where they say something: a headers schema is one more validation on every create. */
function createHeaders({ entity, idempotent }: CreateSchemaNeeds): Schema {
  if (!idempotent && entity.unique.length === 0) return {};
  return {
    headers: {
      type: 'object',
      properties: {
        ...(idempotent ? (idempotencyHeaders() as { properties: Schema }).properties : {}),
        ...(entity.unique.length > 0
          ? { prefer: { type: 'string', description: openapiText.create.prefer } }
          : {}),
      },
    },
  };
}

/** `on_conflict`, for an entity with a unique key to upsert on. */
function createQuery({ entity }: CreateSchemaNeeds): Schema {
  if (entity.unique.length === 0) return {};
  return {
    querystring: {
      type: 'object',
      properties: {
        [ON_CONFLICT]: {
          type: 'string',
          maxLength: 1000,
          description: openapiText.create.onConflict(entity),
        },
      },
    },
  };
}

/**
 * The answers are typed as one row (with its children, for a nested create): that is what a
 * generated client reads from a create (`data.id`). An anyOf with the array answer made every
 * single create's `data` a union that does not compile without narrowing; the array answer is
 * described instead (docs/decisions.md).
 */
function createResponses(needs: CreateSchemaNeeds, created: Schema): Schema {
  const { entity, authz, idempotent } = needs;
  return {
    201: created,
    ...(entity.unique.length > 0
      ? {
          200: {
            description: openapiText.create.upserted(entity),
            headers: {
              ...UPSERT_HEADERS,
              ...(entity.version === undefined ? {} : etagHeader(entity)),
            },
            ...ref(entity.name),
          },
        }
      : {}),
    400: problemResponse(400),
    409: idempotent
      ? problemResponse(409, {
          description: openapiText.create.conflictOrPending,
          headers: RETRY_AFTER_HEADER,
        })
      : problemResponse(409),
    ...unprocessableResponse(entity, idempotent),
    ...routeResponses(authz),
  };
}

/**
 * The POST's schema. Its single-row body and 201 answer are handed to `nested`, which completes
 * them with the children's shapes when the relations are linked (the document is built later).
 *
 * @example
 * ```ts
 * const schema = createSchema({ entity, authz, nested: settings.nested, idempotent: Boolean(settings.idempotency) });
 * ```
 */
export function createSchema(needs: CreateSchemaNeeds): Schema {
  const { entity, authz, nested, idempotent } = needs;
  const singleBody = ref(inputName(entity));
  const created = createdAnswer(needs);
  nested.document(singleBody, created);
  return {
    summary: openapiText.create.summary(entity, idempotent),
    description: openapiText.create.description(entity),
    ...createHeaders(needs),
    ...createQuery(needs),
    body: { anyOf: [singleBody, rowsSchema(ref(inputName(entity)), false)] },
    ...authz.schema(CrudOperations.Create),
    response: createResponses(needs, created),
  };
}
