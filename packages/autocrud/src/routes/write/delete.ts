// DELETE /{pk} : delete a row (soft, when the entity says so).
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { CrudOperations } from '../../operations.js';
import { writeOptions } from '../changes.js';
import { openapiText } from '../openapi-text.js';
import { notFound } from '../problems.js';
import { writeResponses } from '../responses.js';
import { documented, type WriteContext } from '../route-context.js';
import { conditionalHeaders } from './by-key.js';

function deleteSchema(context: WriteContext): Record<string, unknown> {
  const { entity, authz, params } = context;
  return {
    summary: openapiText.delete.summary(entity),
    params,
    ...conditionalHeaders(context),
    ...authz.schema(CrudOperations.Delete),
    response: {
      204: { description: openapiText.delete.noContent, type: 'null' },
      ...writeResponses(context, false),
    },
  };
}

function deleteHandler({ entity, repository, authz, keyOf, condition }: WriteContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const call = authz.call(request, reply);
    const options = await condition(request, reply, call);
    if (!options) return reply;
    if (
      !(await repository.delete(keyOf(request), {
        ...options,
        ...writeOptions(repository.recordsChanges, request, reply, call),
      }))
    )
      return notFound(reply, entity, keyOf(request));
    return reply.code(204).send();
  };
}

/**
 * The route options of `DELETE /{pk}`, relative to the group.
 *
 * @example
 * ```ts
 * if (allows(operations, CrudOperations.Delete)) routes.push(deleteRoute(context));
 * ```
 */
export function deleteRoute(context: WriteContext): RouteOptions {
  return {
    ...context.common,
    ...context.authz.guard(CrudOperations.Delete, 'delete'),
    method: 'DELETE',
    url: `{${context.entity.primaryKey}}`,
    schema: documented(deleteSchema(context)),
    handler: deleteHandler(context),
  };
}
