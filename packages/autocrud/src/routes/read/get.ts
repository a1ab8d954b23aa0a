// GET /{pk} : one row by key, with its ETag and If-None-Match (304), fields and include.
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { CrudOperations } from '../../operations.js';
import { noneMatch, parsePreconditions } from '../conditional.js';
import { fieldsParameter, project, readFields, sendPartial } from '../fields.js';
import { readIncludes, shapeRow } from '../includes.js';
import { asPlans } from '../../mapper/reads/includes.js';
import { openapiText } from '../openapi-text.js';
import { badRequest, notFound } from '../problems.js';
import { byKeyResponses, rowResponse } from '../responses.js';
import { documented, type ReadQuery, type RowContext } from '../route-context.js';
import { ifNoneMatchHeaders } from '../answer-schemas.js';

/** What the read by key needs of the list's query: the relations it may include, and their parameters. */
export type GetNeeds = Pick<ReadQuery, 'includes' | 'includeQuery'>;

function getSchema(context: RowContext, needs: GetNeeds): Record<string, unknown> {
  const { entity, authz, params, rowHeaders } = context;
  const version = entity.version;
  return {
    summary: openapiText.get.summary(entity),
    params,
    // Not closed (additionalProperties): a read by key has always ignored other parameters (cache busters).
    querystring: {
      type: 'object',
      properties: { fields: fieldsParameter(entity), ...needs.includeQuery },
    },
    ...(version === undefined ? {} : { headers: ifNoneMatchHeaders(entity) }),
    ...authz.schema(CrudOperations.Get),
    response: {
      200: rowResponse(context, openapiText.get.ok(entity)),
      ...(version === undefined
        ? {}
        : { 304: { description: openapiText.get.notModified, ...rowHeaders, type: 'null' } }),
      ...byKeyResponses(context),
    },
  };
}

function getHandler(
  { entity, repository, authz, keyOf, etag }: RowContext,
  { includes }: GetNeeds,
) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const asked = (request.query as { fields?: string }).fields;
    const only =
      asked === undefined ? undefined : readFields(entity, asked, authz.hiddenOf(request));
    if (only && 'detail' in only) return badRequest(reply, only);
    const included =
      includes.length > 0
        ? readIncludes(includes, request.query as Record<string, unknown>)
        : undefined;
    if (included && 'detail' in included) return badRequest(reply, included);
    const call = authz.call(request, reply);
    const scoped = included ? await authz.includes(request, reply, included) : undefined;
    if (scoped === false) return reply;
    const row = await repository.get(
      keyOf(request),
      scoped ? { ...call, include: asPlans(scoped.nodes) } : call,
    );
    if (!row) return notFound(reply, entity, keyOf(request));
    // The ETag is the row's version: an answer that includes other rows has none (docs/decisions.md, "AutoCrud includes").
    if (included && scoped) {
      sendPartial(reply);
      return shapeRow(row, only, scoped.nodes, included.fields, '', scoped.hidden);
    }
    if (etag) {
      const current = etag(row);
      reply.header('etag', current);
      const held = request.headers['if-none-match'];
      const preconditions = held === undefined ? undefined : parsePreconditions(held);
      if (preconditions && !noneMatch(preconditions, current)) return reply.code(304).send();
    }
    if (!only) return authz.shown(request, row);
    sendPartial(reply);
    return project(row, only);
  };
}

/**
 * The route options of `GET /{pk}`, relative to the group.
 *
 * @example
 * ```ts
 * if (allows(operations, CrudOperations.Get)) routes.push(getRoute(context, query));
 * ```
 */
export function getRoute(context: RowContext, needs: GetNeeds): RouteOptions {
  return {
    ...context.common,
    ...context.authz.guard(CrudOperations.Get, 'get'),
    method: 'GET',
    url: `{${context.entity.primaryKey}}`,
    schema: documented(getSchema(context, needs)),
    handler: getHandler(context, needs),
  };
}
