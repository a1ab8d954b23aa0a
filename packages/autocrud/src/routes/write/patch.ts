// PATCH /{pk} : change some fields of a row (a JSON Merge Patch).
import type { RouteOptions } from 'fastify';
import { CrudOperations } from '../../operations.js';
import { MERGE_PATCH, requireJson } from '../body.js';
import { openapiText } from '../openapi-text.js';
import { documented, type WriteContext } from '../route-context.js';
import { patchName, ref } from '../schemas.js';
import { conditionalHeaders, rowWriteResponses, writeByKey } from './by-key.js';

function patchSchema(context: WriteContext): Record<string, unknown> {
  const { entity, authz, params } = context;
  return {
    summary: openapiText.patch.summary(entity),
    description: openapiText.patch.description,
    params,
    ...conditionalHeaders(context),
    consumes: ['application/json', MERGE_PATCH],
    body: ref(patchName(entity)),
    ...authz.schema(CrudOperations.Patch),
    response: rowWriteResponses(context),
  };
}

/**
 * The route options of `PATCH /{pk}`, relative to the group.
 *
 * @example
 * ```ts
 * if (allows(operations, CrudOperations.Patch)) routes.push(patchRoute(context));
 * ```
 */
export function patchRoute(context: WriteContext): RouteOptions {
  const { repository } = context;
  return {
    ...context.common,
    ...context.authz.guard(CrudOperations.Patch, 'patch'),
    method: 'PATCH',
    url: `{${context.entity.primaryKey}}`,
    preValidation: requireJson,
    schema: documented(patchSchema(context)),
    handler: writeByKey(context, (key, body, options) => repository.patch(key, body, options)),
  };
}
