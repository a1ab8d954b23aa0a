// The JSON Schemas of the generated routes' headers (Idempotency-Key, If-Match, If-None-Match,
// ETag, Retry-After) and of their problem answers, each written once for every route to list.
import type { Entity } from '../entity.js';
import { openapiText } from './openapi-text.js';

type Schema = Record<string, unknown>;

/** The `Idempotency-Key` request header of an idempotent create. */
export function idempotencyHeaders(): Schema {
  return {
    type: 'object',
    properties: {
      'idempotency-key': {
        type: 'string',
        minLength: 1,
        maxLength: 255,
        pattern: '^[\\x21-\\x7E]+$',
        description: openapiText.headers.idempotencyKey,
      },
    },
  };
}

/** The `If-Match` request header of a conditional write. */
export function ifMatchHeaders(entity: Entity, required: boolean): Schema {
  return {
    type: 'object',
    ...(required ? { required: ['if-match'] } : {}),
    properties: {
      'if-match': {
        type: 'string',
        maxLength: 1024,
        description: openapiText.headers.ifMatch(entity, required),
      },
    },
  };
}

/** The `If-None-Match` request header of a conditional GET. */
export function ifNoneMatchHeaders(entity: Entity): Schema {
  return {
    type: 'object',
    properties: {
      'if-none-match': {
        type: 'string',
        maxLength: 1024,
        description: openapiText.headers.ifNoneMatch(entity),
      },
    },
  };
}

/** The `ETag` response header of a versioned row. */
export function etagHeader(entity: Entity): Schema {
  return {
    ETag: {
      type: 'string',
      description: openapiText.headers.etag(entity),
    },
  };
}

const PROBLEM: Schema = {
  type: 'object',
  required: ['type', 'title', 'status'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    correlationId: { type: 'string', description: openapiText.problems.correlationId },
    errors: {
      type: 'array',
      description: openapiText.problems.errors,
      items: {
        type: 'object',
        required: ['in', 'name', 'pointer', 'detail'],
        properties: {
          in: { type: 'string', enum: ['querystring', 'params', 'headers', 'body'] },
          name: { type: 'string', description: openapiText.problems.errorName },
          pointer: { type: 'string', description: openapiText.problems.errorPointer },
          detail: { type: 'string' },
        },
      },
    },
  },
};

const PROBLEM_TEXT: Readonly<Record<ProblemStatus, string>> = openapiText.problems.byStatus;

/** The problem answers the routes document. */
export type ProblemStatus = 400 | 403 | 404 | 409 | 412 | 422 | 428 | 503 | 504;

/** The `Retry-After` header of an answer. */
export const RETRY_AFTER_HEADER: Schema = {
  'Retry-After': { type: 'integer', description: openapiText.headers.retryAfter },
};

const DEFAULT_HEADERS: Partial<Record<ProblemStatus, Schema>> = {
  412: { ETag: { type: 'string', description: openapiText.headers.currentVersion } },
  503: RETRY_AFTER_HEADER,
};

/**
 * The 422 of a write, when it can happen: a field names a row that does not exist or is deleted
 * (an entity with references), and, for a create with idempotency, a key reused with another body.
 */
export function unprocessableResponse(entity: Entity, idempotency = false): Record<number, Schema> {
  const texts = [
    ...(entity.references.length > 0 ? [openapiText.problems.missingReference] : []),
    ...(idempotency ? [PROBLEM_TEXT[422]] : []),
  ];
  return texts.length === 0
    ? {}
    : { 422: problemResponse(422, { description: texts.join(openapiText.problems.or) }) };
}

/** A problem-details answer for the document; `description` and `headers` replace the defaults. */
export function problemResponse(
  status: ProblemStatus,
  options: { description?: string; headers?: Schema } = {},
): Schema {
  const headers = options.headers ?? DEFAULT_HEADERS[status];
  return {
    description: options.description ?? PROBLEM_TEXT[status],
    ...(headers ? { headers } : {}),
    content: { 'application/problem+json': { schema: PROBLEM } },
  };
}
