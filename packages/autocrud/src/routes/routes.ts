// The generated routes of one entity, as route options for the group: schemas from the entity,
// handlers that call the repository, problem answers for everything else. No SQL here.
import type { FastifyReply, FastifyRequest, FastifySchema, onRequestHookHandler, RouteOptions } from 'fastify';
import type { Entity } from '../entity.js';
import type { CallOptions, Row, WriteOptions } from '../mapper/repository.js';
import type { ResolvedAuthorization } from '../authorization.js';
import { routeAuthorization } from './authorize.js';
import { allows, CrudOperations } from '../operations.js';
import { etagOf, matchingVersions, noneMatch, parsePreconditions } from './conditional.js';
import type { CursorCodec } from './cursor.js';
import { IDEMPOTENCY_HEADER, idempotentCreate, sendCreated, type CreatedAnswer, type IdempotencySettings } from './idempotency.js';
import { listHandler, type ListRepository } from './list.js';
import { MERGE_PATCH, readBody, requireJson } from './body.js';
import { fieldsParameter, project, readFields, sendPartial } from './fields.js';
import { valueType, ValueFault } from '../values/kinds.js';
import { badRequest, crudErrorHandler, notFound, preconditionRequired, problem } from './problems.js';
import {
  etagHeader,
  idempotencyHeaders,
  ifMatchHeaders,
  ifNoneMatchHeaders,
  inputName,
  keyParams,
  patchName,
  listQuery,
  pageSchema,
  problemResponse,
  ref,
  RETRY_AFTER_HEADER,
  type PageLimits,
} from './schemas.js';
import type { CrudValidation } from './validation.js';
import { sendProblem } from '@kit/core';

/** What the routes need of the mapper: the repository's operations, nothing of SQL. */
export interface CrudRepository extends ListRepository {
  all(options?: CallOptions): Promise<Row[]>;
  get(key: unknown, options?: CallOptions): Promise<Row | undefined>;
  create(input: Readonly<Record<string, unknown>>, options?: CallOptions): Promise<Row>;
  update(key: unknown, input: Readonly<Record<string, unknown>>, options?: WriteOptions): Promise<Row | undefined>;
  patch(key: unknown, patch: Readonly<Record<string, unknown>>, options?: WriteOptions): Promise<Row | undefined>;
  delete(key: unknown, options?: WriteOptions): Promise<boolean>;
}

/** Everything the routes of one `@AutoCrud` class are made from. */
export interface CrudRouteSettings {
  readonly entity: Entity;
  readonly operations: number;
  readonly limits: PageLimits;
  readonly repository: CrudRepository;
  readonly validation: CrudValidation;
  /** The group's URL prefix, for `Location` (`/api/product`). */
  readonly prefix: string;
  /** `app.kitAuthenticate` when every route requires a bearer token. */
  readonly authenticate?: onRequestHookHandler;
  /** Signs and checks the list's cursors. */
  readonly cursors: CursorCodec;
  /** Exactly-once creates with `Idempotency-Key`; absent: off. */
  readonly idempotency?: IdempotencySettings;
  /** `PUT`, `PATCH` and `DELETE` without `If-Match` are 428. */
  readonly requireIfMatch: boolean;
  /** Who may do what to which rows (with `authenticate`, which it needs); absent: every caller the token check admits may do everything. */
  readonly authorization?: ResolvedAuthorization;
}

/** Route schemas carry OpenAPI keys (summary, description) that Fastify's type does not list. */
function documented(schema: Record<string, unknown>): FastifySchema {
  return schema as FastifySchema;
}

const IF_MATCH_FORMAT = 'must be * or a comma-separated list of entity-tags ("3", W/"3")';

/** The route options of one entity's generated routes, relative to its group. */
export function crudRoutes(settings: CrudRouteSettings): RouteOptions[] {
  const { entity, operations, limits, repository, validation, cursors, idempotency, requireIfMatch, prefix } = settings;
  const pk = entity.primaryKey;
  const version = entity.version;
  const { schema: querystring, filters } = listQuery(entity, limits);
  // Under authorization: each route's own hooks (the token, then the rule: 401/403 before the body
  // is read), the caller's scope in every repository call, hidden fields out of every answer.
  const authz = routeAuthorization(entity, settings.authorization, settings.authenticate);
  const common = {
    errorHandler: crudErrorHandler(entity, filters, authz.hiddenOf),
    validatorCompiler: validation.compiler,
    ...(settings.authenticate ? { onRequest: settings.authenticate } : {}),
  };
  // The key in Kit's form (a UUID in lower case), as the repository and the answers have it.
  const pkType = valueType(entity.field(pk)?.kind ?? 'integer');
  const keyOf = (request: FastifyRequest) => {
    const raw = (request.params as Record<string, unknown>)[pk];
    const key = pkType.fromJson(raw);
    return key instanceof ValueFault ? raw : key;
  };
  const etag = version === undefined ? undefined : (row: Row) => etagOf(row[version]);
  const rowHeaders = version === undefined ? {} : { headers: etagHeader(entity) };

  /**
   * The version condition `If-Match` puts on a write, or `undefined` once it has answered that the
   * write must not run: 428 without it under requireIfMatch, 400 when malformed, 412/404 for an
   * entity without a version (its rows have no ETag, so no list of tags can match). Never the
   * reply itself: a Fastify reply is a thenable, so an async function returning it resolves to
   * `undefined` once the answer is sent.
   */
  const condition = async (request: FastifyRequest, reply: FastifyReply, call: CallOptions): Promise<WriteOptions | undefined> => {
    const header = request.headers['if-match'];
    if (header === undefined) {
      if (!requireIfMatch) return {};
      preconditionRequired(reply, entity);
      return undefined;
    }
    const preconditions = parsePreconditions(header);
    if (!preconditions) {
      badRequest(reply, { in: 'headers', name: 'If-Match', detail: IF_MATCH_FORMAT });
      return undefined;
    }
    if (preconditions.any) return {};
    if (version !== undefined) return { ifVersion: matchingVersions(preconditions) };
    const exists = (await repository.get(keyOf(request), call)) !== undefined;
    if (exists) sendProblem(reply, problem(412, `${entity.name} rows have no ETag, so If-Match cannot match; nothing was written.`));
    else notFound(reply, entity, keyOf(request));
    return undefined;
  };
  /** The body in Kit's form, or `undefined` once a 400 naming the field is sent. */
  const bodyOf = (request: FastifyRequest, reply: FastifyReply): Record<string, unknown> | undefined => {
    const read = readBody(entity, request.body as Record<string, unknown>);
    if ('values' in read) return read.values;
    badRequest(reply, read.fault);
    return undefined;
  };

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
        response: { 200: pageSchema(entity), 400: problemResponse(400), ...authz.responses, 503: problemResponse(503), 504: problemResponse(504) },
      }),
      handler: listHandler({ entity, filters, limits, repository, cursors, ...(authz.accessOf ? { accessOf: authz.accessOf } : {}) }),
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
        response: { 200: { type: 'array', items: ref(entity.name) }, ...authz.responses, 503: problemResponse(503), 504: problemResponse(504) },
      }),
      handler: async (request, reply) => {
        const rows = await repository.all(authz.call(request, reply));
        return authz.accessOf ? rows.map((row) => authz.shown(request, row)) : rows;
      },
    });
  }
  const params = keyParams(entity);
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
        querystring: { type: 'object', properties: { fields: fieldsParameter(entity) } },
        ...(version === undefined ? {} : { headers: ifNoneMatchHeaders(entity) }),
        ...authz.schema(CrudOperations.Get),
        response: {
          ...authz.responses,
          200: { description: `The ${entity.name}.`, ...rowHeaders, ...ref(entity.name) },
          ...(version === undefined ? {} : { 304: { description: 'Not modified: the ETag in If-None-Match is current.', ...rowHeaders, type: 'null' } }),
          400: problemResponse(400),
          404: problemResponse(404),
          503: problemResponse(503), 504: problemResponse(504),
        },
      }),
      handler: async (request, reply) => {
        const asked = (request.query as { fields?: string }).fields;
        const only = asked === undefined ? undefined : readFields(entity, asked, authz.hiddenOf(request));
        if (only && 'detail' in only) return badRequest(reply, only);
        const row = await repository.get(keyOf(request), authz.call(request, reply));
        if (!row) return notFound(reply, entity, keyOf(request));
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
  if (allows(operations, CrudOperations.Create)) {
    const created = (row: Row, shownRow: Row): CreatedAnswer => ({ location: `${prefix}/${encodeURIComponent(String(row[pk]))}`, etag: etag?.(row), row: shownRow });
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.Create, 'create'),
      method: 'POST',
      url: '',
      preValidation: requireJson,
      schema: documented({
        summary: `Create a ${entity.name}${idempotency ? ' (at most once per Idempotency-Key)' : ''}`,
        ...(idempotency ? { headers: idempotencyHeaders() } : {}),
        body: ref(inputName(entity)),
        ...authz.schema(CrudOperations.Create),
        response: {
          ...authz.responses,
          201: {
            description: `The ${entity.name} as stored; Location names it.${idempotency ? ' A replay of an earlier request with the same Idempotency-Key carries Idempotent-Replayed: true.' : ''}`,
            headers: {
              Location: { type: 'string' },
              ...(version === undefined ? {} : etagHeader(entity)),
              ...(idempotency ? { 'Idempotent-Replayed': { type: 'string', enum: ['true', 'false'], description: 'true when this is the stored answer of an earlier request with the same Idempotency-Key.' } } : {}),
            },
            ...ref(entity.name),
          },
          400: problemResponse(400),
          409: idempotency
            ? problemResponse(409, { description: 'A unique or foreign-key constraint; or a request with the same Idempotency-Key is still in progress (Retry-After).', headers: RETRY_AFTER_HEADER })
            : problemResponse(409),
          ...(idempotency ? { 422: problemResponse(422) } : {}),
          503: problemResponse(503), 504: problemResponse(504),
        },
      }),
      handler: async (request, reply) => {
        const body = bodyOf(request, reply);
        if (!body || !authz.mayWrite(request, reply, body)) return reply;
        const key = request.headers[IDEMPOTENCY_HEADER];
        const call = authz.call(request, reply);
        // A replay answers what was stored: the row as this caller saw it (keys are the caller's own).
        const create = async () => {
          const row = await repository.create(body, call);
          return created(row, authz.shown(request, row));
        };
        if (idempotency && typeof key === 'string') return idempotentCreate(request, reply, idempotency, { entity, prefix, key, body }, create);
        return sendCreated(reply, await create());
      },
    });
  }
  const conditional = version !== undefined || requireIfMatch;
  const writeResponses = {
    ...(conditional ? { 412: problemResponse(412) } : {}),
    ...(requireIfMatch ? { 428: problemResponse(428) } : {}),
    ...authz.responses,
    503: problemResponse(503), 504: problemResponse(504),
  };
  // PUT and PATCH answer alike: the row as stored (with its ETag), 404 without it, the same refusals.
  const rowWriteResponses = {
    200: { description: `The ${entity.name} as stored.`, ...rowHeaders, ...ref(entity.name) },
    400: problemResponse(400),
    404: problemResponse(404),
    409: problemResponse(409),
    ...writeResponses,
  };
  const writeByKey =
    (write: (key: unknown, body: Readonly<Record<string, unknown>>, options: WriteOptions) => Promise<Row | undefined>) =>
    async (request: FastifyRequest, reply: FastifyReply) => {
      const body = bodyOf(request, reply);
      if (!body || !authz.mayWrite(request, reply, body)) return reply;
      const call = authz.call(request, reply);
      const options = await condition(request, reply, call);
      if (!options) return reply;
      const row = await write(keyOf(request), body, { ...options, ...call });
      if (!row) return notFound(reply, entity, keyOf(request));
      if (etag) reply.header('etag', etag(row));
      return authz.shown(request, row);
    };
  if (allows(operations, CrudOperations.Update)) {
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.Update, 'update'),
      method: 'PUT',
      url: `{${pk}}`,
      preValidation: requireJson,
      schema: documented({
        summary: `Replace the writable fields of a ${entity.name}`,
        params,
        ...(conditional ? { headers: ifMatchHeaders(entity, requireIfMatch) } : {}),
        body: ref(inputName(entity)),
        ...authz.schema(CrudOperations.Update),
        response: rowWriteResponses,
      }),
      handler: writeByKey((key, body, options) => repository.update(key, body, options)),
    });
  }
  if (allows(operations, CrudOperations.Patch)) {
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.Patch, 'patch'),
      method: 'PATCH',
      url: `{${pk}}`,
      preValidation: requireJson,
      schema: documented({
        summary: `Change some fields of a ${entity.name} (JSON Merge Patch)`,
        description:
          'A JSON Merge Patch (RFC 7396, application/merge-patch+json; application/json is taken too): the fields it names change, null clears a nullable field, the others stay. A field holding JSON is replaced whole, not merged. An empty patch changes nothing and answers the row.',
        params,
        ...(conditional ? { headers: ifMatchHeaders(entity, requireIfMatch) } : {}),
        consumes: ['application/json', MERGE_PATCH],
        body: ref(patchName(entity)),
        ...authz.schema(CrudOperations.Patch),
        response: rowWriteResponses,
      }),
      handler: writeByKey((key, body, options) => repository.patch(key, body, options)),
    });
  }
  if (allows(operations, CrudOperations.Delete)) {
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.Delete, 'delete'),
      method: 'DELETE',
      url: `{${pk}}`,
      schema: documented({
        summary: entity.softDelete ? `Delete a ${entity.name} (soft: it disappears from every read)` : `Delete a ${entity.name}`,
        params,
        ...(conditional ? { headers: ifMatchHeaders(entity, requireIfMatch) } : {}),
        ...authz.schema(CrudOperations.Delete),
        response: { 204: { description: 'Deleted.', type: 'null' }, 400: problemResponse(400), 404: problemResponse(404), 409: problemResponse(409), ...writeResponses },
      }),
      handler: async (request, reply) => {
        const call = authz.call(request, reply);
        const options = await condition(request, reply, call);
        if (!options) return reply;
        if (!(await repository.delete(keyOf(request), { ...options, ...call }))) return notFound(reply, entity, keyOf(request));
        return reply.code(204).send();
      },
    });
  }
  return routes;
}
