// What the writes by key (PUT and PATCH /{pk}, DELETE /{pk}) share: the handler of a write that
// answers the row, the answers of such a write, and the If-Match header they take.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Row, WriteOptions } from '../../mapper/repository.js';
import { writeOptions } from '../changes.js';
import { openapiText } from '../openapi-text.js';
import { notFound } from '../problems.js';
import { rowResponse, writeResponses } from '../responses.js';
import type { WriteContext } from '../route-context.js';
import { ifMatchHeaders } from '../answer-schemas.js';

/**
 * The `headers` schema of a write by key: If-Match, where a write may be conditional (a version,
 * or requireIfMatch); nothing otherwise.
 *
 * @example
 * ```ts
 * const schema = { params, ...conditionalHeaders(context), body };
 * ```
 */
export function conditionalHeaders({
  entity,
  requireIfMatch,
}: WriteContext): Record<string, unknown> {
  return entity.version !== undefined || requireIfMatch
    ? { headers: ifMatchHeaders(entity, requireIfMatch) }
    : {};
}

/**
 * The answers of PUT and PATCH, alike: the row as stored (with its ETag), 404 without it, the
 * same refusals.
 *
 * @example
 * ```ts
 * const schema = { summary, body, response: rowWriteResponses(context) };
 * ```
 */
export function rowWriteResponses(context: WriteContext): Record<number, unknown> {
  return {
    200: rowResponse(context, openapiText.writeByKey.ok(context.entity)),
    ...writeResponses(context, true),
  };
}

/**
 * The handler of a write by key that answers the row: the body in Kit's form, the caller's right
 * to write it, the If-Match condition, then `write`; 404 when no row has the key.
 *
 * @example
 * ```ts
 * const handler = writeByKey(context, (key, body, options) => repository.update(key, body, options));
 * ```
 */
export function writeByKey(
  context: WriteContext,
  write: (
    key: unknown,
    body: Readonly<Record<string, unknown>>,
    options: WriteOptions,
  ) => Promise<Row | undefined>,
) {
  const { entity, repository, authz, keyOf, etag, condition, bodyOf } = context;
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const body = bodyOf(request, reply);
    if (!body || !authz.mayWrite(request, reply, body)) return reply;
    const call = authz.call(request, reply);
    const options = await condition(request, reply, call);
    if (!options) return reply;
    const row = await write(keyOf(request), body, {
      ...options,
      ...writeOptions(repository.recordsChanges, request, reply, call),
    });
    if (!row) return notFound(reply, entity, keyOf(request));
    if (etag) reply.header('etag', etag(row));
    return authz.shown(request, row);
  };
}
