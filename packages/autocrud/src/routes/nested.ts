// The nested list routes: `GET /api/customer/{id}/orders` is the orders' list (every filter, sort,
// page, cursor and include of `GET /api/order`) scoped to one customer, on the parent's group, for
// each one-to-many relation whose child's class serves its list. 404 when the parent does not
// exist or is soft-deleted. No SQL here.
import type { FastifyReply, FastifyRequest, FastifySchema, RouteOptions } from 'fastify';
import type { Entity } from '../entity.js';
import { CrudOperations } from '../operations.js';
import { admit, refuse, refused, type Access } from './admission.js';
import type { CursorCodec } from './cursor.js';
import { includeParameters, includePaths, type RelationsOf } from './includes.js';
import { listHandler, type ListRepository } from './list.js';
import { openapiText } from './openapi-text.js';
import { crudErrorHandler, notFound } from './problems.js';
import { problemResponse } from './answer-schemas.js';
import { keyParams, listQuery, pageSchema, type PageLimits } from './schemas.js';
import type { CrudValidation } from './validation.js';
import type { onRequestHookHandler } from 'fastify';

/** What the nested routes of one parent entity are made from. */
export interface NestedRouteSettings {
  readonly entity: Entity;
  readonly limits: PageLimits;
  readonly validation: CrudValidation;
  readonly cursors: CursorCodec;
  readonly relations: RelationsOf;
  /** Whether the parent's row exists for this caller (not soft-deleted, inside the caller's scope of the parent). */
  readonly exists: (key: unknown, request: FastifyRequest, reply: FastifyReply) => Promise<boolean>;
  /** The parent's authorization hooks (its read rule), replacing `authenticate` when the parent has rules. */
  readonly onRequest?: onRequestHookHandler[];
  /** The 403 answer in the document, where some rules apply. */
  readonly responses?: Record<string, unknown>;
  /** The request's parent key in Kit's form. */
  readonly keyOf: (request: FastifyRequest) => unknown;
  readonly repositoryOf: (entity: Entity) => ListRepository;
  readonly authenticate?: onRequestHookHandler;
}

/** One `GET {pk}/{relation}` route per listed one-to-many relation of the entity. */
export function nestedRoutes(settings: NestedRouteSettings): RouteOptions[] {
  const { entity, limits, validation, cursors, relations, exists, keyOf } = settings;
  const routes: RouteOptions[] = [];
  for (const relation of relations(entity).values()) {
    if (relation.kind !== 'many' || !relation.listed) continue;
    const child = relation.entity;
    const { schema, filters } = listQuery(child, limits);
    const includes = includePaths(child, relations);
    // The child's rows are listed under the caller's rules of the child (its list), as on its own list route.
    const rules = relation.authorization;
    const accesses = new WeakMap<FastifyRequest, Access>();
    const querystring = {
      ...schema,
      properties: { ...(schema.properties as object), ...includeParameters(child, includes) },
    };
    const list = listHandler({
      entity: child,
      filters,
      limits,
      repository: settings.repositoryOf(child),
      cursors,
      includes,
      scope: (request) => ({ field: relation.field, op: 'eq', value: keyOf(request) }),
      ...(rules ? { accessOf: (request: FastifyRequest) => accesses.get(request) } : {}),
    });
    // Before the query is validated, as on the child's own list route: its hidden fields are unknown to the 400s too.
    const admitChild = async (request: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
      const access = await admit(
        child,
        rules as NonNullable<typeof rules>,
        CrudOperations.List,
        'list',
        request,
      );
      if (refused(access)) return refuse(reply, access);
      accesses.set(request, access);
      return undefined;
    };
    const base = settings.onRequest ?? (settings.authenticate ? [settings.authenticate] : []);
    const onRequest = rules ? [...base, admitChild as onRequestHookHandler] : base;
    routes.push({
      method: 'GET',
      url: `{${entity.primaryKey}}/${relation.name}`,
      errorHandler: crudErrorHandler(
        child,
        filters,
        rules ? (request) => accesses.get(request)?.hidden : undefined,
      ),
      validatorCompiler: validation.compiler,
      ...(onRequest.length > 0 ? { onRequest } : {}),
      schema: {
        summary: openapiText.nested.summary(entity, child),
        description: openapiText.nested.description(entity, child, relation.field),
        params: keyParams(entity),
        querystring,
        response: {
          200: pageSchema(child),
          400: problemResponse(400),
          ...(rules || settings.onRequest ? { 403: problemResponse(403) } : {}),
          404: problemResponse(404),
          503: problemResponse(503),
          504: problemResponse(504),
        },
      } as FastifySchema,
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const key = keyOf(request);
        // A parent outside the caller's scope of it is missing: 404, as on its own read.
        if (!(await exists(key, request, reply))) return notFound(reply, entity, key);
        return list(request, reply);
      },
    });
  }
  return routes;
}
