// POST / : the one create route. It reads which kind of create the request is (an array: bulk.ts;
// an object carrying relations: nested.ts; else single.ts; under Prefer: resolution=..., upsert.ts),
// has that kind plan it, and runs the plan once, or at most once per Idempotency-Key
// (idempotent.ts). Every answer says what it did. The schema is schema.ts's.
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Row, UpsertedRow } from '../../mapper/repository.js';
import type { RouteAuthorization } from '../authorize.js';
import { batchCompiler, sendBatchProblem } from '../batch.js';
import { requireJson } from '../body.js';
import { writeOptions } from '../changes.js';
import { badRequest } from '../problems.js';
import { documented } from '../route-context.js';
import { inputName, ref } from '../schemas.js';
import type { CrudRouteSettings } from '../settings.js';
import { planBulk } from './bulk.js';
import {
  IDEMPOTENCY_HEADER,
  idempotentCreate,
  sendCreated,
  type CreatedAnswer,
} from './idempotent.js';
import { planNested } from './nested.js';
import type { CreateCall, CreateContext, CreatePlan, UpsertPreference } from './plan.js';
import { createSchema } from './schema.js';
import { planSingle } from './single.js';
import { conflictKey, ON_CONFLICT, OUTCOMES_HEADER, resolutionOf } from './upsert.js';
import { parameterText } from '../../answers.js';

/** The create's context: the answers it gives, made once from the route's settings. */
function createContext(
  settings: CrudRouteSettings,
  authz: RouteAuthorization,
  etag: ((row: Row) => string) | undefined,
): CreateContext {
  const { entity, repository, prefix } = settings;
  const location = (row: Row) => `${prefix}/${encodeURIComponent(String(row[entity.primaryKey]))}`;
  const created = (row: Row, shown: Row = row): CreatedAnswer => ({
    location: location(row),
    etag: etag?.(row),
    row: shown,
  });
  const outcomes = (
    rows: readonly UpsertedRow[],
    token: string,
    single: boolean,
  ): CreatedAnswer => {
    const headers = {
      'preference-applied': token,
      [OUTCOMES_HEADER]: rows.map((r) => r.outcome).join(', '),
    };
    const status = rows.every((r) => r.outcome === 'created') ? 201 : 200;
    if (!single)
      return { status, location: undefined, etag: undefined, row: rows.map((r) => r.row), headers };
    const { row, outcome } = rows[0] as UpsertedRow;
    return {
      status,
      location: outcome === 'created' ? location(row) : undefined,
      etag: etag?.(row),
      row,
      headers,
    };
  };
  return {
    entity,
    repository,
    authz,
    nested: settings.nested,
    relationsOf: settings.relations,
    created,
    outcomes,
  };
}

/** The plan of the kind of create the body asks for. */
function planCreate(
  c: CreateCall,
  preference: UpsertPreference | undefined,
): CreatePlan | undefined | Promise<CreatePlan | undefined> {
  const given = c.request.body as Record<string, unknown> | Record<string, unknown>[];
  if (Array.isArray(given)) return planBulk(c, given, preference);
  const relations = c.context.nested.carried(given);
  if (relations.length > 0) return planNested(c, given, relations, preference);
  return planSingle(c, given, preference);
}

/** Rows are JSON values already (the mapper's answer); a problem body arrives as text. */
function asJson(payload: unknown): string {
  return typeof payload === 'string' ? payload : JSON.stringify(payload);
}

function createHandler(context: CreateContext, settings: CrudRouteSettings) {
  const { entity, repository, authz, nested } = context;
  const { idempotency, prefix } = settings;
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const key = request.headers[IDEMPOTENCY_HEADER];
    const call = authz.call(request, reply);
    const preference =
      request.headers.prefer === undefined ? undefined : resolutionOf(request.headers.prefer);
    if (preference && entity.unique.length === 0) {
      return badRequest(reply, {
        in: 'headers',
        name: 'Prefer',
        detail: parameterText('noUniqueKey', { token: preference.token, entity: entity.name }),
      });
    }
    const conflict = conflictKey(
      entity,
      (request.query as Record<string, unknown> | undefined)?.[ON_CONFLICT],
      preference,
    );
    if ('fault' in conflict) return badRequest(reply, conflict.fault);
    // The caller's scope and, when the entity records its changes, the request's ChangeContext.
    const createCall: CreateCall = {
      context,
      request,
      reply,
      call,
      options: writeOptions(repository.recordsChanges, request, reply, call),
      shown: (row) => authz.shown(request, row),
    };
    const plan = await planCreate(createCall, preference && { ...preference, key: conflict.key });
    if (!plan) return reply;
    // One row: the route's compiled serializer (its 201 is the row's schema). Many rows or a
    // tree: the mapper's JSON values as they are (the row's serializer would drop the children).
    if (plan.serializeAsJson) reply.serializer(asJson).type('application/json; charset=utf-8');
    const create = plan.create;
    try {
      if (idempotency && typeof key === 'string')
        return await idempotentCreate(
          request,
          reply,
          idempotency,
          { entity, prefix, key, body: plan.body, extra: plan.extra },
          create,
        );
      return sendCreated(reply, await create());
    } catch (err) {
      return sendBatchProblem(reply, entity, err, undefined, nested.entities);
    }
  };
}

/**
 * The route options of `POST /`, relative to the group: one row, many (an array, all or none), a
 * row with its children (a nested create, all or none), or an upsert on the entity's unique key.
 *
 * @example
 * ```ts
 * if (allows(operations, CrudOperations.Create)) routes.push(createRoute(settings, { ...common, ...authz.guard(CrudOperations.Create, 'create') }, etag, authz));
 * ```
 */
export function createRoute(
  settings: CrudRouteSettings,
  common: Partial<RouteOptions>,
  etag: ((row: Row) => string) | undefined,
  authz: RouteAuthorization,
): RouteOptions {
  const { entity, validation, nested } = settings;
  const context = createContext(settings, authz, etag);
  return {
    ...common,
    validatorCompiler: batchCompiler(validation.compiler, ref(inputName(entity)), (validateRow) =>
      nested.validator(validateRow),
    ),
    method: 'POST',
    url: '',
    preValidation: requireJson,
    schema: documented(
      createSchema({ entity, authz, nested, idempotent: Boolean(settings.idempotency) }),
    ),
    handler: createHandler(context, settings),
  };
}
