// GET /all : every row, unpaged.
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { CrudOperations } from '../../operations.js';
import { openapiText } from '../openapi-text.js';
import { routeResponses } from '../responses.js';
import { documented, type RouteContext } from '../route-context.js';
import { ref } from '../schemas.js';

function listAllSchema({ entity, authz }: RouteContext): Record<string, unknown> {
  return {
    summary: openapiText.listAll.summary(entity),
    ...authz.schema(CrudOperations.ListAll),
    response: { 200: { type: 'array', items: ref(entity.name) }, ...routeResponses(authz) },
  };
}

function listAllHandler({ repository, authz }: RouteContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const rows = await repository.all(authz.call(request, reply));
    return authz.accessOf ? rows.map((row) => authz.shown(request, row)) : rows;
  };
}

/**
 * The route options of `GET /all`, relative to the group.
 *
 * @example
 * ```ts
 * if (allows(operations, CrudOperations.ListAll)) routes.push(listAllRoute(context));
 * ```
 */
export function listAllRoute(context: RouteContext): RouteOptions {
  return {
    ...context.common,
    ...context.authz.guard(CrudOperations.ListAll, 'listAll'),
    method: 'GET',
    url: 'all',
    schema: documented(listAllSchema(context)),
    handler: listAllHandler(context),
  };
}
