// What the generated routes of one entity share, in three widths: what every route needs
// (RouteContext), what a route about one row by key adds (RowContext: the key from the path, the
// row's ETag), and what a write by key adds (WriteContext: the If-Match condition, the body in
// Kit's form). Anything only one route needs is passed to that route by routes.ts, not kept here.
import type {
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  onRequestHookHandler,
  RouteOptions,
} from 'fastify';
import type { CallOptions, Row, WriteOptions } from '../mapper/repository.js';
import { valueType, ValueFault } from '../values/kinds.js';
import { optionalToken } from './admission.js';
import { routeAuthorization, type RouteAuthorization } from './authorize.js';
import { readBody } from './body.js';
import { etagOf, matchingVersions, parsePreconditions } from './conditional.js';
import { includeParameters, includePaths, type IncludePath } from './includes.js';
import {
  badRequest,
  crudErrorHandler,
  notFound,
  preconditionRequired,
  answer,
} from './problems.js';
import { etagHeader } from './answer-schemas.js';
import { NoEtagError } from './route-errors.js';
import { keyParams, listQuery, type FilterParameter } from './schemas.js';
import type { CrudRouteSettings } from './settings.js';
import { parameterText } from '../answers.js';

/** Route schemas carry OpenAPI keys (summary, description) that Fastify's type does not list. */
export function documented(schema: Record<string, unknown>): FastifySchema {
  return schema as FastifySchema;
}

/**
 * What every generated route of one entity needs. Written out, not inferred: the declarations of
 * a packed build cannot name the types some of these are inferred from.
 */
export interface RouteContext {
  readonly entity: CrudRouteSettings['entity'];
  readonly repository: CrudRouteSettings['repository'];
  readonly authz: RouteAuthorization;
  /** Every route's error handler, validator and token check. */
  readonly common: Partial<RouteOptions>;
}

/** What a route about one row by key (`/{pk}`) needs besides. */
export interface RowContext extends RouteContext {
  /** The path parameter's schema. */
  readonly params: Record<string, unknown>;
  /** The key of the path, in Kit's form (a UUID in lower case), or as sent when it is not one. */
  readonly keyOf: (request: FastifyRequest) => unknown;
  /** The row's ETag; `undefined` for an entity without a version. */
  readonly etag: ((row: Row) => string) | undefined;
  /** The ETag header of an answer holding the row, for the document (none without a version). */
  readonly rowHeaders: Record<string, unknown>;
}

/** What a write by key (PUT, PATCH, DELETE) and a bulk PATCH need besides. */
export interface WriteContext extends RowContext {
  readonly requireIfMatch: boolean;
  /**
   * The version condition `If-Match` puts on a write, or `undefined` once it has answered that the
   * write must not run (see {@link routeContext}).
   */
  readonly condition: (
    request: FastifyRequest,
    reply: FastifyReply,
    call: CallOptions,
  ) => Promise<WriteOptions | undefined>;
  /** The body in Kit's form, or `undefined` once a 400 naming the field is sent. */
  readonly bodyOf: (
    request: FastifyRequest,
    reply: FastifyReply,
  ) => Record<string, unknown> | undefined;
}

/** The list's query of one entity, made once: its schema, its filters and the relations it may include. */
export interface ReadQuery {
  readonly filters: ReadonlyMap<string, FilterParameter>;
  readonly includes: readonly IncludePath[];
  /** The `include` parameters, also taken by the read by key. */
  readonly includeQuery: Record<string, Record<string, unknown>>;
  /** The list's whole querystring schema. */
  readonly querystring: Record<string, unknown>;
}

/** The list's query of one entity (see {@link ReadQuery}). */
export function readQuery(settings: CrudRouteSettings): ReadQuery {
  const { schema: listSchema, filters } = listQuery(settings.entity, settings.limits);
  const includes = includePaths(settings.entity, settings.relations);
  const includeQuery = includeParameters(settings.entity, includes);
  const querystring = {
    ...listSchema,
    properties: { ...(listSchema.properties as object), ...includeQuery },
  };
  return { filters, includes, includeQuery, querystring };
}

/**
 * The shared parts of one entity's generated routes, made once per entity at start-up, and the
 * token check its routes run (`onRequest`), which the nested routes take too.
 */
export function routeContext(
  settings: CrudRouteSettings,
  query: ReadQuery,
): { context: WriteContext; onRequest: onRequestHookHandler | undefined } {
  const { entity, repository, validation, requireIfMatch } = settings;
  const pk = entity.primaryKey;
  const version = entity.version;
  // Under authorization: each route's own hooks (the token, then the rule: 401/403 before the body
  // is read), the caller's scope in every repository call, hidden fields out of every answer.
  const authz = routeAuthorization(
    entity,
    settings.authorization,
    settings.authenticate,
    settings.relations,
  );
  // A class without a token check whose answers may include (or nest) an entity with rules still
  // reads a token when one is sent, so that those rules see the caller (without one: anonymous).
  const relatedRules =
    !settings.authenticate && query.includes.some((p) => p.relation.authorization !== undefined);
  const onRequest =
    settings.authenticate ??
    (relatedRules && settings.tokenCheck ? optionalToken(settings.tokenCheck()) : undefined);
  const common = {
    errorHandler: crudErrorHandler(entity, query.filters, authz.hiddenOf),
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
  const condition = async (
    request: FastifyRequest,
    reply: FastifyReply,
    call: CallOptions,
  ): Promise<WriteOptions | undefined> => {
    const header = request.headers['if-match'];
    if (header === undefined) {
      if (!requireIfMatch) return {};
      preconditionRequired(reply, entity);
      return undefined;
    }
    const preconditions = parsePreconditions(header);
    if (!preconditions) {
      badRequest(reply, {
        in: 'headers',
        name: 'If-Match',
        detail: parameterText('ifMatchFormat'),
      });
      return undefined;
    }
    if (preconditions.any) return {};
    if (version !== undefined) return { ifVersion: matchingVersions(preconditions) };
    const exists = (await repository.get(keyOf(request), call)) !== undefined;
    if (exists) answer(reply, new NoEtagError(entity.name));
    else notFound(reply, entity, keyOf(request));
    return undefined;
  };
  const bodyOf = (
    request: FastifyRequest,
    reply: FastifyReply,
  ): Record<string, unknown> | undefined => {
    const read = readBody(entity, request.body as Record<string, unknown>);
    if ('values' in read) return read.values;
    badRequest(reply, read.fault);
    return undefined;
  };

  const params = keyParams(entity);
  return {
    context: {
      entity,
      repository,
      authz,
      common,
      params,
      keyOf,
      etag,
      rowHeaders,
      requireIfMatch,
      condition,
      bodyOf,
    },
    onRequest,
  };
}
