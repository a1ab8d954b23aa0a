// The generated routes of one entity, as route options for the group: schemas from the entity,
// handlers that call the repository, problem answers for everything else. No SQL here.
import type { FastifyReply, FastifyRequest, FastifySchema, RouteOptions } from 'fastify';
import type { CallOptions, Row, WriteOptions } from '../mapper/repository.js';
import type { CrudRouteSettings } from './settings.js';
import { optionalToken, routeAuthorization } from './authorize.js';

export type { CrudRepository, CrudRouteSettings } from './settings.js';
import { createRoute } from './create.js';
import { writeOptions } from './changes.js';
import { historyRoute } from './history.js';
import { ChangeHistory } from '../mapper/history.js';
import { allows, CrudOperations } from '../operations.js';
import { etagOf, matchingVersions, noneMatch, parsePreconditions } from './conditional.js';
import { listHandler } from './list.js';
import { nestedRoutes } from './nested.js';
import { MERGE_PATCH, readBody, requireJson } from './body.js';
import { batchCompiler, MAX_BATCH_ROWS, readChanges, rowsSchema, sendBatchProblem } from './batch.js';
import { fieldsParameter, project, readFields, sendPartial } from './fields.js';
import { includeParameters, includePaths, readIncludes, shapeRow } from './includes.js';
import { valueType, ValueFault } from '../values/kinds.js';
import { badRequest, crudErrorHandler, notFound, preconditionRequired, problem } from './problems.js';
import {
  etagHeader,
  ifMatchHeaders,
  ifNoneMatchHeaders,
  batchPatchName,
  inputName,
  keyParams,
  patchName,
  listQuery,
  pageSchema,
  problemResponse,
  unprocessableResponse,
  ref,
} from './schemas.js';
import { sendProblem } from '@kit/core';

/** Route schemas carry OpenAPI keys (summary, description) that Fastify's type does not list. */
function documented(schema: Record<string, unknown>): FastifySchema {
  return schema as FastifySchema;
}

const IF_MATCH_FORMAT = 'must be * or a comma-separated list of entity-tags ("3", W/"3")';

/** The route options of one entity's generated routes, relative to its group. */
export function crudRoutes(settings: CrudRouteSettings): RouteOptions[] {
  const { entity, operations, limits, repository, validation, cursors, requireIfMatch } = settings;
  const pk = entity.primaryKey;
  const version = entity.version;
  const { schema: listSchema, filters } = listQuery(entity, limits);
  const includes = includePaths(entity, settings.relations);
  const includeQuery = includeParameters(entity, includes);
  const querystring = { ...listSchema, properties: { ...(listSchema.properties as object), ...includeQuery } };
  // Under authorization: each route's own hooks (the token, then the rule: 401/403 before the body
  // is read), the caller's scope in every repository call, hidden fields out of every answer.
  const authz = routeAuthorization(entity, settings.authorization, settings.authenticate, settings.relations);
  // A class without a token check whose answers may include (or nest) an entity with rules still
  // reads a token when one is sent, so that those rules see the caller (without one: anonymous).
  const relatedRules = !settings.authenticate && includes.some((p) => p.relation.authorization !== undefined);
  const onRequest = settings.authenticate ?? (relatedRules && settings.tokenCheck ? optionalToken(settings.tokenCheck()) : undefined);
  const common = {
    errorHandler: crudErrorHandler(entity, filters, authz.hiddenOf),
    validatorCompiler: validation.compiler,
    ...(onRequest ? { onRequest } : {}),
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
        querystring: { type: 'object', properties: { fields: fieldsParameter(entity), ...includeQuery } },
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
  if (allows(operations, CrudOperations.Create)) routes.push(createRoute(settings, { ...common, ...authz.guard(CrudOperations.Create, 'create') }, settings.nested, etag, authz));
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
    ...unprocessableResponse(entity),
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
      const row = await write(keyOf(request), body, { ...options, ...writeOptions(repository.recordsChanges, request, reply, call) });
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
  if (allows(operations, CrudOperations.Patch)) {
    const row = ref(batchPatchName(entity));
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.Patch, 'patch'),
      validatorCompiler: batchCompiler(validation.compiler, row, false),
      method: 'PATCH',
      url: '',
      preValidation: requireJson,
      schema: documented({
        summary: `Change some fields of many ${entity.name} rows at once, all or none`,
        description: `An array of up to ${MAX_BATCH_ROWS} rows, each its ${pk}, the fields to change (a JSON Merge Patch: null clears a nullable field) ${version === undefined ? '' : `and the ${version} it was read at (checked as If-Match would: a row at another version fails the batch with 412 naming it)`}. One transaction: every row changes or none; a failing row is answered naming it ([3]) and nothing is written. The answer lists the stored rows in the order sent.${requireIfMatch ? ` Every row must carry its ${version ?? 'version'} (428 otherwise).` : ''}`,
        consumes: ['application/json', MERGE_PATCH],
        body: rowsSchema(row, false),
        ...authz.schema(CrudOperations.Patch),
        response: {
          ...authz.responses,
          200: { description: `Every ${entity.name} as stored, in the order sent.`, type: 'array', items: ref(entity.name) },
          400: problemResponse(400),
          404: problemResponse(404),
          409: problemResponse(409),
          ...unprocessableResponse(entity),
          ...writeResponses,
        },
      }),
      handler: async (request, reply) => {
        const changes = readChanges(entity, reply, request.body as Record<string, unknown>[], requireIfMatch);
        if (!changes) return reply;
        // A row writing what the caller may not is a 403 naming it; a row outside the scope is missing (404 naming it): nothing written.
        if (!authz.mayWriteRows(request, reply, changes.map((c) => c.patch))) return reply;
        try {
          const rows = await repository.patchMany(changes, writeOptions(repository.recordsChanges, request, reply, authz.call(request, reply)));
          return authz.accessOf ? rows.map((r) => authz.shown(request, r)) : rows;
        } catch (err) {
          return sendBatchProblem(reply, entity, err, changes.map((c) => c.key));
        }
      },
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
        if (!(await repository.delete(keyOf(request), { ...options, ...writeOptions(repository.recordsChanges, request, reply, call) }))) return notFound(reply, entity, keyOf(request));
        return reply.code(204).send();
      },
    });
  }
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
