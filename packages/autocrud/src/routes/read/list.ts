// GET / : a page of rows (filters, sort, page or cursor, fields, include).
import type { RouteOptions } from 'fastify';
import { CrudOperations } from '../../operations.js';
import { listHandler } from '../list.js';
import { openapiText } from '../openapi-text.js';
import { routeResponses } from '../responses.js';
import { documented, type ReadQuery, type RouteContext } from '../route-context.js';
import { problemResponse } from '../answer-schemas.js';
import { pageSchema, type PageLimits } from '../schemas.js';
import type { CrudRouteSettings } from '../settings.js';

/** What the list route needs besides the shared context: its query, the page limits and the cursors. */
export interface ListNeeds {
  readonly query: ReadQuery;
  readonly limits: PageLimits;
  readonly cursors: CrudRouteSettings['cursors'];
}

function listSchema(context: RouteContext, needs: ListNeeds): Record<string, unknown> {
  const { entity, authz } = context;
  return {
    summary: openapiText.list.summary(entity),
    description: openapiText.list.description,
    querystring: needs.query.querystring,
    ...authz.schema(CrudOperations.List),
    response: { 200: pageSchema(entity), 400: problemResponse(400), ...routeResponses(authz) },
  };
}

/**
 * The route options of `GET /`, relative to the group.
 *
 * @example
 * ```ts
 * routes.push(listRoute(context, { query, limits: settings.limits, cursors: settings.cursors }));
 * ```
 */
export function listRoute(context: RouteContext, needs: ListNeeds): RouteOptions {
  const { entity, repository, authz, common } = context;
  const { filters, includes } = needs.query;
  return {
    ...common,
    ...authz.guard(CrudOperations.List, 'list'),
    method: 'GET',
    url: '',
    schema: documented(listSchema(context, needs)),
    handler: listHandler({
      entity,
      filters,
      limits: needs.limits,
      repository,
      cursors: needs.cursors,
      includes,
      ...(authz.accessOf ? { accessOf: authz.accessOf } : {}),
    }),
  };
}
