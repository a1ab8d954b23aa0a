// The reads of one entity's generated routes: a page (GET /), every row (GET /all) and one row by
// key (GET /{pk}, with its ETag and If-None-Match).
import type { RouteOptions } from 'fastify';
import { allows, CrudOperations } from '../operations.js';
import { noneMatch, parsePreconditions } from './conditional.js';
import { fieldsParameter, project, readFields, sendPartial } from './fields.js';
import { readIncludes, shapeRow } from './includes.js';
import { listHandler } from './list.js';
import { badRequest, notFound } from './problems.js';
import { byKeyResponses, routeResponses, rowResponse } from './responses.js';
import { documented, type RouteContext } from './route-context.js';
import { ifNoneMatchHeaders, pageSchema, problemResponse, ref } from './schemas.js';

/** The read routes the entity's operations allow. */
export function readRoutes(context: RouteContext): RouteOptions[] {
  const { entity, operations, limits, repository, cursors, pk, version, filters, includes, includeQuery, querystring, authz, common, keyOf, etag, rowHeaders, params } = context;
  const routes: RouteOptions[] = [];
  if (allows(operations, CrudOperations.List)) {
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.List, 'list'),
      method: 'GET',
      url: '',
      schema: documented({
        summary: `List ${entity.name} rows, a page at a time`,
        description:
          'Filters: filter[field]=value or filter[field][op]=value with op one of eq, ne, gt, gte, lt, lte, like, ilike, in, nin, null; all must hold. An OR group: filter[or][n][field][op]=value with n from 0 to 9; a row must also match all conditions of at least one alternative n. Paging: page and pageSize, or after=<the next of the previous page> (a cursor: keyset paging). fields=a,b answers only those fields.',
        querystring,
        ...authz.schema(CrudOperations.List),
        response: { 200: pageSchema(entity), 400: problemResponse(400), ...routeResponses(authz) },
      }),
      handler: listHandler({ entity, filters, limits, repository, cursors, includes, ...(authz.accessOf ? { accessOf: authz.accessOf } : {}) }),
    });
  }
  if (allows(operations, CrudOperations.ListAll)) {
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.ListAll, 'listAll'),
      method: 'GET',
      url: 'all',
      schema: documented({
        summary: `Every ${entity.name} row, unpaged`,
        ...authz.schema(CrudOperations.ListAll),
        response: { 200: { type: 'array', items: ref(entity.name) }, ...routeResponses(authz) },
      }),
      handler: async (request, reply) => {
        const rows = await repository.all(authz.call(request, reply));
        return authz.accessOf ? rows.map((row) => authz.shown(request, row)) : rows;
      },
    });
  }
  if (allows(operations, CrudOperations.Get)) {
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.Get, 'get'),
      method: 'GET',
      url: `{${pk}}`,
      schema: documented({
        summary: `Get one ${entity.name}`,
        params,
        // Not closed (additionalProperties): a read by key has always ignored other parameters (cache busters).
        querystring: { type: 'object', properties: { fields: fieldsParameter(entity), ...includeQuery } },
        ...(version === undefined ? {} : { headers: ifNoneMatchHeaders(entity) }),
        ...authz.schema(CrudOperations.Get),
        response: {
          200: rowResponse(context, `The ${entity.name}.`),
          ...(version === undefined ? {} : { 304: { description: 'Not modified: the ETag in If-None-Match is current.', ...rowHeaders, type: 'null' } }),
          ...byKeyResponses(context),
        },
      }),
      handler: async (request, reply) => {
        const asked = (request.query as { fields?: string }).fields;
        const only = asked === undefined ? undefined : readFields(entity, asked, authz.hiddenOf(request));
        if (only && 'detail' in only) return badRequest(reply, only);
        const included = includes.length > 0 ? readIncludes(includes, request.query as Record<string, unknown>) : undefined;
        if (included && 'detail' in included) return badRequest(reply, included);
        const call = authz.call(request, reply);
        const scoped = included ? await authz.includes(request, reply, included) : undefined;
        if (scoped === false) return reply;
        const row = await repository.get(keyOf(request), scoped ? { ...call, include: scoped.nodes } : call);
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
      },
    });
  }
  return routes;
}
