import type { FastifyInstance } from 'fastify';
import type { RouteTable } from './operation-ids.js';

/**
 * Root-level hooks installed by `addKit`: every later route is tracked for the operationId check,
 * and a 404 whose path carries `%40` is routed again with `@`, because the router compares
 * percent-encoded reserved characters literally and clients encode the `@` of `orders@1`.
 */
export function installRouteHooks(app: FastifyInstance, table: RouteTable): void {
  app.addHook('onRoute', (route) => {
    const handSet = (route.config as { operationId?: unknown } | undefined)?.operationId;
    const schema = route.schema as { operationId?: unknown } | undefined;
    if (typeof handSet === 'string' && handSet !== '' && schema?.operationId === undefined) {
      route.schema = { ...route.schema, operationId: handSet } as typeof route.schema;
    }
    table.track(route);
  });

  app.addHook('onRequest', (request, reply, done) => {
    if (!request.is404) return done();
    const raw = request.raw;
    const url = raw.url ?? '';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (!path.includes('%40')) return done();
    reply.hijack();
    raw.url = path.replaceAll('%40', '@') + (q === -1 ? '' : url.slice(q));
    app.routing(raw, reply.raw);
  });
}
