// The JSON Schemas of the generated routes' headers (Idempotency-Key, If-Match, If-None-Match,
// ETag, Retry-After) and of their problem answers, each written once for every route to list.
import type { Entity } from '../entity.js';

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
        description:
          'Makes the create happen at most once: a retry with the same key and body answers the first result (Idempotent-Replayed: true) and creates nothing; the same key with another body is 422; while the first request runs, 409 with Retry-After. Keys are kept for a day by default.',
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
        description: `The ETag of the ${entity.name} as read (GET answers it): the write happens only while the row is at that version, else 412 and nothing changes.${required ? ' Required: without it the write is 428.' : ''}`,
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
        description: `An ETag of the ${entity.name} the client holds: 304 (no body) while it is current.`,
      },
    },
  };
}

/** The `ETag` response header of a versioned row. */
export function etagHeader(entity: Entity): Schema {
  return {
    ETag: {
      type: 'string',
      description: `The ${entity.name}'s version, for If-Match and If-None-Match.`,
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
    correlationId: {
      type: 'string',
      description: "The request's correlation id, when the audit trail is on.",
    },
    errors: {
      type: 'array',
      description: 'For 400: the parameters at fault.',
      items: {
        type: 'object',
        required: ['in', 'name', 'pointer', 'detail'],
        properties: {
          in: { type: 'string', enum: ['querystring', 'params', 'headers', 'body'] },
          name: { type: 'string', description: 'The query or path parameter, or the body field.' },
          pointer: { type: 'string', description: 'A JSON pointer into that part of the request.' },
          detail: { type: 'string' },
        },
      },
    },
  },
};

const PROBLEM_TEXT: Readonly<Record<ProblemStatus, string>> = {
  400: 'A parameter or the body is not valid; `errors` names it.',
  403: "The token's roles do not allow this operation, or its claims cannot scope it; nothing was read or written.",
  404: 'No such row (or it was deleted).',
  409: 'The write conflicts with a unique or foreign-key constraint.',
  412: 'If-Match named another version: the row changed since it was read, and nothing was written. ETag is the current version.',
  422: 'The Idempotency-Key was used for another body; nothing was created.',
  428: 'The write needs If-Match: the ETag of the row as read.',
  503: 'The database is unavailable or busy; retry after `Retry-After` seconds.',
  504: 'The statement ran longer than the service allows and was cancelled; nothing of it was written.',
};

/** The problem answers the routes document. */
export type ProblemStatus = 400 | 403 | 404 | 409 | 412 | 422 | 428 | 503 | 504;

/** The `Retry-After` header of an answer. */
export const RETRY_AFTER_HEADER: Schema = {
  'Retry-After': { type: 'integer', description: 'Seconds to wait before retrying.' },
};

const DEFAULT_HEADERS: Partial<Record<ProblemStatus, Schema>> = {
  412: { ETag: { type: 'string', description: 'The current version.' } },
  503: RETRY_AFTER_HEADER,
};

/**
 * The 422 of a write, when it can happen: a field names a row that does not exist or is deleted
 * (an entity with references), and, for a create with idempotency, a key reused with another body.
 */
export function unprocessableResponse(entity: Entity, idempotency = false): Record<number, Schema> {
  const texts = [
    ...(entity.references.length > 0
      ? [
          'A field names a row that does not exist or is deleted; `errors` names it (`customerId`, `[3].customerId`, `lines[3].productId`), and nothing was written.',
        ]
      : []),
    ...(idempotency ? [PROBLEM_TEXT[422]] : []),
  ];
  return texts.length === 0
    ? {}
    : { 422: problemResponse(422, { description: texts.join(' Or: ') }) };
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
