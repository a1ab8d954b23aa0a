// The generated routes of one entity, as route options for the group, in the order they are
// registered: the reads (read-routes.ts), create (create.ts), the writes by key (write-routes.ts),
// a row's history (history.ts) and the nested lists of its relations (nested.ts). Schemas from the
// entity, handlers that call the repository, problem answers for everything else. No SQL here.
import type { RouteOptions } from 'fastify';
import { ChangeHistory } from '../mapper/history/history.js';
import { allows, CrudOperations } from '../operations.js';
import { createRoute } from './create.js';
import { historyRoute } from './history.js';
import { nestedRoutes } from './nested.js';
import { readRoutes } from './read-routes.js';
import { routeContext } from './route-context.js';
import type { CrudRouteSettings } from './settings.js';
import { writeRoutes } from './write-routes.js';

export type { CrudRepository, CrudRouteSettings } from './settings.js';

/** The route options of one entity's generated routes, relative to its group. */
export function crudRoutes(settings: CrudRouteSettings): RouteOptions[] {
  const context = routeContext(settings);
  const { entity, operations, limits, repository, validation, cursors, authz, common, onRequest, keyOf, etag } = context;
  const routes = readRoutes(context);
  if (allows(operations, CrudOperations.Create)) routes.push(createRoute(settings, { ...common, ...authz.guard(CrudOperations.Create, 'create') }, settings.nested, etag, authz));
  routes.push(...writeRoutes(context));
  // Reading a row's history is reading the row: under the rule of its read by key (its list rule
  // when the class serves no read), as the nested routes read their parent.
  const readFlag = allows(operations, CrudOperations.Get) ? CrudOperations.Get : CrudOperations.List;
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
          exists: async (key, request, reply) => (await repository.get(key, authz.call(request, reply))) !== undefined,
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
      exists: async (key, request, reply) => (await repository.get(key, authz.call(request, reply))) !== undefined,
      keyOf,
      repositoryOf: settings.repositoryOf,
      ...(onRequest ? { authenticate: onRequest } : {}),
      // Under the parent's rules, the parent is read as its own read by key reads it (its list rule when the class serves no read).
      ...(settings.authorization ? { ...authz.guard(readFlag, 'get'), responses: authz.responses } : {}),
    }),
  );
  return routes;
}
