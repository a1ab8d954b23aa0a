// The answers the generated routes list in the document beside their own success, each written
// once: those every route may give (403 under authorization, 503 and 504 when the database is
// unavailable or slow), a route by key's (400, 404) and a write's refusals (409, 412, 422, 428).
import type { RouteAuthorization } from './authorize.js';
import type { RouteContext, RowContext, WriteContext } from './route-context.js';
import { problemResponse, unprocessableResponse } from './answer-schemas.js';
import { ref } from './schemas.js';

type Responses = Record<number, unknown>;

/** The answers every generated route may give: 403 under authorization, 503, 504. */
export function routeResponses(authz: Pick<RouteAuthorization, 'responses'>): Responses {
  return { ...authz.responses, 503: problemResponse(503), 504: problemResponse(504) };
}

/** The answers of a route about rows by key (`/{pk}`, a bulk PATCH): 400 for a bad request, 404 for no such row, and every route's. */
export function byKeyResponses(context: RouteContext): Responses {
  return { 400: problemResponse(400), 404: problemResponse(404), ...routeResponses(context.authz) };
}

/**
 * The refusals of a write by key (PUT, PATCH, DELETE, a bulk PATCH), with the by-key answers: 409
 * for a constraint, 412 when it may be conditional (a version, or requireIfMatch) and 428 under
 * requireIfMatch; with a `body`, the 422 naming a missing reference.
 */
export function writeResponses(context: WriteContext, body: boolean): Responses {
  const { entity, requireIfMatch } = context;
  const version = entity.version;
  return {
    409: problemResponse(409),
    ...(body ? unprocessableResponse(entity) : {}),
    ...(version !== undefined || requireIfMatch ? { 412: problemResponse(412) } : {}),
    ...(requireIfMatch ? { 428: problemResponse(428) } : {}),
    ...byKeyResponses(context),
  };
}

/** One row answered by key: the entity's component, with its ETag header when the entity has a version. */
export function rowResponse(context: RowContext, description: string): Record<string, unknown> {
  return { description, ...context.rowHeaders, ...ref(context.entity.name) };
}
