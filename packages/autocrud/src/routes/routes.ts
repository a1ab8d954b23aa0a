/**
 * @packageDocumentation
 * The generated routes of one entity, as route options for its group, in the order they are
 * registered. The entry of `routes/`: no SQL here or below, only the repository's operations.
 *
 * Where a route lives is said by its folder, one file per route (and per kind of create), each
 * holding its schema and its handler as two functions, and taking its prose from one file:
 *
 * | folder / file | what it holds |
 * |---|---|
 * | `read/list.ts`, `read/list-all.ts`, `read/get.ts` | `GET /`, `GET /all`, `GET /{pk}` |
 * | `write/replace.ts`, `write/patch.ts`, `write/bulk-patch.ts`, `write/delete.ts` | `PUT /{pk}`, `PATCH /{pk}`, `PATCH /`, `DELETE /{pk}`; `write/by-key.ts` what the writes by key share |
 * | `create/route.ts` | `POST /`: picks the kind of create and runs its plan; `create/schema.ts` its document |
 * | `create/single.ts`, `create/bulk.ts`, `create/nested.ts`, `create/upsert.ts`, `create/idempotent.ts` | each kind of create, and the at-most-once run under `Idempotency-Key` |
 * | `history.ts`, `nested.ts` | `GET /{pk}/history`, `GET /{pk}/{relation}` |
 * | `openapi-text.ts`, `limits.ts` | every summary and description of the document; the limits it and the handlers state |
 * | `route-context.ts` | what every route needs (`RouteContext`), a route by key (`RowContext`), a write (`WriteContext`) |
 * | `problems.ts`, `validation-faults.ts` | the one error handler, and the 400 naming a parameter at fault |
 * | `route-errors.ts` | the routes' own answers (no row, no `If-Match`, a parameter at fault, a refused caller, …) as errors carrying their codes |
 * | the other files | what several routes use: bodies, batches, cursors, fields, includes, conditional requests, authorization |
 *
 * What only one route needs (the list's query and cursors, the create's settings) is passed to
 * that route here, not kept in the shared context.
 */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { ChangeHistory } from '../mapper/history/history.js';
import { allows, CrudOperations } from '../operations.js';
import { createRoute } from './create/route.js';
import { historyRoute } from './history.js';
import { nestedRoutes } from './nested.js';
import { getRoute } from './read/get.js';
import { listAllRoute } from './read/list-all.js';
import { listRoute } from './read/list.js';
import { readQuery, routeContext } from './route-context.js';
import type { CrudRouteSettings } from './settings.js';
import { bulkPatchRoute } from './write/bulk-patch.js';
import { deleteRoute } from './write/delete.js';
import { patchRoute } from './write/patch.js';
import { replaceRoute } from './write/replace.js';

export type { CrudRepository, CrudRouteSettings } from './settings.js';

/**
 * The route options of one entity's generated routes, relative to its group.
 *
 * @example
 * ```ts
 * for (const route of crudRoutes(settings)) group.route(route);
 * ```
 */
export function crudRoutes(settings: CrudRouteSettings): RouteOptions[] {
  const { entity, operations, limits, repository, validation, cursors } = settings;
  const query = readQuery(settings);
  const { context, onRequest } = routeContext(settings, query);
  const { authz, common, keyOf, etag } = context;
  const routes: RouteOptions[] = [];
  if (allows(operations, CrudOperations.List))
    routes.push(listRoute(context, { query, limits, cursors }));
  if (allows(operations, CrudOperations.ListAll)) routes.push(listAllRoute(context));
  if (allows(operations, CrudOperations.Get)) routes.push(getRoute(context, query));
  if (allows(operations, CrudOperations.Create))
    routes.push(
      createRoute(
        settings,
        { ...common, ...authz.guard(CrudOperations.Create, 'create') },
        etag,
        authz,
      ),
    );
  if (allows(operations, CrudOperations.Update)) routes.push(replaceRoute(context));
  if (allows(operations, CrudOperations.Patch))
    routes.push(patchRoute(context), bulkPatchRoute(context, validation));
  if (allows(operations, CrudOperations.Delete)) routes.push(deleteRoute(context));
  // Reading a row's history is reading the row: under the rule of its read by key (its list rule
  // when the class serves no read), as the nested routes read their parent.
  const readFlag = allows(operations, CrudOperations.Get)
    ? CrudOperations.Get
    : CrudOperations.List;
  const exists = async (key: unknown, request: FastifyRequest, reply: FastifyReply) =>
    (await repository.get(key, authz.call(request, reply))) !== undefined;
  if (allows(operations, CrudOperations.History)) {
    routes.push(
      historyRoute(
        {
          entity,
          limits,
          history: settings.repositoryOf(ChangeHistory),
          cursors,
          keyOf,
          authz,
          readFlag,
          exists,
        },
        { ...common, ...authz.guard(readFlag, 'get') },
      ),
    );
  }
  routes.push(
    ...nestedRoutes({
      entity,
      limits,
      validation,
      cursors,
      relations: settings.relations,
      exists,
      keyOf,
      repositoryOf: settings.repositoryOf,
      ...(onRequest ? { authenticate: onRequest } : {}),
      // Under the parent's rules, the parent is read as its own read by key reads it (its list rule when the class serves no read).
      ...(settings.authorization
        ? { ...authz.guard(readFlag, 'get'), responses: authz.responses }
        : {}),
    }),
  );
  return routes;
}
